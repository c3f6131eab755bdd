"""Who may talk to a member: the cluster token, the auth interceptor and TLS credentials.

Every gRPC call between members carries the per-cluster token (metadata ``x-jet-token``) and the
caller's member index (``x-jet-member``). :class:`TokenAuthInterceptor` rejects a call without the
right token with ``UNAUTHENTICATED`` before any handler runs, so not one byte of an unauthenticated
call is ever unpickled. Without TLS the token travels in clear text: configure TLS (:class:`TlsConfig`)
wherever the network is not trusted.
"""

from __future__ import annotations

import hmac
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import grpc

TOKEN_ENV = "JET_CLUSTER_TOKEN"
TOKEN_FILE_ENV = "JET_CLUSTER_TOKEN_FILE"
TOKEN_METADATA_KEY = "x-jet-token"
MEMBER_METADATA_KEY = "x-jet-member"

logger = logging.getLogger(__name__)


class ClusterTokenError(RuntimeError):
    """No usable cluster token was configured."""


def load_cluster_token(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The cluster token: ``explicit`` if given, else ``$JET_CLUSTER_TOKEN``, else the contents of the
    file named by ``$JET_CLUSTER_TOKEN_FILE`` (e.g. a Kubernetes Secret mount), stripped of
    surrounding whitespace. Raises :class:`ClusterTokenError` saying what to set when there is none.
    """
    env = os.environ if environ is None else environ
    if explicit is not None:
        return _non_empty(explicit, "the explicit token")
    if env.get(TOKEN_ENV):
        return _non_empty(env[TOKEN_ENV], f"${TOKEN_ENV}")
    path = env.get(TOKEN_FILE_ENV)
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise ClusterTokenError(f"cannot read the cluster token file {path!r} named by "
                                    f"${TOKEN_FILE_ENV}: {e.strerror or e}") from e
        return _non_empty(text, f"the file {path!r} named by ${TOKEN_FILE_ENV}")
    raise ClusterTokenError(f"no cluster token: set ${TOKEN_ENV} to the token, or ${TOKEN_FILE_ENV} "
                            f"to the path of a file holding it (e.g. a mounted Kubernetes Secret)")


def _non_empty(token: str, source: str) -> str:
    token = token.strip()
    if not token:
        raise ClusterTokenError(f"the cluster token from {source} is empty")
    return token


def call_metadata(token: str, member_index: int) -> tuple[tuple[str, str], ...]:
    """The metadata every call of member ``member_index`` carries."""
    return ((TOKEN_METADATA_KEY, token), (MEMBER_METADATA_KEY, str(member_index)))


def _metadata_value(metadata, key: str) -> str | None:
    for item in metadata or ():
        if item.key == key:
            return item.value if isinstance(item.value, str) else item.value.decode("utf-8", "replace")
    return None


def caller_member_index(context: grpc.ServicerContext) -> int:
    """The member index of an (already authenticated) caller, from its metadata."""
    value = _metadata_value(context.invocation_metadata(), MEMBER_METADATA_KEY)
    return int(value)  # validated by the interceptor


def _rejecting_handler(code: grpc.StatusCode, details: str, streaming: bool) -> grpc.RpcMethodHandler:
    def reject(_request, context: grpc.ServicerContext):
        context.abort(code, details)

    if streaming:
        return grpc.stream_stream_rpc_method_handler(reject)
    return grpc.unary_unary_rpc_method_handler(reject)


class TokenAuthInterceptor(grpc.ServerInterceptor):
    """Rejects every call without the cluster token or without a valid member index.

    Runs before the method handler is even looked up, so a rejected call's messages are never read
    by our code. ``is_streaming(method)`` tells which kind of rejecting handler to return.
    """

    def __init__(self, token: str, is_streaming: Callable[[str], bool]) -> None:
        self._token = token.encode("utf-8")
        self._is_streaming = is_streaming

    def intercept_service(self, continuation, handler_call_details):
        metadata = handler_call_details.invocation_metadata
        method = handler_call_details.method
        presented = _metadata_value(metadata, TOKEN_METADATA_KEY)
        if presented is None or not hmac.compare_digest(presented.encode("utf-8"), self._token):
            logger.warning("rejected %s: %s cluster token", method, "missing" if presented is None else "wrong")
            return _rejecting_handler(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong cluster token",
                                      self._is_streaming(method))
        member = _metadata_value(metadata, MEMBER_METADATA_KEY)
        if member is None or not member.lstrip("-").isdigit():  # negative: a Spark task or client
            return _rejecting_handler(grpc.StatusCode.UNAUTHENTICATED,
                                      f"metadata {MEMBER_METADATA_KEY} must be a member index, got {member!r}",
                                      self._is_streaming(method))
        return continuation(handler_call_details)


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
