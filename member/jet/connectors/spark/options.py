"""The options of the ``jet`` Spark format: which job, which vertex, which members, which token.

Every option is checked on the Spark driver, before any task runs, with an error naming it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from jet.cluster.links.auth import TlsConfig
from jet.cluster.links.peers import parse_address
from jet.contract import ENV_TLS_CA_FILE

DEFAULT_READY_TIMEOUT_S = 120.0
DEFAULT_SEND_TIMEOUT_S = 300.0
DEFAULT_CHUNK_ROWS = 16384
"""Rows per frame of a row source: fewer, larger frames cost the writer tasks and the members
less per row (the row benchmark's first run 5.6-5.8 s against 5.9-6.4 s at 4,096)."""
MAX_FRAME_BYTES = 4 * 1024 * 1024
"""Bytes per frame, about, whatever its row count: a writer sends a frame whole once flow control
lets it send, so a member may hold its receive window plus one frame per writer (rows of 1 KB
get frames of 4,096 rows)."""
COLUMNAR_CHUNK_ROWS = 65536
"""Rows per frame for a source whose batches a ``map_batches`` stage takes whole: each frame
becomes one batch (``jet.core.processors.batches.COALESCE_ROWS``, the most that stage joins),
and one call of the stage's function (a vectorised group-by costs about the same per call at
4,096 rows as at 65,536)."""
TLS_CA_FILE_ENV = ENV_TLS_CA_FILE


class JetOptionError(ValueError):
    """A missing or bad option of the ``jet`` Spark format."""


@dataclass(frozen=True)
class JetOptions:
    """The parsed options of one ``jet`` read or write.

    - ``job``: the job id (the Context.job_id of the job's processors);
    - ``vertex``: the name of the job's Spark source (write) or sink (read) vertex;
    - ``members``: ``host:port,host:port,...`` of the members, in member-index order;
    - ``token`` or ``token_file``: the cluster token;
    - ``ready_timeout``: seconds to wait for the job's vertex to be running (default 120);
    - ``send_timeout``: seconds a writer may stay blocked by flow control (default 300);
    - ``chunk_rows``: rows per frame, Spark's smaller batches joined (default 16384; the drivers
      use 65536 for a source whose batches a ``map_batches`` stage takes whole);
    - ``row_type`` (write): ``tuple`` (default) or ``dict``: how rows become items;
    - ``tls_ca_file``: the CA certificate (PEM) to verify the members' TLS certificates with
      (default ``$JET_TLS_CA_FILE``); without it the links are plain text.
    """

    job: str
    vertex: str
    members: tuple[str, ...]
    token: str
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S
    send_timeout_s: float = DEFAULT_SEND_TIMEOUT_S
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    row_type: str = "tuple"
    driver_reports_failure: bool = False
    """True when a ``jet spark-source`` driver reports a failed write itself (with Spark's
    message), so the writer's abort() stays silent."""
    tls_ca_file: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "JetOptions":
        """Validate Spark's (case-insensitive) option map; :class:`JetOptionError` names the option."""
        opts = {str(k).lower(): v for k, v in dict(options).items()}
        for name in ("job", "vertex", "members"):
            if not str(opts.get(name) or "").strip():
                raise JetOptionError(f"the jet format needs option {name!r} "
                                     f"({_HELP[name]}); got {sorted(opts) or 'no options'}")
        members = tuple(m.strip() for m in str(opts["members"]).split(",") if m.strip())
        for member in members:
            try:
                parse_address(member, "option 'members'")
            except ValueError as error:
                raise JetOptionError(str(error)) from None
        return cls(str(opts["job"]).strip(), str(opts["vertex"]).strip(), members, _token(opts),
                   _number(opts, "ready_timeout", DEFAULT_READY_TIMEOUT_S),
                   _number(opts, "send_timeout", DEFAULT_SEND_TIMEOUT_S),
                   int(_number(opts, "chunk_rows", DEFAULT_CHUNK_ROWS)),
                   _choice(opts, "row_type", ("tuple", "dict")),
                   _choice(opts, "driver_reports_failure", ("false", "true")) == "true",
                   _tls_ca_file(opts))

    def as_spark_options(self) -> dict[str, str]:
        """These options as a Spark option map (the inverse of :meth:`parse`)."""
        return {"job": self.job, "vertex": self.vertex, "members": ",".join(self.members),
                "token": self.token, "ready_timeout": str(self.ready_timeout_s),
                "send_timeout": str(self.send_timeout_s), "chunk_rows": str(self.chunk_rows),
                "row_type": self.row_type,
                "driver_reports_failure": str(self.driver_reports_failure).lower(),
                **({"tls_ca_file": self.tls_ca_file} if self.tls_ca_file else {})}

    def tls(self) -> TlsConfig | None:
        """TLS for the links to the members, or None for plain text."""
        return client_tls(self.tls_ca_file) if self.tls_ca_file else None


def default_tls_ca_file() -> str | None:
    """``$JET_TLS_CA_FILE``: where the operator puts the members' CA in Spark drivers and executors."""
    return os.environ.get(TLS_CA_FILE_ENV) or None


def client_tls(ca_file: str) -> TlsConfig:
    """TLS for a side that dials members and presents no certificate of its own."""
    # A dialling side reads only ca_file (TlsConfig.channel_credentials); it has no key.
    return TlsConfig(cert_file=ca_file, key_file="", ca_file=ca_file)


_HELP = {"job": "the id of the running job", "vertex": "the name of the job's Spark stage vertex",
         "members": "host:port,... of the members"}


def _token(opts: dict) -> str:
    if opts.get("token"):
        return str(opts["token"]).strip()
    path = opts.get("token_file")
    if path:
        try:
            token = Path(path).read_text(encoding="utf-8").strip()
        except OSError as error:
            raise JetOptionError(f"option 'token_file': cannot read {path!r}: {error.strerror}") from None
        if token:
            return token
        raise JetOptionError(f"option 'token_file': {path!r} is empty")
    raise JetOptionError("the jet format needs option 'token' or 'token_file' (the cluster token)")


def _tls_ca_file(opts: dict) -> str | None:
    path = opts.get("tls_ca_file") or default_tls_ca_file()
    if not path:
        return None
    source = "option 'tls_ca_file'" if opts.get("tls_ca_file") else f"${TLS_CA_FILE_ENV}"
    if not Path(path).is_file():
        raise JetOptionError(f"{source}: the CA certificate file {path!r} does not exist")
    return str(path)


def _number(opts: dict, name: str, default: float) -> float:
    raw = opts.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise JetOptionError(f"option {name!r} must be a positive number, got {raw!r}") from None
    if value <= 0:
        raise JetOptionError(f"option {name!r} must be a positive number, got {raw!r}")
    return value


def _choice(opts: dict, name: str, choices: tuple[str, ...]) -> str:
    value = str(opts.get(name) or choices[0]).lower()
    if value not in choices:
        raise JetOptionError(f"option {name!r} must be one of {', '.join(choices)}, got {opts[name]!r}")
    return value
