"""Who may talk to a member: the cluster token, the member key, the auth interceptor and TLS.

Two secrets per cluster. Everyone presents the **cluster token** (metadata ``x-jet-token``); alone it
makes the caller a *client* (a user's client, a Spark driver or executor), which presents a
negative index of its own choosing (metadata ``x-jet-member``) to tell its streams apart. A member
process also holds the **member key**: claiming member index ``i >= 0`` takes the proof
``x-jet-member-proof = hex HMAC-SHA256(member key, "jet-member:<i>")`` (:func:`member_proof`).
:class:`ClusterAuthInterceptor` refuses a call with a missing or wrong token, or a member claim
without a valid proof, with ``UNAUTHENTICATED`` before any handler runs, so not one byte of an
unauthenticated call is ever unpickled; what an authenticated caller may do is decided by its
:class:`Caller` role. Without TLS both travel in clear text: configure TLS (:class:`TlsConfig`)
wherever the network is not trusted.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import logging
import os
import re
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import grpc

from jet.contract import ENV_CLUSTER_TOKEN, ENV_CLUSTER_TOKEN_FILE, ENV_MEMBER_KEY, ENV_MEMBER_KEY_FILE

TOKEN_ENV = ENV_CLUSTER_TOKEN
TOKEN_FILE_ENV = ENV_CLUSTER_TOKEN_FILE
MEMBER_KEY_ENV = ENV_MEMBER_KEY
MEMBER_KEY_FILE_ENV = ENV_MEMBER_KEY_FILE
TOKEN_METADATA_KEY = "x-jet-token"
MEMBER_METADATA_KEY = "x-jet-member"
MEMBER_PROOF_METADATA_KEY = "x-jet-member-proof"

logger = logging.getLogger(__name__)
_INDEX = re.compile(r"-?[0-9]{1,18}")


class CredentialsError(RuntimeError):
    """A secret (the cluster token or the member key) is not configured or cannot be read."""


class ClusterTokenError(CredentialsError):
    """No usable cluster token was configured."""


class MemberKeyError(CredentialsError):
    """No usable member key was configured."""


def load_cluster_token(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The cluster token: ``explicit`` if given, else ``$JET_CLUSTER_TOKEN``, else the contents of the
    file named by ``$JET_CLUSTER_TOKEN_FILE`` (e.g. a Kubernetes Secret mount), stripped of
    surrounding whitespace. Raises :class:`ClusterTokenError` saying what to set when there is none.
    """
    return _load_secret(explicit, environ, TOKEN_ENV, TOKEN_FILE_ENV, "cluster token", ClusterTokenError)


def load_member_key(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The member key, held by member processes only: ``explicit``, else ``$JET_MEMBER_KEY``, else
    the contents of the file named by ``$JET_MEMBER_KEY_FILE``. Raises :class:`MemberKeyError`."""
    return _load_secret(explicit, environ, MEMBER_KEY_ENV, MEMBER_KEY_FILE_ENV, "member key", MemberKeyError)


def _load_secret(explicit: str | None, environ: Mapping[str, str] | None, value_env: str, file_env: str,
                 what: str, error: type[CredentialsError]) -> str:
    env = os.environ if environ is None else environ
    if explicit is not None:
        return _non_empty(explicit, f"the explicit {what}", what, error)
    if env.get(value_env):
        return _non_empty(env[value_env], f"${value_env}", what, error)
    path = env.get(file_env)
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise error(f"cannot read the {what} file {path!r} named by ${file_env}: {e.strerror or e}") from e
        return _non_empty(text, f"the file {path!r} named by ${file_env}", what, error)
    raise error(f"no {what}: set ${value_env} to the {what}, or ${file_env} to the path of a file "
                f"holding it (e.g. a mounted Kubernetes Secret)")


def _non_empty(secret: str, source: str, what: str, error: type[CredentialsError]) -> str:
    secret = secret.strip()
    if not secret:
        raise error(f"the {what} from {source} is empty")
    return secret


def member_proof(member_key: str, member_index: int) -> str:
    """What member ``member_index`` presents to prove it holds the member key."""
    return hmac.new(member_key.encode("utf-8"), f"jet-member:{member_index}".encode("utf-8"),
                    hashlib.sha256).hexdigest()


def job_status_credential(token: str) -> str:
    """A read-only credential for ``GET /job``: hex HMAC-SHA256(cluster token, ``jet-job-status``).

    The operator polls ``/job`` over plain HTTP; presenting this instead of the token means a
    listener on the pod network learns nothing that opens the gRPC port.
    """
    return hmac.new(token.encode("utf-8"), b"jet-job-status", hashlib.sha256).hexdigest()


def call_metadata(token: str, caller_index: int, member_key: str | None = None) -> tuple[tuple[str, str], ...]:
    """The metadata every call of ``caller_index`` carries: a member (index >= 0) adds its proof
    when it has the member key; a client (negative index) presents the token only."""
    metadata = ((TOKEN_METADATA_KEY, token), (MEMBER_METADATA_KEY, str(caller_index)))
    if member_key is not None and caller_index >= 0:
        metadata += ((MEMBER_PROOF_METADATA_KEY, member_proof(member_key, caller_index)),)
    return metadata


class Role(enum.Enum):
    """What an authenticated caller is."""

    COORDINATOR = "coordinator"
    """Member 0: it alone drives executions (init, start, cancel, complete)."""
    MEMBER = "member"
    """Any other member process (it proved it holds the member key)."""
    CLIENT = "client"
    """A holder of the cluster token only: user clients, Spark drivers and executors."""


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: a member's index, or a client's own negative index."""

    index: int

    @property
    def role(self) -> Role:
        if self.index < 0:
            return Role.CLIENT
        return Role.COORDINATOR if self.index == 0 else Role.MEMBER

    @property
    def is_member(self) -> bool:
        return self.index >= 0

    def __str__(self) -> str:
        if self.index < 0:
            return f"a client (index {self.index})"
        return "member 0 (the coordinator)" if self.index == 0 else f"member {self.index}"


ANYONE = frozenset(Role)
MEMBERS = frozenset({Role.COORDINATOR, Role.MEMBER})
COORDINATOR_ONLY = frozenset({Role.COORDINATOR})


def _metadata_value(metadata, key: str) -> str | None:
    for item in metadata or ():
        if item.key == key:
            return item.value if isinstance(item.value, str) else item.value.decode("utf-8", "replace")
    return None


def caller_of(context: grpc.ServicerContext) -> Caller:
    """The caller of an already authenticated call (the interceptor checked its claim)."""
    return Caller(int(_metadata_value(context.invocation_metadata(), MEMBER_METADATA_KEY)))


def _rejecting_handler(code: grpc.StatusCode, details: str, streaming: bool) -> grpc.RpcMethodHandler:
    def reject(_request, context: grpc.ServicerContext):
        context.abort(code, details)

    if streaming:
        return grpc.stream_stream_rpc_method_handler(reject)
    return grpc.unary_unary_rpc_method_handler(reject)


class ClusterAuthInterceptor(grpc.ServerInterceptor):
    """Refuses every call without the cluster token, without a caller index, or claiming a member
    index without that member's proof (or outside ``0..member_count-1`` when the count is known).

    Runs before the method handler is even looked up, so a refused call's messages are never read
    by our code. ``member_key=None`` refuses every member claim (a server for clients only).
    ``is_streaming(method)`` tells which kind of rejecting handler to return.
    """

    def __init__(self, token: str, is_streaming: Callable[[str], bool], member_key: str | None = None,
                 member_count: int | None = None) -> None:
        self._token = token.encode("utf-8")
        self._is_streaming = is_streaming
        self._member_key = member_key
        self._member_count = member_count
        self._proofs: dict[int, bytes] = {}
        """Member index -> its expected proof: an HMAC per call was a tenth of a member's
        control-call handling."""

    def intercept_service(self, continuation, handler_call_details):
        metadata = handler_call_details.invocation_metadata
        method = handler_call_details.method
        refusal = self._refusal(metadata)
        if refusal is None:
            return continuation(handler_call_details)
        logger.warning("refused %s: %s", method, refusal)
        return _rejecting_handler(grpc.StatusCode.UNAUTHENTICATED, refusal, self._is_streaming(method))

    def _refusal(self, metadata) -> str | None:
        """Why the call is refused, or None when it is authenticated."""
        presented = _metadata_value(metadata, TOKEN_METADATA_KEY)
        if presented is None or not hmac.compare_digest(presented.encode("utf-8"), self._token):
            return f"{'missing' if presented is None else 'wrong'} cluster token"
        member = _metadata_value(metadata, MEMBER_METADATA_KEY)
        if member is None or not _INDEX.fullmatch(member):
            return f"metadata {MEMBER_METADATA_KEY} must be a member index (a client's is negative), got {member!r}"
        index = int(member)
        if index < 0:
            return None
        if self._member_count is not None and index >= self._member_count:
            return f"claims member {index}, but the cluster has members 0..{self._member_count - 1}"
        proof = _metadata_value(metadata, MEMBER_PROOF_METADATA_KEY)
        if proof is None or self._member_key is None or not hmac.compare_digest(
                proof.encode("utf-8"), self._expected_proof(index)):
            return (f"claims member {index} with {'no' if proof is None else 'a wrong'} member proof "
                    f"(metadata {MEMBER_PROOF_METADATA_KEY})")
        return None

    def _expected_proof(self, index: int) -> bytes:
        expected = self._proofs.get(index)
        if expected is None:
            expected = member_proof(self._member_key, index).encode("utf-8")
            if self._member_count is not None:  # indexes are bounded: one entry per member at most
                self._proofs[index] = expected
        return expected


@dataclass(frozen=True)
class TlsConfig:
    """PEM files for TLS between members.

    ``cert_file``/``key_file``: this member's certificate chain and private key (server side).
    ``ca_file``: the CA that signed the members' certificates (client side); defaults to
    ``cert_file`` itself, which suits one self-signed certificate shared by the cluster.
    ``server_name``: the name to verify in the peer's certificate when it differs from the host
    name dialled (e.g. one certificate for ``*.wc-members.default.svc.cluster.local``).
    """

    cert_file: str
    key_file: str
    ca_file: str | None = None
    server_name: str | None = None

    def server_credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(_read(self.key_file, "key_file"), _read(self.cert_file, "cert_file"))])

    def channel_credentials(self) -> grpc.ChannelCredentials:
        ca = _read(self.ca_file, "ca_file") if self.ca_file else _read(self.cert_file, "cert_file")
        return grpc.ssl_channel_credentials(root_certificates=ca)

    def channel_options(self) -> list[tuple[str, str]]:
        return [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []

    def server_ssl_context(self) -> ssl.SSLContext:
        """The same certificate for the members' links (:mod:`jet.cluster.links.tcp_links`)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as e:
            raise ValueError(f"TLS cert_file {self.cert_file!r} and key_file {self.key_file!r} cannot be "
                             f"loaded: {getattr(e, 'strerror', None) or e}") from e
        return context

    def client_ssl_context(self) -> ssl.SSLContext:
        """Verifies a member's link against ``ca_file`` (or ``cert_file``), by the host name dialled
        or ``server_name``."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ca = self.ca_file or self.cert_file
        try:
            context.load_verify_locations(cafile=ca)
        except (OSError, ssl.SSLError) as e:
            raise ValueError(f"TLS ca_file {ca!r} cannot be loaded: {getattr(e, 'strerror', None) or e}") from e
        return context


def _read(path: str, field: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"TLS {field} {path!r} cannot be read: {e.strerror or e}") from e


def write_self_signed_tls(directory: str | Path, dns_names: tuple[str, ...] = ("localhost",),
                          ip_addresses: tuple[str, ...] = ("127.0.0.1",), valid_days: int = 1) -> TlsConfig:
    """Write a self-signed certificate and key (``tls.crt``, ``tls.key``) valid for the given names,
    for a local cluster, tests and benchmarks. Needs the ``cryptography`` package."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jet-member")])
    now = datetime.datetime.now(datetime.timezone.utc)
    alternative_names = ([x509.DNSName(n) for n in dns_names]
                         + [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=valid_days))
            .add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = Path(directory) / "tls.crt", Path(directory) / "tls.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return TlsConfig(str(cert_file), str(key_file))
