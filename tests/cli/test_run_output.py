"""What a successful `jet run` shows: a clean log, the DAG once, one run time, all results."""

import json
import re

from tests.cli.jobs import ONE_LIST_SINK, TWO_LIST_SINKS
from tests.cli.support import jet, write_job
from tests.conftest import REPO_ROOT

WORDCOUNT = REPO_ROOT / "examples" / "wordcount.py"
JOB_TIME = re.compile(r"(?:COMPLETED|completed|ran) in (\d+\.\d+) s")


def test_a_successful_run_on_members_logs_nothing_at_error_and_prints_the_dag_once():
    result = jet("run", "--members", "2", WORDCOUNT)
    assert result.returncode == 0, result.stderr
    assert " ERROR " not in result.stderr, result.stderr
    assert result.stderr.count("digraph DAG") == 1, result.stderr
    assert "member 1 shutting down" in result.stderr, "the members stop before jet run ends"


def test_a_run_in_this_process_prints_the_dag_once():
    result = jet("run", "--members", "1", WORDCOUNT)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("digraph DAG") == 1, result.stderr


def test_one_run_reports_one_job_time_explained():
    for members in ("1", "2"):
        err = jet("run", "--members", members, WORDCOUNT).stderr
        assert len(set(JOB_TIME.findall(err))) == 1, err
        assert re.search(r"job completed in \d+\.\d+ s \(from its start on the members to its end;"
                         r" start-up and teardown not counted\)", err), err


def test_output_writes_every_item_of_the_list_sink_as_json_lines(tmp_path):
    job, output = write_job(tmp_path, "squares.py", ONE_LIST_SINK), tmp_path / "out.jsonl"
    result = jet("run", "--members", "2", "--output", output, job, "25")
    assert result.returncode == 0, result.stderr
    lines = output.read_text().splitlines()
    assert sorted(json.loads(line) for line in lines) == sorted([f"n{n}", n * n] for n in range(25))
    assert f"result 'default': 25 item(s), written to {output}" in result.stdout


def test_output_tags_each_item_with_its_sink_when_there_are_several(tmp_path):
    job, output = write_job(tmp_path, "two.py", TWO_LIST_SINKS), tmp_path / "out.jsonl"
    assert jet("run", "--members", "1", "--output", output, job, "30").returncode == 0
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert sorted((r["item"][0], r["item"][1]) for r in records if r["sink"] == "pairs") == \
        [(n, [n % 3]) for n in range(30)]
    assert sorted(r["item"] for r in records if r["sink"] == "even") == list(range(0, 30, 2))
    assert {r["sink"] for r in records} == {"pairs", "even"} and len(records) == 45


def test_without_output_at_most_20_items_are_shown_and_the_option_is_named(tmp_path):
    result = jet("run", "--members", "1", write_job(tmp_path, "squares.py", ONE_LIST_SINK), "25")
    assert result.stdout.count("\n  ") == 21  # 20 items and the line saying how many more
    assert "... 5 more (--output FILE writes them all)" in result.stdout


def test_the_output_format_is_in_help_and_readme():
    help_text = " ".join(jet("run", "--help").stdout.split())
    assert "--output FILE Write the items of the job's Sinks.list sinks to this file as JSON lines" in help_text
    assert '{"sink": NAME, "item": ITEM}' in help_text
    readme = (REPO_ROOT / "README.md").read_text()
    assert "`--output FILE`" in readme and '{"sink": NAME, "item": ITEM}' in readme
