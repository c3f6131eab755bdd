"""The member process: HTTP endpoint, `jet member --pipeline`, graceful stop, no orphans."""

import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from datetime import datetime

import pytest
from jet.cluster.local.local_cluster import free_ports
from jet.core import DAG, Edge
from jet.core.processors import items_source_p
from jet.execution.errors import JobFailedError

from tests.cluster.cluster_support import deliveries, fail_on_member, json_sink, wait_until
from tests.conftest import REPO_ROOT

MEMBER_ENV = {"PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "member"), str(REPO_ROOT)]),
              "PATH": os.environ.get("PATH", "")}


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(port: int, path: str, host: str = "127.0.0.1", token: str | None = None) -> tuple[int, str]:
    """(status, body) of a GET, never through a proxy; (0, "") when nothing answers. With
    ``token``, the request carries ``Authorization: Bearer <token>``."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    try:
        with _NO_PROXY.open(urllib.request.Request(f"http://{host}:{port}{path}", headers=headers),
                            timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def process_gone(pid: int) -> bool:
    """No such process, or a zombie (dead, waiting to be reaped by init)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_healthz_job_and_metrics(cluster2, tmp_path):
    for port in cluster2.http_ports:
        assert http_get(port, "/healthz") == (200, "ok\n")
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(list(range(100))), 1)
    sink = dag.new_vertex("sink", json_sink(tmp_path), 1)
    dag.edge(Edge.between(source, sink).distributed())
    job = cluster2.new_job(dag)
    job.join(timeout=30)
    status, body = http_get(cluster2.http_ports[0], "/job", token=cluster2.token)
    assert status == 200
    info = json.loads(body)
    assert set(info) == {"jobId", "name", "status", "message", "startTime", "completionTime", "processingGuarantee",
                         "restarts", "lastRestartCause", "lastSnapshot", "snapshotCount"}
    assert (info["jobId"], info["status"], info["message"]) == (job.id, "COMPLETED", "")
    assert (info["processingGuarantee"], info["restarts"], info["lastSnapshot"]) == ("NONE", 0, None)
    assert datetime.fromisoformat(info["startTime"]) <= datetime.fromisoformat(info["completionTime"])
    assert http_get(cluster2.http_ports[1], "/job", token=cluster2.token)[0] == 404
    status, metrics = http_get(cluster2.http_ports[0], "/metrics")
    assert status == 200 and "jet_jobs_completed_total" in metrics
    assert 'jet_executions_total{outcome="completed"}' in http_get(cluster2.http_ports[1], "/metrics")[1]

    failing = DAG()
    source = failing.new_vertex("source", items_source_p(list(range(100))), 1)
    check = failing.new_vertex("check", fail_on_member(bad_member=1), 1)
    failing.edge(Edge.between(source, check).distributed())
    with pytest.raises(JobFailedError):
        cluster2.new_job(failing).join(timeout=30)
    info = json.loads(http_get(cluster2.http_ports[0], "/job", token=cluster2.token)[1])
    assert info["status"] == "FAILED"
    assert "ValueError: user function exploded" in info["message"]
    assert "Traceback (most recent call last)" in info["message"]
    assert "in explode_in_user_code" in info["message"]


def test_job_details_need_the_token_and_probes_and_metrics_stay_open(cluster2):
    for token in (None, "not-the-token", cluster2.token[:-1]):
        status, body = http_get(cluster2.http_ports[0], "/job", token=token)
        assert status == 401 and "Authorization: Bearer <cluster token>" in body
        assert "Traceback" not in body and "jobId" not in body
    assert http_get(cluster2.http_ports[0], "/job", token=cluster2.token)[0] == 200
    # The operator's read-only credential, computed here by the documented formula.
    status_credential = hmac.new(cluster2.token.encode(), b"jet-job-status", hashlib.sha256).hexdigest()
    assert http_get(cluster2.http_ports[0], "/job", token=status_credential)[0] == 200
    for port in cluster2.http_ports:
        assert http_get(port, "/healthz") == (200, "ok\n")
        assert http_get(port, "/metrics")[0] == 200
    assert "refused /job" in cluster2.log_paths[0].read_text()


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as in /proc/net/tcp*) with a socket listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.split(":")
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.add(address)
    return found


LOOPBACK_HEX = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


def test_a_lone_member_outside_kubernetes_binds_loopback_and_needs_no_member_key(tmp_path):
    port, http_port = free_ports(2)
    env = {k: v for k, v in MEMBER_ENV.items()}
    env["JET_CLUSTER_TOKEN"] = "lone-token"
    log = open(tmp_path / "member.log", "wb")
    member = subprocess.Popen([sys.executable, "-m", "jet.cli", "member", "--port", str(port),
                               "--http-port", str(http_port)], env=env, stdout=log, stderr=log)
    try:
        wait_until(lambda: http_get(http_port, "/healthz") == (200, "ok\n"), what="the member's /healthz")
        for bound in (port, http_port):
            addresses = listening_addresses(bound)
            assert addresses and addresses <= LOOPBACK_HEX, f"port {bound} listens on {addresses}"
    finally:
        member.kill()
        member.wait()
        log.close()


def test_members_of_a_cluster_without_the_member_key_exit_with_a_clear_error():
    result = subprocess.run([sys.executable, "-m", "jet.cli", "member", "--port", str(free_ports(1)[0]),
                             "--peers", "127.0.0.1:1,127.0.0.1:2", "--index", "1"],
                            env={**MEMBER_ENV, "JET_CLUSTER_TOKEN": "t"}, capture_output=True, text=True,
                            timeout=30)
    assert result.returncode == 2
    assert "no member key: set $JET_MEMBER_KEY" in result.stderr and "JET_MEMBER_KEY_FILE" in result.stderr


PIPELINE_TOKEN = "pipeline-test-token"
PIPELINE_MEMBER_KEY = "pipeline-test-member-key"


def _start_pipeline_members(tmp_path, job_file, entrypoint, args):
    """Two `jet member` processes; member 0 runs ``job_file``. Returns (members, http ports, logs)."""
    token_file, member_key_file = tmp_path / "token", tmp_path / "member-key"
    token_file.write_text(PIPELINE_TOKEN + "\n")
    member_key_file.write_text(PIPELINE_MEMBER_KEY + "\n")
    ports, http_ports = free_ports(2), free_ports(2)
    peers = ",".join(f"127.0.0.1:{port}" for port in ports)
    logs = [open(tmp_path / f"member-{i}.log", "wb") for i in range(2)]
    common = [sys.executable, "-m", "jet.cli", "member", "--host", "127.0.0.1", "--peers", peers]
    members = [
        subprocess.Popen(common + ["--port", str(ports[0]), "--http-port", str(http_ports[0]), "--index", "0",
                                   "--pipeline", str(job_file), "--entrypoint", entrypoint, "--", *args],
                         env={**MEMBER_ENV, "JET_CLUSTER_TOKEN": PIPELINE_TOKEN,
                              "JET_MEMBER_KEY": PIPELINE_MEMBER_KEY},
                         stdout=logs[0], stderr=logs[0], cwd=tmp_path),
        subprocess.Popen(common + ["--port", str(ports[1]), "--http-port", str(http_ports[1])],
                         env={**MEMBER_ENV, "JET_CLUSTER_TOKEN_FILE": str(token_file),
                              "JET_MEMBER_KEY_FILE": str(member_key_file), "POD_NAME": "job-member-1"},
                         stdout=logs[1], stderr=logs[1], cwd=tmp_path),
    ]
    return members, http_ports, logs


def _stop(members, logs):
    for member in members:
        if member.poll() is None:
            member.kill()
            member.wait()
    for log in logs:
        log.close()


def _final_job_status(http_port):
    wait_until(lambda: json.loads(http_get(http_port, "/job", token=PIPELINE_TOKEN)[1] or "{}").get("status")
               in ("COMPLETED", "FAILED"), 60, "the --pipeline job to end on /job")
    return json.loads(http_get(http_port, "/job", token=PIPELINE_TOKEN)[1])


def test_jet_member_pipeline_runs_the_job_file_to_completed(tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    job_file = tmp_path / "job.py"
    job_file.write_text(textwrap.dedent("""
        from jet.core import DAG, Edge
        from jet.core.processors import items_source_p
        from tests.cluster.cluster_support import json_sink

        def build(out_dir, count):
            dag = DAG()
            source = dag.new_vertex("source", items_source_p(list(range(int(count)))), 1)
            sink = dag.new_vertex("sink", json_sink(out_dir), 1)
            dag.edge(Edge.between(source, sink).distributed())
            return dag
    """))
    members, http_ports, logs = _start_pipeline_members(tmp_path, job_file, "build", [str(out_dir), "500"])
    try:
        info = _final_job_status(http_ports[0])
        assert info["status"] == "COMPLETED", info["message"]
        got = deliveries(out_dir, "sink")
        assert set(got) == {(0, 0), (1, 0)} and sorted(x for v in got.values() for x in v) == list(range(500))
        assert all(member.poll() is None for member in members), "members keep running after the job"
        for member in members:
            member.send_signal(signal.SIGTERM)
        assert [member.wait(15) for member in members] == [0, 0]
        assert "member 1 of 2" in (tmp_path / "member-1.log").read_text()
    finally:
        _stop(members, logs)


def test_a_job_file_that_raises_while_building_is_reported_failed_on_job(tmp_path):
    job_file = tmp_path / "job.py"
    job_file.write_text(textwrap.dedent("""
        def read_settings(path):
            raise ValueError(f"no settings in {path}")

        def pipeline(path):
            read_settings(path)
    """))
    members, http_ports, logs = _start_pipeline_members(tmp_path, job_file, "pipeline", ["/etc/nowhere"])
    try:
        info = _final_job_status(http_ports[0])
        assert info["status"] == "FAILED"
        assert "ValueError: no settings in /etc/nowhere" in info["message"]
        assert "in read_settings" in info["message"], "the user's traceback is in the status"
        assert members[0].poll() is None, "member 0 keeps serving /job instead of crashing"
    finally:
        _stop(members, logs)


def test_a_member_without_a_token_exits_with_a_clear_error(tmp_path):
    result = subprocess.run([sys.executable, "-m", "jet.cli", "member", "--port", str(free_ports(1)[0])],
                            env=MEMBER_ENV, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "JET_CLUSTER_TOKEN" in result.stderr


def test_no_orphans_when_the_parent_is_killed(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import json, sys, time
        import jet
        cluster = jet.local_cluster(members=2, log_dir={str(tmp_path)!r})
        print(json.dumps([m.pid for m in cluster.members]), flush=True)
        time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True, env=MEMBER_ENV)
    try:
        pids = json.loads(parent.stdout.readline())
        assert len(pids) == 2 and not any(process_gone(pid) for pid in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        wait_until(lambda: all(process_gone(pid) for pid in pids), 5, f"members {pids} to die with their parent")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_member_exits_when_its_stdin_from_the_parent_closes(tmp_path):
    import jet
    with jet.local_cluster(members=2, log_dir=tmp_path) as cluster:
        cluster.members[1].stdin.close()
        wait_until(lambda: cluster.members[1].poll() is not None, 5, "member 1 to exit")
        assert cluster.members[0].poll() is None
