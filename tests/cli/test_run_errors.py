"""What `jet run` prints when the user's code fails, and that it checks the job file first."""

import re
import uuid
from pathlib import Path

from tests.cli.jobs import FAILING_MAP, FLAT_MAP_RETURNING_A_NUMBER, RAISES_WHILE_DEFINING
from tests.cli.support import jet, jet_env, write_job

MEMBER_STARTED = "serving gRPC"


def test_a_user_error_is_printed_once_with_the_users_frames_first_naming_stage_and_member(tmp_path):
    job = write_job(tmp_path, "failing.py", FAILING_MAP)
    result = jet("run", "--members", "2", job)
    assert result.returncode == 1, result.stderr[-3000:]
    err = result.stderr
    assert err.count('raise ValueError(f"bad item {x}")') == 1, err
    assert err.count("Traceback (most recent call last)") == 1, err
    report = err[err.index("job failed"):]
    assert re.match(r"job failed in stage 'map', processor #0, on member [01]:\n"
                    r"Traceback \(most recent call last\):\n"
                    rf'  File "{re.escape(str(job))}", line 6, in explode\n', report), report
    assert "jet/execution" not in report, "engine frames do not lead (nor follow without DEBUG)"


def test_engine_frames_follow_the_users_with_debug_logging(tmp_path):
    job = write_job(tmp_path, "failing.py", FAILING_MAP)
    err = jet("--log-level", "DEBUG", "run", "--members", "1", job).stderr
    report = err[err.index("job failed"):]
    assert report.index("in explode") < report.index("Called by the Jet engine") < report.index("jet/execution")


def test_a_flat_map_returning_a_non_iterable_names_the_stage_the_function_and_the_contract(tmp_path):
    job = write_job(tmp_path, "words.py", FLAT_MAP_RETURNING_A_NUMBER)
    result = jet("run", "--members", "2", job)
    assert result.returncode == 1, result.stderr[-3000:]
    report = result.stderr[result.stderr.index("job failed"):]
    assert report.startswith("job failed in stage 'fused(map, flat-map, filter)', processor #0, on member "), \
        report
    assert (f"stage 'flat-map' (flat_map): its function count_words ({job}, line 5) must take one"
            " argument, the item, and return an iterable of the items to emit") in report, report
    assert "for item 'A B' it returned int: 2, which is not iterable" in report, report
    assert report.count("count_words") == 1, report


def test_a_missing_job_file_is_refused_before_any_member_starts(tmp_path):
    result = jet("run", "--members", "2", tmp_path / "nothere.py")
    assert result.returncode == 2
    assert result.stderr.count("does not exist") == 1, result.stderr
    assert MEMBER_STARTED not in result.stderr


def test_a_job_file_that_does_not_compile_is_refused_before_any_member_starts(tmp_path):
    job = write_job(tmp_path, "broken.py", "def pipeline(:\n    pass\n")
    result = jet("run", "--members", "2", job)
    assert result.returncode == 2, result.stderr
    assert f"job rejected: job file {job} does not compile" in result.stderr
    assert f'File "{job}", line 1' in result.stderr and "SyntaxError" in result.stderr
    assert MEMBER_STARTED not in result.stderr


def _processes_with(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "environ").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            pass
    return pids


def test_a_job_file_that_raises_exits_2_with_one_message_and_leaves_no_member(tmp_path):
    job = write_job(tmp_path, "raises.py", RAISES_WHILE_DEFINING)
    marker = f"CLI_TEST_RUN_{uuid.uuid4().hex}"
    result = jet("run", "--members", "2", job, env=jet_env(**{marker: "1"}))
    assert result.returncode == 2, result.stderr
    err = result.stderr
    assert err.count("ValueError: no settings in /etc/nowhere") == 1, err
    rejection = err[err.index("job rejected"):]
    assert rejection.splitlines()[:4] == [
        f"job rejected: {job} raised an error while defining its job:",
        "Traceback (most recent call last):",
        f'  File "{job}", line 7, in pipeline',
        "    read_settings()"], rejection
    assert _processes_with(marker) == [], "no member outlives jet run"


def test_a_missing_file_the_job_file_opens_is_not_taken_for_a_missing_job_file(tmp_path):
    job = write_job(tmp_path, "opens.py", "open('/no/such/settings.yaml')\n")
    result = jet("run", "--members", "1", job)
    assert result.returncode == 2, result.stderr
    assert f"job rejected: {job} raised an error while defining its job:" in result.stderr
    assert "No such file or directory: '/no/such/settings.yaml'" in result.stderr
    assert "does not exist" not in result.stderr


SPARK_VALUE_FAILS = '''
from jet import AggregateOperations as A, Pipeline, Sinks, Sources

def price(row):
    return row[1] / (row[1] - 500.0)

pipeline = Pipeline.create()
(pipeline.read_from(Sources.spark("parquet", {source!r}))
 .grouping_key(lambda row: row[0])
 .aggregate(A.summing(price))
 .write_to(Sinks.logger()))
'''


def test_a_user_error_in_a_job_reading_spark_leaves_no_spark_error_behind(tmp_path):
    """The job fails with the user's error; Spark's write into the ended job stops at INFO, and
    `jet run` waits for it, so Spark logs no errors or Java stacks of its own about the exit."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"k": [i % 5 for i in range(1000)], "v": [float(i) for i in range(1000)]}), source)
    job = write_job(tmp_path, "spark_fails.py", SPARK_VALUE_FAILS.format(source=str(source)))
    result = jet("run", "--members", "2", job, timeout=300)
    assert result.returncode == 1, result.stderr[-3000:]
    err = result.stderr
    report = err[err.index("job failed"):]
    assert "in price" in report and "ZeroDivisionError: float division by zero" in report, report
    assert not re.search(r"^\s+at (org|java|scala)\.", err, re.MULTILINE), err[-4000:]
    assert [line for line in err.splitlines() if " ERROR " in line and "jet." not in line] == [], err[-4000:]
    assert "stopped: its job ended first" in err, err[-4000:]
