"""`jet run --ui`: one line naming member 0's dashboard, the members kept up after a batch job
ended until Ctrl-C, and the job's exit code after it."""

import os
import signal
import subprocess
import threading
import time
from urllib.parse import urlsplit

import pytest

from tests.cli.support import jet_command, jet_env, write_job
from tests.dashboard.support import request

BATCH_JOB = """
from jet import Pipeline, Sinks, Sources

def pipeline():
    p = Pipeline.create()
    p.read_from(Sources.items(list(range(137)))).map(lambda x: x * 2).write_to(Sinks.list("doubled"))
    return p
"""

FAILING_JOB = """
from jet import Pipeline, Sinks, Sources

def refuse(x):
    if x == 3:
        raise RuntimeError("ui-test: three is refused")
    return x

def pipeline():
    p = Pipeline.create()
    p.read_from(Sources.items(list(range(10)))).map(refuse).write_to(Sinks.list("out"))
    return p
"""
DEADLINE_S = 120  # a bound, not a measurement


class UiRun:
    """``jet run --ui`` in a process group of its own, its stderr read as it comes."""

    def __init__(self, job_file) -> None:
        self.process = subprocess.Popen(jet_command("run", "--ui", "--members", 2, job_file), env=jet_env(),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True)
        self.err_lines: list[str] = []
        self._reader = threading.Thread(target=lambda: self.err_lines.extend(self.process.stderr), daemon=True)
        self._reader.start()

    def until(self, condition, what: str):
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            assert self.process.poll() is None, f"jet run ended ({self.process.returncode}) before {what}: " \
                                                f"{''.join(self.err_lines)}"
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")

    def dashboard(self) -> tuple[int, str]:
        """The port and the cookie of the dashboard the printed line names."""
        line = self.until(lambda: next((l for l in list(self.err_lines) if l.startswith("Dashboard: ")), None),
                          "the Dashboard line")
        url = urlsplit(line.split(" ", 1)[1].strip())
        assert url.scheme == "http" and url.path == "/login"
        signed_in = request(url.port, "GET", f"{url.path}?{url.query}")
        assert signed_in.status == 303
        return url.port, signed_in.headers["Set-Cookie"].split(";")[0]

    def interrupt(self) -> tuple[int, str, str]:
        os.killpg(self.process.pid, signal.SIGINT)
        out, _ = self.process.communicate(timeout=60)
        self._reader.join(10)
        return self.process.returncode, out, "".join(self.err_lines)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)


@pytest.fixture
def ui_run():
    runs = []

    def start(job_file):
        runs.append(UiRun(job_file))
        return runs[-1]

    yield start
    for run in runs:
        run.kill()


def test_the_dashboard_stays_up_after_a_batch_job_until_ctrl_c(tmp_path, ui_run):
    run = ui_run(write_job(tmp_path, "doubling.py", BATCH_JOB))
    port, cookie = run.dashboard()
    jobs = run.until(lambda: [j for j in request(port, "GET", "/api/jobs", cookie=cookie).json()["jobs"]
                              if j["status"] == "COMPLETED"], "the job COMPLETED on the dashboard")
    run.until(lambda: any(l.startswith("jet run: the job ended") for l in run.err_lines), "the job's end said")
    shown = request(port, "GET", f"/api/jobs/{jobs[0]['jobId']}", cookie=cookie).json()
    sources = {e["source"] for e in shown["dag"]["edges"]} - {e["dest"] for e in shown["dag"]["edges"]}
    assert sum(shown["metrics"][name]["out"] for name in sources) == 137  # the input's items
    assert request(port, "GET", "/", cookie=cookie).status == 200  # still up after the job ended
    code, out, err = run.interrupt()
    assert code == 0, err
    assert [l for l in err.splitlines() if "Dashboard:" in l] == [l for l in err.splitlines()
                                                                  if l.startswith("Dashboard: http://")]
    assert len([l for l in err.splitlines() if l.startswith("Dashboard: http://")]) == 1
    assert "job completed in" in err and "doubled" in out


def test_a_failed_job_keeps_its_dashboard_and_exits_1_after_ctrl_c(tmp_path, ui_run):
    run = ui_run(write_job(tmp_path, "refusing.py", FAILING_JOB))
    port, cookie = run.dashboard()
    failed = run.until(lambda: [j for j in request(port, "GET", "/api/jobs", cookie=cookie).json()["jobs"]
                                if j["status"] == "FAILED"], "the job FAILED on the dashboard")
    shown = request(port, "GET", f"/api/jobs/{failed[0]['jobId']}", cookie=cookie).json()
    assert "ui-test: three is refused" in shown["error"] and "in refuse" in shown["error"]
    run.until(lambda: any(l.startswith("jet run: the job ended") for l in run.err_lines), "the job's end said")
    code, _, err = run.interrupt()
    assert code == 1 and "ui-test: three is refused" in err
