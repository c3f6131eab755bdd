"""The settings of one member: flags > environment variables > YAML file > defaults.

The tuning knobs are those of the ``jet`` section of Hazelcast's cluster resource. A YAML file looks
like::

    cooperative_threads: 4
    flow_control_period_ms: 100
    edge_defaults:
      queue_size: 16384
      outbox_capacity: 8192
      packet_size_limit: 16384
      receive_window_multiplier: 3

Every other field (``port``, ``peers``, ...) may also be given at the top level of the file. A bad
value raises :class:`SettingsError` naming the key, where it came from and what was expected.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from jet.cluster.executions.control_settings import ControlSettings
from jet.cluster.links.auth import MEMBER_KEY_ENV, MEMBER_KEY_FILE_ENV, TlsConfig, load_cluster_token, load_member_key
from jet.cluster.links.heartbeat import DEFAULT_HEARTBEAT_INTERVAL_MS, DEFAULT_HEARTBEAT_TIMEOUT_MS
from jet.cluster.links.server_limits import DEFAULT_CLIENT_CALLS, DEFAULT_CLIENT_STREAMS
from jet.core.edge import (
    DEFAULT_OUTBOX_CAPACITY,
    DEFAULT_PACKET_SIZE_LIMIT_BYTES,
    DEFAULT_QUEUE_SIZE,
    DEFAULT_RECEIVE_WINDOW_MULTIPLIER,
)
from jet.execution.progress_log import DEFAULT_PROGRESS_LOG_INTERVAL_MS

EDGE_DEFAULTS_KEY = "edge_defaults"
LOOPBACK_HOST = "127.0.0.1"
EVERY_INTERFACE_HOST = "[::]"
POD_ENVIRONMENT = ("KUBERNETES_SERVICE_HOST", "POD_NAME")
"""Either tells that the member runs in a Kubernetes pod (the kubelet sets the first in every
pod, the operator the second)."""


class SettingsError(ValueError):
    """A setting with a bad value, or an unknown key in the settings file."""


@dataclass(frozen=True)
class EdgeDefaults:
    """Defaults of every edge that does not set its own ``EdgeConfig``."""

    queue_size: int = DEFAULT_QUEUE_SIZE
    outbox_capacity: int = DEFAULT_OUTBOX_CAPACITY
    packet_size_limit: int = DEFAULT_PACKET_SIZE_LIMIT_BYTES
    receive_window_multiplier: int = DEFAULT_RECEIVE_WINDOW_MULTIPLIER


@dataclass(frozen=True)
class MemberSettings:
    """Everything one member process is configured with."""

    cooperative_threads: int | None = None
    """Worker threads for cooperative tasklets; ``None`` lets the engine choose."""
    flow_control_period_ms: int = 100
    edge_defaults: EdgeDefaults = field(default_factory=EdgeDefaults)
    port: int = 5701
    http_port: int = 8080
    link_port: int = 0
    """The port other members' links connect to (:mod:`jet.cluster.links.tcp_links`); 0: any free port
    (members learn it from each other's ``OpenLink`` answer; a local cluster gives each its own)."""
    host: str | None = None
    """The address the gRPC and the HTTP server bind; ``None``: see :meth:`bind_host`."""
    member_index: int | None = None
    peers: str | None = None
    """``host:port,...``, a hostfile path, or ``dns:<template with {i}>`` (see :mod:`jet.cluster.links.peers`)."""
    replicas: int | None = None
    """The member count for a ``dns:`` peers template."""
    token: str | None = field(default=None, repr=False)
    member_key: str | None = field(default=None, repr=False)
    """The secret only member processes hold (else ``$JET_MEMBER_KEY_FILE``'s contents)."""
    max_client_streams: int = DEFAULT_CLIENT_STREAMS
    """Frame streams of clients (Spark tasks and drivers) served at once; more are refused."""
    max_client_calls: int = DEFAULT_CLIENT_CALLS
    """Control calls of clients served at once; more are refused (members' calls never are)."""
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_ca_file: str | None = None
    control: ControlSettings = field(default_factory=ControlSettings)
    """The bounds of the control plane's waits and the coordinator's job history."""
    progress_log_interval_ms: int = DEFAULT_PROGRESS_LOG_INTERVAL_MS
    """A streaming job's progress in the log: a line per vertex this often (0: never)."""
    snapshot_store: str | None = None
    """Where jobs with a processing guarantee keep their records and snapshots: a directory or an
    fsspec URL (``s3://bucket/prefix`` with the usual AWS variables); ``None``: no store, so such
    jobs are refused."""
    snapshot_store_endpoint: str | None = None
    """The endpoint of an S3-compatible store (else ``$AWS_ENDPOINT_URL``, else AWS)."""
    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    """How often a member sends a heartbeat on each member stream."""
    heartbeat_timeout_ms: int = DEFAULT_HEARTBEAT_TIMEOUT_MS
    """A member stream silent this long is lost, as a broken one is (more than the interval)."""

    @classmethod
    def load(cls, flags: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None,
             config_file: str | os.PathLike | None = None) -> "MemberSettings":
        """Merge ``flags`` (field name -> value; ``None`` means not given), the ``JET_*`` environment
        variables and the YAML ``config_file`` over the defaults, validating every value."""
        values: dict[str, Any] = {}
        if config_file is not None:
            values.update(_from_file(Path(config_file)))
        env = os.environ if environ is None else environ
        for spec in _SPECS.values():
            if spec.env in env and env[spec.env] != "":
                values[spec.name] = spec.parse(env[spec.env], f"environment variable {spec.env}")
        for name, value in (flags or {}).items():
            if name not in _SPECS:
                raise SettingsError(f"unknown flag setting {name!r}; known: {', '.join(_SPECS)}")
            if value is not None:
                values[name] = _SPECS[name].parse(value, f"flag --{name.replace('_', '-')}")
        edge = {name: values.pop(name) for name in list(values) if name in _EDGE_FIELDS}
        control = {name: values.pop(name) for name in list(values) if name in _CONTROL_FIELDS}
        return replace(cls(**values), edge_defaults=replace(EdgeDefaults(), **edge),
                       control=replace(ControlSettings(), **control))

    def cluster_token(self, environ: Mapping[str, str] | None = None) -> str:
        """The cluster token: this ``token``, else ``$JET_CLUSTER_TOKEN_FILE``'s contents (see
        :func:`jet.cluster.links.auth.load_cluster_token`); raises ``ClusterTokenError`` when there is none."""
        return load_cluster_token(self.token, environ)

    def has_member_key(self, environ: Mapping[str, str] | None = None) -> bool:
        """Whether a member key is configured (here, in ``$JET_MEMBER_KEY`` or ``$JET_MEMBER_KEY_FILE``)."""
        env = os.environ if environ is None else environ
        return bool(self.member_key or env.get(MEMBER_KEY_FILE_ENV) or env.get(MEMBER_KEY_ENV))

    def member_key_value(self, environ: Mapping[str, str] | None = None) -> str:
        """The member key: this ``member_key``, else ``$JET_MEMBER_KEY_FILE``'s contents (see
        :func:`jet.cluster.links.auth.load_member_key`); raises ``MemberKeyError`` when there is none."""
        return load_member_key(self.member_key, environ)

    def bind_host(self, environ: Mapping[str, str] | None = None) -> str:
        """The address to bind: ``host`` when set; else every interface inside a Kubernetes pod
        (where they are the pod's own: its IP, which probes, peers and scrapers use, and loopback,
        which ``kubectl port-forward`` uses), and loopback anywhere else."""
        if self.host is not None:
            return self.host
        env = os.environ if environ is None else environ
        return EVERY_INTERFACE_HOST if any(env.get(name) for name in POD_ENVIRONMENT) else LOOPBACK_HOST

    def tls_config(self) -> TlsConfig | None:
        """TLS when a certificate and key are set; ``None`` without them."""
        if not self.tls_cert_file and not self.tls_key_file:
            if self.tls_ca_file:
                raise SettingsError("tls_ca_file is set but tls_cert_file and tls_key_file are not")
            return None
        if not (self.tls_cert_file and self.tls_key_file):
            raise SettingsError("TLS needs both tls_cert_file and tls_key_file; only "
                                f"{'tls_cert_file' if self.tls_cert_file else 'tls_key_file'} is set")
        return TlsConfig(self.tls_cert_file, self.tls_key_file, self.tls_ca_file)


@dataclass(frozen=True)
class _Spec:
    name: str
    parse_value: Callable[[Any], Any]
    expected: str

    @property
    def env(self) -> str:
        return "JET_CLUSTER_TOKEN" if self.name == "token" else f"JET_{self.name.upper()}"

    def parse(self, raw: Any, source: str) -> Any:
        try:
            return self.parse_value(raw)
        except (TypeError, ValueError):
            raise SettingsError(f"{self.name} from {source}: expected {self.expected}, got {raw!r}") from None


def _int_at_least(minimum: int, maximum: int | None = None) -> Callable[[Any], int]:
    def parse(raw: Any) -> int:
        if isinstance(raw, bool) or isinstance(raw, float):
            raise TypeError(raw)
        value = int(raw.strip()) if isinstance(raw, str) else int(raw)
        if value < minimum or (maximum is not None and value > maximum):
            raise ValueError(raw)
        return value

    return parse


def _text(raw: Any) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise TypeError(raw)
    return raw.strip()


_POSITIVE = (_int_at_least(1), "an integer >= 1")
_PORT = (_int_at_least(1, 65535), "a port number 1..65535")
_TEXT = (_text, "a non-empty string")
_COUNT = (_int_at_least(0), "an integer >= 0")
_SPECS: dict[str, _Spec] = {name: _Spec(name, *parser) for name, parser in {
    "cooperative_threads": _POSITIVE,
    "flow_control_period_ms": _POSITIVE,
    "queue_size": _POSITIVE,
    "outbox_capacity": _POSITIVE,
    "packet_size_limit": _POSITIVE,
    "receive_window_multiplier": _POSITIVE,
    "port": _PORT,
    "http_port": _PORT,
    "link_port": (_int_at_least(0, 65535), "0 (any free port) or a port number 1..65535"),
    "host": _TEXT,
    "member_index": (_int_at_least(0), "an integer >= 0"),
    "peers": _TEXT,
    "replicas": _POSITIVE,
    "token": _TEXT,
    "member_key": _TEXT,
    "max_client_streams": _POSITIVE,
    "max_client_calls": _POSITIVE,
    "tls_cert_file": _TEXT,
    "tls_key_file": _TEXT,
    "tls_ca_file": _TEXT,
    "progress_log_interval_ms": _COUNT,
    "snapshot_store": _TEXT,
    "snapshot_store_endpoint": _TEXT,
    "heartbeat_interval_ms": _POSITIVE,
    "heartbeat_timeout_ms": _POSITIVE,
    **{name: _POSITIVE for name in ("init_timeout_ms", "control_timeout_ms", "cancel_grace_ms",
                                    "report_wait_ms", "report_retry_ms", "max_finished_jobs",
                                    "finished_job_ttl_s", "snapshot_timeout_ms", "member_rejoin_timeout_ms")},
    **{name: _COUNT for name in ("fault_drop_reports", "fault_unanswered_state_queries", "restart_delay_ms",
                                 "fault_fail_snapshot_phase1", "scale_up_delay_ms", "restart_max_delay_ms",
                                 "restart_backoff_reset_ms", "max_restarts", "max_finished_result_bytes",
                                 "fetched_result_ttl_s")},
}.items()}
_EDGE_FIELDS = {f.name for f in fields(EdgeDefaults)}
_CONTROL_FIELDS = {f.name for f in fields(ControlSettings)}


def _from_file(path: Path) -> dict[str, Any]:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SettingsError(f"settings file {str(path)!r} cannot be read: {e.strerror or e}") from e
    except yaml.YAMLError as e:
        raise SettingsError(f"settings file {str(path)!r} is not valid YAML: {e}") from e
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise SettingsError(f"settings file {str(path)!r}: expected a mapping at the top, got {document!r}")
    values: dict[str, Any] = {}
    for key, raw in document.items():
        if key == EDGE_DEFAULTS_KEY:
            if not isinstance(raw, dict):
                raise SettingsError(f"{key} in settings file {str(path)!r}: expected a mapping, got {raw!r}")
            for edge_key, edge_raw in raw.items():
                if edge_key not in _EDGE_FIELDS:
                    raise SettingsError(f"unknown key {key}.{edge_key} in settings file {str(path)!r}; "
                                        f"known: {', '.join(sorted(_EDGE_FIELDS))}")
                values[edge_key] = _SPECS[edge_key].parse(edge_raw, f"settings file {str(path)!r} ({key}.{edge_key})")
        elif key in _SPECS and key not in _EDGE_FIELDS:
            if raw is not None:
                values[key] = _SPECS[key].parse(raw, f"settings file {str(path)!r}")
        else:
            known = [k for k in _SPECS if k not in _EDGE_FIELDS] + [EDGE_DEFAULTS_KEY]
            raise SettingsError(f"unknown key {key!r} in settings file {str(path)!r}; known: {', '.join(known)}")
    return values
