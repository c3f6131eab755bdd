"""`jet run` on a streaming job: it runs until Ctrl-C or its --timeout, which is its run time."""

from __future__ import annotations

import re
import signal

import click
import pytest

from jet.cli import DURATION
from tests.cli.support import interrupt_when_started, jet, write_job
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
