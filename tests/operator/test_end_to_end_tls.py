"""End to end with TLS on (the default): the member pods, run as real processes by the kubelet
stand-in, serve the certificate the operator issued; a client holding only the job's CA Secret
verifies it under a member's DNS name; and a job whose aggregation crosses members completes
with the right result (members verify each other by name, so a wrong certificate stops it).

Needs network namespaces: the loopback fallback dials members by bare IP, which no
certificate issued for pod DNS names can match.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from jet_operator import constants
from tests.netns import netns_support
from tests.operator.emulator import Emulator
from tests.operator.fakes import get
from tests.operator.kubelet import Kubelet
from tests.operator.test_end_to_end import kubelet, member_code, read_jsonl, start_operator_for  # noqa: F401
from tests.operator.test_operator import COLLECTION, delete_jetjob, jetjob, wait_phase

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(90),
    pytest.mark.skipif(netns_support() is not None or os.environ.get("JET_E2E_LOOPBACK") == "1",
                       reason=f"needs network namespaces ({netns_support() or 'JET_E2E_LOOPBACK=1'})"),
]


def secret_file(k8s: Emulator, secret: str, key: str) -> bytes:
    return base64.b64decode(get(k8s, "v1/secrets", secret)["data"][key])


def served_certificate(address: str, hostname: str, ca_pem: bytes) -> x509.Certificate:
    """The certificate a member serves on its gRPC port, verified with ``ca_pem`` for ``hostname``."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    context.set_alpn_protocols(["h2"])
    with socket.create_connection((address, constants.MEMBER_PORT), timeout=10) as connection:
        with context.wrap_socket(connection, server_hostname=hostname) as tls:
            return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))


async def test_members_speak_tls_with_the_issued_certificate(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gate, out = tmp_path / "go", tmp_path / "out"
    code = member_code(f"""
        import os
        import time

        from jet import AggregateOperations, Pipeline, Sinks, Sources


        def after_the_gate(n):
            deadline = time.monotonic() + 60
            while not os.path.exists({str(gate)!r}) and time.monotonic() < deadline:
                time.sleep(0.05)
            return n


        def pipeline():
            p = Pipeline.create()
            (p.read_from(Sources.items(range(1000)))
              .map(after_the_gate)
              .grouping_key(lambda n: n % 10)
              .aggregate(AggregateOperations.counting())
              .write_to(Sinks.jsonl({str(out)!r})))
            return p
    """)
    with start_operator_for(kubelet, monkeypatch, "tlswc"):
        response = await k8s.post(COLLECTION, json=jetjob("tlswc", pipeline={"code": code}))
        assert response.status in (200, 201), await response.text()
        await wait_phase(k8s, "Running", "tlswc", timeout=45)

        ca_pem = secret_file(k8s, "tlswc-ca", "ca.crt")
        issued = x509.load_pem_x509_certificate(secret_file(k8s, "tlswc-tls", "tls.crt"))
        for index in (0, 1):
            served = await asyncio.to_thread(
                served_certificate, kubelet.address("tlswc-member", index),
                f"tlswc-member-{index}.tlswc-member.default.svc.cluster.local", ca_pem)
            assert served.public_bytes(serialization.Encoding.DER) == issued.public_bytes(
                serialization.Encoding.DER)

        gate.touch()
        await wait_phase(k8s, "Completed", "tlswc", timeout=30)
        assert sorted(read_jsonl(out)) == [[key, 100] for key in range(10)], kubelet.logs()
        await delete_jetjob(k8s, "tlswc")
