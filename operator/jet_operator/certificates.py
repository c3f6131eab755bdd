"""The members' TLS material: a CA and one member certificate it signs (with ``cryptography``).

The certificate's names cover every member of the job behind its headless Service, however
many there are (wildcards), so it is issued once per JetJob and survives scaling. The CA key
signs that one certificate and is then dropped: nothing the operator stores can issue another.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from jet_operator import constants, naming

# No rotation yet: the certificates outlive any job (delete the Secret and restart to renew).
CA_VALIDITY_DAYS = 3650
MEMBER_CERT_VALIDITY_DAYS = 3650
# Tolerated clock skew between the operator and the members.
NOT_BEFORE_SKEW = datetime.timedelta(minutes=5)
LOOPBACK_NAMES = ("localhost",)
LOOPBACK_ADDRESSES = ("127.0.0.1", "::1")


@dataclass(frozen=True)
class MemberTls:
    """PEM texts of the CA certificate, the member certificate and the member's private key."""

    ca_cert_pem: str
    cert_pem: str
    key_pem: str


def member_dns_names(job: str, namespace: str, replicas: int) -> list[str]:
    """Names a member may be dialled by: each pod and the Service, short and with the cluster
    domain, and the wildcards that cover pods added later by scaling."""
    service = naming.service_name(job)
    domains = [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.{constants.CLUSTER_DOMAIN}"]
    pods = [f"{naming.statefulset_name(job)}-{index}" for index in range(replicas)]
    return [
        *(f"{pod}.{domain}" for domain in domains for pod in pods),
        *(f"*.{domain}" for domain in domains),
        service, f"{service}.{namespace}", *domains,
        *LOOPBACK_NAMES,
    ]


def issue_member_tls(job: str, namespace: str, replicas: int,
                     now: datetime.datetime | None = None) -> MemberTls:
    """A new CA and a member certificate for ``job``'s members, signed by it (P-256 keys)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, constants.APP_NAME),
        x509.NameAttribute(NameOID.COMMON_NAME, f"{constants.APP_NAME} CA {namespace}/{job}"),
    ])
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key(), now, CA_VALIDITY_DAYS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    member_key = ec.generate_private_key(ec.SECP256R1())
    member_name = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, constants.APP_NAME),
        x509.NameAttribute(NameOID.COMMON_NAME, f"{naming.service_name(job)}.{namespace}.svc"),
    ])
    names: list[x509.GeneralName] = [
        *(x509.DNSName(name) for name in member_dns_names(job, namespace, replicas)),
        *(x509.IPAddress(ipaddress.ip_address(address)) for address in LOOPBACK_ADDRESSES),
    ]
    member_cert = (
        _builder(member_name, ca_name, member_key.public_key(), now, MEMBER_CERT_VALIDITY_DAYS)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        # Members are servers to their peers and clients of them.
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                              ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return MemberTls(
        ca_cert_pem=_cert_pem(ca_cert),
        cert_pem=_cert_pem(member_cert),
        key_pem=member_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()).decode("ascii"),
    )


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey,
             now: datetime.datetime, valid_days: int) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - NOT_BEFORE_SKEW)
        .not_valid_after(now + datetime.timedelta(days=valid_days))
    )


def _key_usage(cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=cert_sign, crl_sign=cert_sign,
        encipher_only=False, decipher_only=False,
    )


def _cert_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
