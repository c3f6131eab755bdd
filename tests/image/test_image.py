"""The image the Dockerfile builds, run: ``jet member`` starts as the operator starts it, a
one-member job runs to completion, and every example manifest and ``jet manifest`` output of
the examples runs as it is in the image, with results checked against plain Python.

Needs the image (``$JET_TEST_IMAGE``, see ``tests/image/buildah.py``); ``.ci/run`` builds it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from jet.cli import main
from tests.image import oracles
from tests.image.buildah import Container, image_under_test
from tests.image.oracles import EXAMPLES, ROOT
from tests.image.pod import MemberPod

READY_BOUND_S = 120.0
JOB_BOUND_S = 300.0
RUN_BOUND_S = 600.0


@pytest.fixture(scope="module")
def container() -> Iterator[Container]:
    """One working container of the image for the module (its runs share its file system, as
    processes in one pod would)."""
    box = Container(image_under_test())
    yield box
    box.remove()


def manifest_documents(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the JetJob, the other documents) of a manifest file."""
    documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    (jetjob,) = [doc for doc in documents if doc["kind"] == "JetJob"]
    return jetjob, [doc for doc in documents if doc is not jetjob]


def run_member_pod(container: Container, jetjob: dict[str, Any], documents: list[dict[str, Any]],
                   workdir: Path) -> MemberPod:
    """Run the JetJob's member 0 until its job ends; check it became ready and the job
    completed; return the stopped member (its log and volumes)."""
    pod = MemberPod(container, jetjob, documents, workdir)
    with pod.start() as process:
        pod.wait_until(process, lambda: pod.get("/healthz")[0] == 200, "readiness on /healthz", READY_BOUND_S)
        pod.wait_until(process, lambda: pod.job_counter("completed") + pod.job_counter("failed"),
                       "end of the job", JOB_BOUND_S)
        assert (pod.job_counter("completed"), pod.job_counter("failed")) == (1, 0), pod.log_text()
    return pod


def test_jet_member_runs_the_wordcount_jetjob_as_the_operator_does(container: Container, tmp_path: Path) -> None:
    jetjob, documents = manifest_documents(EXAMPLES / "jetjob-wordcount.yaml")
    pod = run_member_pod(container, jetjob, documents, tmp_path)
    (data,) = [doc for doc in documents if doc["metadata"]["name"] == "wordcount-data"]
    expected = oracles.whitespace_word_counts("".join(data["data"].values()))
    assert dict(oracles.logged_items(pod.log_text(), "logger")) == expected


@pytest.mark.parametrize("example", ["wordcount.py", "wordcount_dag.py", "enrichment.py", "grouped_average.py"])
def test_jet_manifest_of_an_example_runs_in_the_image(container: Container, tmp_path: Path, example: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The member's root file system is read-only, as the operator makes it: an example may
    write only to a volume (/tmp is one). enrichment.py's result is a list sink, which only
    ``jet run`` shows (test_one_member_enrichment_runs_to_completion checks it)."""
    monkeypatch.chdir(ROOT)  # where a user runs `jet manifest examples/...`
    made = CliRunner().invoke(main, ["manifest", f"examples/{example}", "--name", "example"])
    assert made.exit_code == 0, made.output
    pod = run_member_pod(container, yaml.safe_load(made.output), [], tmp_path)
    if example.startswith("wordcount"):
        text = (oracles.DATA / "two-cities.txt").read_text()
        oracles.check_top_words(oracles.logged_ranking(pod.log_text()), oracles.example_word_counts(text), 10)
    if example == "grouped_average.py":
        written = Path(pod.mounts["/tmp"]) / "averages"
        _assert_close(dict(oracles.json_lines(written)), oracles.station_averages())


def _jet_run(container: Container, argv: list[str], **options: Any) -> str:
    done = container.run(["jet", "run", *argv], timeout=RUN_BOUND_S, **options)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_one_member_word_count_runs_to_completion(container: Container) -> None:
    output = _jet_run(container, ["examples/wordcount.py", "--members", "1"])
    (ranking,) = oracles.printed_results(output)["default"]
    text = (oracles.DATA / "two-cities.txt").read_text()
    oracles.check_top_words(ranking, oracles.example_word_counts(text), 10)
    oracles.check_top_words(oracles.logged_ranking(output), oracles.example_word_counts(text), 10)


def test_one_member_dag_word_count_runs_to_completion(container: Container) -> None:
    output = _jet_run(container, ["examples/wordcount_dag.py", "--members", "1"])
    text = (oracles.DATA / "two-cities.txt").read_text()
    oracles.check_top_words(oracles.logged_ranking(output), oracles.example_word_counts(text), 10)


def _assert_close(actual: dict[str, float], expected: dict[str, float]) -> None:
    """Equal keys; values equal up to the examples' rounding to cents (sums in another order)."""
    assert actual.keys() == expected.keys(), (actual, expected)
    for key, value in expected.items():
        assert math.isclose(actual[key], value, abs_tol=0.011), (key, actual[key], value)


def test_one_member_enrichment_runs_to_completion(container: Container) -> None:
    output = _jet_run(container, ["examples/enrichment.py", "--members", "1"])
    _assert_close(dict(oracles.printed_results(output)["default"]), oracles.sector_values())


def test_one_member_grouped_average_runs_to_completion(container: Container) -> None:
    output = _jet_run(container, ["examples/grouped_average.py", "--members", "1"])
    _assert_close(dict(oracles.printed_results(output)["default"]), oracles.station_averages())


def test_spark_jetjob_runs_in_the_image(container: Container, tmp_path: Path) -> None:
    """The Spark example as it is: its pipeline ConfigMap mounted where the operator mounts it,
    its arguments, the image's sample input; /tmp is the pod's emptyDir, so the output is read
    from there. Spark runs in local mode (no Kubernetes here)."""
    jetjob, documents = manifest_documents(EXAMPLES / "jetjob-spark.yaml")
    pipeline = jetjob["spec"]["pipeline"]
    reference = pipeline["configMapRef"]
    (config_map,) = [doc for doc in documents if doc["metadata"]["name"] == reference["name"]]
    code = tmp_path / "pipeline"
    code.mkdir()
    (code / reference["key"]).write_text(config_map["data"][reference["key"]])
    scratch = tmp_path / "tmp"
    scratch.mkdir(mode=0o777)
    scratch.chmod(0o1777)
    _jet_run(container, [f"/etc/jet/pipeline/{reference['key']}", "--entrypoint", pipeline["entrypoint"],
                         "--", *pipeline["args"]],
             mounts={"/etc/jet/pipeline": str(code), "/tmp": str(scratch)}, read_only=["/etc/jet/pipeline"])
    output = pipeline["args"][pipeline["args"].index("--output") + 1]
    assert output.startswith("/tmp/"), output
    table = pq.read_table(scratch / output.removeprefix("/tmp/"))
    totals = dict(zip(table.column("region").to_pylist(), table.column("amount").to_pylist()))
    assert totals == oracles.region_totals()
