"""Two members, each in its own network namespace with its own IP and pod DNS name (as on Kubernetes).

Needs root (``ip netns add``); skipped with the reason otherwise. Everything created here (namespaces,
veth pair ends, the bridge, ``/etc/netns/<ns>``) is removed in a ``finally`` block.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.cluster.cluster_support import deliveries, wait_until
from tests.cluster.test_member_process import MEMBER_ENV, http_get
from tests.netns import (add_bridge, add_netns, exec_in, free_subnet, netns_support, remove_link,
                         remove_netns, write_hosts)

DNS = "job-member-{i}.job-members.default.svc.cluster.local"
PORT, HTTP_PORT = 5701, 8080
TOKEN = "netns-token"


@pytest.fixture
def namespaces():
    reason = netns_support()
    if reason is not None:
        pytest.skip(reason)
    tag = f"{os.getpid() % 100000}"
    names = [f"jetm{i}-{tag}" for i in range(2)]
    veths = [f"jv{i}-{tag}" for i in range(2)]
    bridge = f"jbr{tag}"
    try:
        try:
            prefix = free_subnet("10.231")
        except LookupError as e:
            pytest.skip(str(e))
        addresses = [f"{prefix}{10 + i}" for i in range(2)]
        add_bridge(bridge, f"{prefix}1/24")
        for name, veth, address in zip(names, veths, addresses):
            add_netns(name, veth, bridge, f"{address}/24")
            write_hosts(name, [(a, DNS.format(i=i)) for i, a in enumerate(addresses)])
        yield names, addresses
    finally:
        for name, veth in zip(names, veths):
            remove_netns(name, veth)
        remove_link(bridge)


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
            command = [sys.executable, "-m", "jet.cli", "member",
                       "--port", str(PORT), "--http-port", str(HTTP_PORT),
                       "--peers", f"dns:{DNS}:{PORT}", "--replicas", "2"]
            if i == 0:
                command += ["--pipeline", str(job_file)]
            command = exec_in(name, command)
            env = {**MEMBER_ENV, "POD_NAME": f"job-member-{i}", "JET_CLUSTER_TOKEN": TOKEN,
                   "JET_MEMBER_KEY": "netns-member-key"}
            members.append(subprocess.Popen(command, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL))
        wait_until(lambda: http_get(HTTP_PORT, "/healthz", addresses[1])[0] == 200, 30,
                   "member 1's /healthz over the bridge")
        wait_until(lambda: json.loads(http_get(HTTP_PORT, "/job", addresses[0], TOKEN)[1] or "{}").get("status")
                   in ("COMPLETED", "FAILED"), 60, "the job to end on member 0's /job")
        info = json.loads(http_get(HTTP_PORT, "/job", addresses[0], TOKEN)[1])
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
