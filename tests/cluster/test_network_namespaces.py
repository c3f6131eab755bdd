"""Two members, each in its own network namespace with its own IP and pod DNS name (as on Kubernetes).

Needs root (``ip netns add``); skipped with the reason otherwise. Everything created here (namespaces,
veth pair ends, the bridge, ``/etc/netns/<ns>``) is removed in a ``finally`` block.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.cluster.cluster_support import deliveries, wait_until
from tests.cluster.test_member_process import MEMBER_ENV, http_get

DNS = "job-member-{i}.job-members.default.svc.cluster.local"
PORT, HTTP_PORT = 5701, 8080


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=10)


def _free_subnet() -> str:
    """A 10.231.X.0/24 subnet no route on this host uses yet."""
    routes = ip("route").stdout
    for third in [100 + os.getpid() % 100] + list(range(100, 200)):
        prefix = f"10.231.{third}."
        if prefix not in routes:
            return prefix
    pytest.skip("no free 10.231.X.0/24 subnet for the test namespaces")


@pytest.fixture
def namespaces():
    if shutil.which("ip") is None:
        pytest.skip("the ip command (iproute2) is not installed")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root (ip netns add)")
    tag = f"{os.getpid() % 100000}"
    names = [f"jetm{i}-{tag}" for i in range(2)]
    bridge, created_links, created = f"jbr{tag}", [], []
    try:
        probe = ip("netns", "add", names[0], check=False)
        if probe.returncode != 0:
            pytest.skip(f"ip netns add does not work here: {probe.stderr.strip()}")
        created.append(names[0])
        ip("netns", "add", names[1])
        created.append(names[1])
        prefix = _free_subnet()
        addresses = [f"{prefix}{10 + i}" for i in range(2)]
        ip("link", "add", bridge, "type", "bridge")
        created_links.append(bridge)
        ip("addr", "add", f"{prefix}1/24", "dev", bridge)
        ip("link", "set", bridge, "up")
        hosts = "127.0.0.1 localhost\n" + "".join(f"{a} {DNS.format(i=i)}\n" for i, a in enumerate(addresses))
        for i, (name, address) in enumerate(zip(names, addresses)):
            veth = f"jv{i}-{tag}"
            ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
            created_links.append(veth)
            ip("link", "set", veth, "master", bridge, "up")
            ip("-n", name, "addr", "add", f"{address}/24", "dev", "eth0")
            ip("-n", name, "link", "set", "eth0", "up")
            ip("-n", name, "link", "set", "lo", "up")
            os.makedirs(f"/etc/netns/{name}", exist_ok=True)
            with open(f"/etc/netns/{name}/hosts", "w") as f:
                f.write(hosts)
        yield names, addresses
    finally:
        for link in reversed(created_links):
            ip("link", "del", link, check=False)
        for name in created:
            ip("netns", "del", name, check=False)
            shutil.rmtree(f"/etc/netns/{name}", ignore_errors=True)


def test_two_members_in_their_own_network_namespaces_run_a_job(namespaces, tmp_path):
    names, addresses = namespaces
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    job_file = tmp_path / "job.py"
    job_file.write_text(textwrap.dedent(f"""
        from jet.core import DAG, Edge
        from jet.core.functions import whole_item
        from jet.core.processors import items_source_p
        from tests.cluster.cluster_support import json_sink

        dag = DAG()
        source = dag.new_vertex("source", items_source_p(list(range(1000))), 1)
        sink = dag.new_vertex("sink", json_sink({str(out_dir)!r}), 1)
        dag.edge(Edge.between(source, sink).partitioned(whole_item).distributed())
    """))
    members, logs = [], []
    try:
        for i, name in enumerate(names):
            log = open(tmp_path / f"member-{i}.log", "wb")
            logs.append(log)
            command = ["ip", "netns", "exec", name, sys.executable, "-m", "jet.cli", "member",
                       "--port", str(PORT), "--http-port", str(HTTP_PORT),
                       "--peers", f"dns:{DNS}:{PORT}", "--replicas", "2"]
            if i == 0:
                command += ["--pipeline", str(job_file)]
            env = {**MEMBER_ENV, "POD_NAME": f"job-member-{i}", "JET_CLUSTER_TOKEN": "netns-token"}
            members.append(subprocess.Popen(command, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL))
        wait_until(lambda: http_get(HTTP_PORT, "/healthz", addresses[1])[0] == 200, 30,
                   "member 1's /healthz over the bridge")
        wait_until(lambda: json.loads(http_get(HTTP_PORT, "/job", addresses[0])[1] or "{}").get("status")
                   in ("COMPLETED", "FAILED"), 60, "the job to end on member 0's /job")
        info = json.loads(http_get(HTTP_PORT, "/job", addresses[0])[1])
        assert info["status"] == "COMPLETED", info["message"]
        got = deliveries(out_dir, "sink")
        assert set(got) == {(0, 0), (1, 0)} and all(got.values())
        assert sorted(x for items in got.values() for x in items) == list(range(1000))
        log_1 = (tmp_path / "member-1.log").read_text()
        assert "member 1 of 2" in log_1 and DNS.format(i=0) in log_1
    finally:
        for member in members:
            if member.poll() is None:
                member.send_signal(signal.SIGTERM)
        for member in members:
            try:
                member.wait(10)
            except subprocess.TimeoutExpired:
                member.kill()
                member.wait()
        for log in logs:
            log.close()
