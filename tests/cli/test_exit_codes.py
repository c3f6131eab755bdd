"""`jet run` exits 0 completed, 1 job failed, 2 usage error or rejected job, 3 timeout, 130
interrupted, as its --help and the README say."""

import re

import pytest

from tests.cli.jobs import ENDLESS, FAILING_MAP
from tests.cli.support import interrupt_when_started, jet, write_job
from tests.conftest import REPO_ROOT

EXIT_CODES = {0: "completed", 1: "failed", 2: "rejected", 3: "--timeout", 130: "interrupted"}
WORDCOUNT = REPO_ROOT / "examples" / "wordcount.py"


def test_0_when_the_job_completes():
    assert jet("run", "--members", "1", WORDCOUNT).returncode == 0


def test_1_when_the_job_fails(tmp_path):
    assert jet("run", "--members", "1", write_job(tmp_path, "failing.py", FAILING_MAP)).returncode == 1


def test_2_for_a_usage_error():
    result = jet("run", "--no-such-option", WORDCOUNT)
    assert result.returncode == 2 and "No such option" in result.stderr


@pytest.mark.parametrize("code", [
    "x = 1\n",  # defines no job
    "from jet import Pipeline, Sinks, Sources\n"
    "def pipeline():\n"
    "    p = Pipeline.create()\n"
    "    p.read_from(Sources.files('no/such/input-*.txt')).write_to(Sinks.list())\n"
    "    return p\n",  # a missing input
])
def test_2_for_a_rejected_job_file(tmp_path, code):
    result = jet("run", "--members", "1", write_job(tmp_path, "job.py", code))
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("job rejected: ") == 1


def test_3_when_the_job_runs_past_its_timeout(tmp_path):
    job = write_job(tmp_path, "endless.py", ENDLESS)
    result = jet("run", "--members", "1", "--timeout", "0.5", job, tmp_path / "running")
    assert result.returncode == 3, result.stderr
    assert "job timed out and was cancelled" in result.stderr




@pytest.mark.parametrize("members", [1, 2])
def test_130_when_interrupted(tmp_path, members):
    job, marker = write_job(tmp_path, "endless.py", ENDLESS), tmp_path / "running"
    returncode, err = interrupt_when_started(job, marker, members)
    assert returncode == 130, err
    assert "interrupted" in err
    assert " ERROR " not in err, err  # a cancel the user asked for is no error


def test_the_exit_codes_are_documented_in_help_and_readme():
    help_text = jet("run", "--help").stdout
    readme = (REPO_ROOT / "README.md").read_text()
    for code, meaning in EXIT_CODES.items():
        assert re.search(rf"^\s+{code}\s+.*{re.escape(meaning)}", help_text, re.MULTILINE), (code, help_text)
        assert re.search(rf"^\| `{code}` \|.*{re.escape(meaning)}", readme, re.MULTILINE), code
