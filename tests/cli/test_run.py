import subprocess
import sys
import textwrap

from click.testing import CliRunner

from jet.cli import main
from tests.conftest import REPO_ROOT

EXAMPLE = str(REPO_ROOT / "examples" / "wordcount_dag.py")
TEXT = str(REPO_ROOT / "examples" / "data" / "two-cities.txt")


def test_run_wordcount_example_logs_the_top_words():
    result = subprocess.run(
        [sys.executable, "-m", "jet", "run", EXAMPLE, TEXT], capture_output=True, text=True,
        timeout=60, env={"PYTHONPATH": str(REPO_ROOT / "member"), "PATH": ""})
    assert result.returncode == 0, result.stderr
    assert "the 29" in result.stderr and "of 25" in result.stderr
    assert "job completed" in result.stderr


def test_dot_prints_the_dag_and_exits():
    result = CliRunner().invoke(main, ["run", "--dot", EXAMPLE, TEXT])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("digraph DAG {")
    assert '"tokenize" [localParallelism=1];' in result.output


def test_a_failing_user_function_exits_non_zero_with_the_traceback(tmp_path):
    job = tmp_path / "failing.py"
    job.write_text(textwrap.dedent("""
        from jet.core import DAG, Edge
        from jet.core.processors import items_source_p, map_p, noop_p

        def explode(x):
            raise ValueError(f"bad item {x}")

        dag = DAG()
        a = dag.new_vertex("source", items_source_p([1]), 1)
        b = dag.new_vertex("explode", map_p(explode))
        c = dag.new_vertex("sink", noop_p())
        dag.edge(Edge.between(a, b)).edge(Edge.between(b, c))
    """))
    result = CliRunner().invoke(main, ["run", str(job)])
    assert result.exit_code == 1
    assert "ValueError: bad item 1" in result.output
    assert "in explode" in result.output


def test_a_file_without_a_dag_is_a_usage_error(tmp_path):
    job = tmp_path / "empty.py"
    job.write_text("x = 1\n")
    result = CliRunner().invoke(main, ["run", str(job)])
    assert result.exit_code == 2
    assert "defines no 'pipeline' or 'dag'" in result.output


def test_manifest_prints_a_jetjob_with_the_file_inlined():
    import yaml
    result = CliRunner().invoke(main, ["manifest", EXAMPLE, "--name", "wc", "--replicas", "3"])
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(result.output)
    assert document["kind"] == "JetJob" and document["metadata"]["name"] == "wc"
    assert document["spec"]["members"]["replicas"] == 3
    assert "def dag(" in document["spec"]["pipeline"]["code"]


def test_the_members_log_at_the_level_jet_run_was_given():
    """`jet --log-level WARNING run` keeps the members' INFO lines (joins, the job's start) off
    the terminal too; at the default level they are there."""
    from tests.cli.support import jet

    quiet = jet("--log-level", "WARNING", "run", "--members", "2", EXAMPLE, TEXT)
    assert quiet.returncode == 0, quiet.stderr
    assert "job completed" in quiet.stderr  # what `jet run` prints is not a log line
    assert " INFO " not in quiet.stderr
    chatty = jet("run", "--members", "2", EXAMPLE, TEXT)
    assert chatty.returncode == 0, chatty.stderr
    assert "jet.cluster.member: member 0 of 2 serving" in chatty.stderr
