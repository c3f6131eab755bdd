"""`jet run` on a streaming job: it runs until Ctrl-C or its --timeout, which is its run time."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
from pathlib import Path

import click
import pytest

from jet.cli import DURATION
from tests.cli.support import interrupt_when_started, jet, jet_command, jet_env, write_job
from tests.conftest import REPO_ROOT

#: A hand-written streaming DAG: a source that never ends (it touches MARKER once it runs) into a
#: list sink; the DAG is marked as a stream, as the planner marks a pipeline reading a stream.
TICKS = '''
import time
from pathlib import Path

from jet.connectors.sinks import ListResultSinkP
from jet.core import DAG, Edge, Processor


class Ticks(Processor):
    def __init__(self, marker):
        self.marker = Path(marker)
        self.next = 0

    def complete(self):
        self.marker.touch()
        time.sleep(0.001)
        if self.outbox.offer(self.next):
            self.next += 1
        return False


def dag(marker):
    d = DAG()
    d.is_streaming = True
    source = d.new_vertex("ticks", lambda: Ticks(marker), 1)
    sink = d.new_vertex("sink", lambda: ListResultSinkP("ticks"), 1)
    d.edge(Edge.between(source, sink))  # each member's source feeds its own sink
    return d
'''

SUMMARY_ROW = re.compile(r"^\W*(ticks|sink)\W+([\d,]+)\W+([\d,]+)", re.MULTILINE)


def summary_counts(stderr: str) -> dict[str, tuple[int, int]]:
    """Items in and out per vertex from the summary table."""
    return {m[1]: (int(m[2].replace(",", "")), int(m[3].replace(",", ""))) for m in SUMMARY_ROW.finditer(stderr)}


@pytest.mark.parametrize("members", [1, 2])
def test_timeout_is_a_streams_run_time_then_it_stops_cleanly_with_exit_0(tmp_path, members):
    job = write_job(tmp_path, "ticks.py", TICKS)
    result = jet("run", "--members", members, job, tmp_path / "running", "--timeout", "1500ms")
    assert result.returncode == 0, result.stderr
    assert "streaming job stopped after its run time (--timeout 1.5 s)" in result.stderr
    assert "Traceback" not in result.stderr and " ERROR " not in result.stderr, result.stderr
    # A clean stop is a cancel, told as one at INFO (it read "JobCancelledError" and "FAILED").
    assert "JobCancelledError" not in result.stderr and "FAILED" not in result.stderr, result.stderr
    if members > 1:
        assert re.search(r"job \S+ was cancelled after [\d.]+ s", result.stderr), result.stderr
    counts = summary_counts(result.stderr)
    assert counts["ticks"][1] > 0 and counts["sink"][0] > 0, result.stderr
    (count,) = re.findall(r"result 'ticks': (\d+) item\(s\)", result.stdout)
    shown = [int(line) for line in result.stdout.splitlines() if line.startswith("  ") and line.strip().isdigit()]
    # What the list sink held when the job was stopped: the source's items, in order, from 0.
    assert int(count) == counts["sink"][0] and shown == list(range(len(shown))), result.stdout




@pytest.mark.parametrize("members", [1, 2])
def test_ctrl_c_cancels_a_stream_with_exit_130_and_no_traceback(tmp_path, members):
    job, marker = write_job(tmp_path, "ticks.py", TICKS), tmp_path / "running"
    returncode, err = interrupt_when_started(job, marker, members)
    assert returncode == 130, err
    assert "interrupted; the job was cancelled" in err
    assert "Traceback" not in err and " ERROR " not in err, err


@pytest.mark.parametrize("members", [1, 2])
def test_sigterm_cancels_a_stream_with_exit_143_and_stops_the_members_in_order(tmp_path, members):
    """SIGTERM to `jet run` alone (kill, timeout(1)) ends the run as Ctrl-C does: the job is
    cancelled and the members are stopped, not left to notice their parent is gone."""
    job, marker = write_job(tmp_path, "ticks.py", TICKS), tmp_path / "running"
    returncode, err = interrupt_when_started(job, marker, members, signal.SIGTERM)
    assert returncode == 143, err
    assert "terminated (SIGTERM); the job was cancelled" in err
    assert "Traceback" not in err and " ERROR " not in err, err
    assert "closed our stdin" not in err, err


def test_a_batch_job_over_its_timeout_still_exits_3(tmp_path):
    from tests.cli.jobs import ENDLESS

    result = jet("run", "--members", "1", "--timeout", "0.5s", write_job(tmp_path, "endless.py", ENDLESS),
                 tmp_path / "running")
    assert result.returncode == 3, result.stderr
    assert "job timed out and was cancelled" in result.stderr


@pytest.mark.parametrize("text, seconds", [("10", 10.0), ("2.5", 2.5), ("10s", 10.0), ("500ms", 0.5),
                                           ("2m", 120.0), ("1h", 3600.0), (" 3S ", 3.0)])
def test_timeout_takes_seconds_or_a_number_with_a_unit(text, seconds):
    assert DURATION.convert(text, None, None) == seconds


@pytest.mark.parametrize("text", ["", "s", "ten", "10x", "0", "-1s", "0ms", "inf", "nan"])
def test_a_bad_timeout_is_refused_naming_the_value(text):
    with pytest.raises(click.BadParameter, match=re.escape(repr(text))):
        DURATION.convert(text, None, None)


def test_help_and_readme_say_what_timeout_does_to_a_stream():
    help_text = " ".join(jet("run", "--help").stdout.split())
    assert "A streaming job (one that reads a stream source): its run time" in help_text
    assert "the exit code is 0" in help_text and "10s" in help_text
    readme = " ".join((REPO_ROOT / "README.md").read_text().split())
    assert "a streaming job runs until Ctrl-C (exit 130) or for its `--timeout`" in readme


def test_jet_job_reaches_a_jet_run_cluster_with_the_token_it_prints_or_the_one_set(tmp_path):
    """`jet run` ignored $JET_CLUSTER_TOKEN and never said how to reach its members."""
    job = write_job(tmp_path, "ticks.py", TICKS)
    process = subprocess.Popen(jet_command("run", "--members", 2, job, tmp_path / "running", "--timeout", "60s"),
                               env=jet_env(JET_CLUSTER_TOKEN="a-token-the-user-chose"), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        hint = process.stderr.readline()
        while hint and "jet job --address" not in hint:
            hint = process.stderr.readline()
        found = re.search(r"jet job --address (\S+) --token-file (\S+) list", hint)
        assert found, hint
        address, token_file = found[1], Path(found[2])
        assert token_file.read_text().strip() == "a-token-the-user-chose"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        for given in (["--token-file", str(token_file)], []):  # the file it printed, or the variable
            listed = jet("job", "--address", address, *given, "list",
                         env=jet_env(JET_CLUSTER_TOKEN="a-token-the-user-chose") if not given else jet_env())
            assert listed.returncode == 0 and "RUNNING" in listed.stdout, listed.stderr
        os.killpg(process.pid, signal.SIGINT)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert not token_file.exists()  # gone with the run
