"""``jet manifest``: the JetJob it prints is one the API server accepts and the operator can
run as it is (the right entrypoint, Spark drivers when the job uses Spark). Running those
manifests in the image is tests/image/test_image.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from jet.cli import main
from tests.operator.crdschema import EXAMPLES_DIR, ROOT, validator


def manifest(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["manifest", *argv])
    return result.exit_code, result.output


@pytest.fixture(autouse=True)
def _in_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples read examples/data/... from where a user runs them


@pytest.mark.parametrize(("example", "entrypoint", "spark"), [
    ("wordcount.py", "pipeline", False),
    ("wordcount_dag.py", "dag", False),
    ("enrichment.py", "pipeline", False),
    ("grouped_average.py", "pipeline", False),
    ("spark_wordcount.py", "pipeline", True),
    ("stream_wordcount.py", "pipeline", False),
    ("stream_trades.py", "pipeline", False),
    ("stream_sessions.py", "pipeline", False),
    ("stream_enrichment.py", "pipeline", False),
    ("stream_join.py", "pipeline", False),
    ("enrichment_async.py", "pipeline", False),
    ("trade_rankings.py", "pipeline", False),
    ("spark_streaming.py", "pipeline", True),
    ("kafka_wordcount.py", "pipeline", False),
])
def test_manifest_of_each_example_is_valid_and_runnable(example: str, entrypoint: str, spark: bool) -> None:
    code, output = manifest(f"examples/{example}", "--name", "example")
    assert code == 0, output
    document = yaml.safe_load(output)
    assert [error.message for error in validator().iter_errors(document)] == []
    assert document["spec"]["pipeline"]["entrypoint"] == entrypoint
    assert document["spec"]["pipeline"]["code"] == (EXAMPLES_DIR / example).read_text()
    assert ("spark" in document["spec"]) is spark


@pytest.mark.parametrize("example", ["postgres_sink.py", "postgres_cdc.py"])
def test_the_postgres_examples_need_their_server_only_to_run_not_for_a_manifest(example: str) -> None:
    """Their pipeline functions reach the database (postgres_sink makes its table), so the
    manifest is written without loading them: --no-spark."""
    code, output = manifest(f"examples/{example}", "--name", "example", "--no-spark")
    assert code == 0, output
    document = yaml.safe_load(output)
    assert [error.message for error in validator().iter_errors(document)] == []
    assert document["spec"]["pipeline"]["code"] == (EXAMPLES_DIR / example).read_text()
    assert "spark" not in document["spec"]


def test_every_example_is_covered() -> None:
    covered = {"wordcount.py", "wordcount_dag.py", "enrichment.py", "grouped_average.py", "spark_wordcount.py",
               "stream_wordcount.py", "stream_trades.py", "stream_sessions.py", "stream_enrichment.py",
               "stream_join.py", "spark_streaming.py", "kafka_wordcount.py", "postgres_sink.py", "postgres_cdc.py",
               "enrichment_async.py", "trade_rankings.py"}
    assert {path.name for path in EXAMPLES_DIR.glob("*.py")} == covered


def test_spark_drivers_can_be_forced_either_way() -> None:
    code, output = manifest("examples/wordcount.py", "--name", "wc", "--spark")
    assert code == 0 and yaml.safe_load(output)["spec"]["spark"] == {}
    code, output = manifest("examples/spark_wordcount.py", "--name", "wc", "--no-spark")
    assert code == 0 and "spark" not in yaml.safe_load(output)["spec"]


def test_a_file_that_cannot_be_loaded_is_a_usage_error_unless_told_what_it_is(tmp_path: Path) -> None:
    job = tmp_path / "needs_the_image.py"
    job.write_text("import package_only_in_the_image\n\ndef dag():\n    ...\n")
    code, output = manifest(str(job), "--name", "x")
    assert code == 2
    assert "cannot load" in output and "ModuleNotFoundError" in output and "--no-spark" in output
    code, output = manifest(str(job), "--name", "x", "--no-spark")
    assert code == 0, output
    assert yaml.safe_load(output)["spec"]["pipeline"]["entrypoint"] == "dag"


def test_a_name_kubernetes_refuses_is_a_usage_error_naming_it() -> None:
    code, output = manifest("examples/wordcount.py", "--name", "My_Join")
    assert code == 2, output
    assert "Invalid value for '--name'" in output and "'My_Join'" in output and "'my-join'" in output
    code, output = manifest("examples/wordcount.py", "--name", "x" * 46)
    assert code == 2 and "at most 45" in output, output
