"""``jet run --processing-guarantee ... --snapshot-interval ...``: snapshots on local members."""

import re
from pathlib import Path

from tests.cli.support import jet, write_job

JOB = """
from tests.cluster.snapshot_support import counting_dag

dag = counting_dag(2000, per_call=10, pause_s=0.02)
"""


def test_a_job_with_exactly_once_snapshots_into_the_printed_directory(tmp_path):
    job = write_job(tmp_path, "counting.py", JOB)
    result = jet("run", "--members", 2, "--processing-guarantee", "exactly-once", "--snapshot-interval", "200ms",
                 job, "--output", tmp_path / "out.jsonl")
    assert result.returncode == 0, result.stderr
    printed = re.findall(r"jet run: job records and snapshots in (\S+)", result.stderr)
    assert len(printed) == 1 and Path(printed[0]).is_dir()
    assert not any(Path(printed[0], "jobs").glob("*"))  # the completed job's record and snapshots are gone
    numbers = sorted(int(line) for line in (tmp_path / "out.jsonl").read_text().splitlines())
    assert numbers == list(range(2000))
    assert re.search(r"job \S+: snapshot \d+ committed in \d+ ms", result.stderr)  # the coordinator's log


def test_bad_guarantees_and_intervals_are_usage_errors(tmp_path):
    job = write_job(tmp_path, "counting.py", JOB)
    bad_guarantee = jet("run", "--processing-guarantee", "twice", job)
    assert bad_guarantee.returncode == 2 and "'twice' is not one of" in bad_guarantee.stderr
    bad_interval = jet("run", "--snapshot-interval", "0s", job)
    assert bad_interval.returncode == 2 and "a duration must be above 0" in bad_interval.stderr
