"""The CRD's schema accepts good JetJobs and refuses bad ones, as a strict API server would."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from jet.jetjob_manifest import build_jetjob_manifest

from tests.operator.crdschema import (
    CHART_CRD_FILE,
    CRD_FILE,
    EXAMPLES_DIR,
    cel_errors,
    jetjobs_in,
    load_crd,
    openapi_schema,
    validator,
)

GOOD: dict[str, Any] = {
    "apiVersion": "jet.dev/v1alpha1",
    "kind": "JetJob",
    "metadata": {"name": "wc"},
    "spec": {
        "image": "jet:1",
        "pipeline": {"code": "def pipeline(): ...", "entrypoint": "pipeline", "args": ["a"]},
        "members": {"replicas": 3, "resources": {"requests": {"cpu": "500m", "memory": 1024}},
                    "podTemplate": {"spec": {"nodeSelector": {"disk": "ssd"}, "anything": [1]}}},
        "cooperativeThreads": 2,
        "edgeDefaults": {"queueSize": 1024, "packetSizeLimit": 16384, "receiveWindowMultiplier": 3},
        "flowControlPeriodMillis": 100,
        "spark": {"image": "spark:1", "executor": {"instances": 2, "cores": 1, "memory": "2g"},
                  "conf": {"spark.sql.shuffle.partitions": "8"}},
        "restartPolicy": {"type": "OnFailure", "maxRetries": 0, "backoffSeconds": 0},
        "suspend": True,
        "tls": {"enabled": False},
        "processingGuarantee": "exactly-once",
        "snapshotIntervalSeconds": 0.5,
        "snapshotStorage": {"url": "s3://snapshots/wc", "credentialsSecret": "s3-creds",
                            "endpoint": "http://minio:9000"},
        "initialSnapshotName": "wc-g3",
        "upgradeMode": "savepoint",
        "ttlSecondsAfterFinished": 0,
    },
}


def _errors(document: dict[str, Any]) -> list[str]:
    return [error.message for error in validator().iter_errors(document)]


def _with(path: str, value: Any) -> dict[str, Any]:
    document = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node = document
    for key in parents:
        node = node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return document


_DELETE = object()


def test_good_manifest_is_accepted() -> None:
    assert _errors(GOOD) == []


def test_minimal_manifest_is_accepted() -> None:
    assert _errors({"apiVersion": "jet.dev/v1alpha1", "kind": "JetJob", "metadata": {"name": "x"},
                    "spec": {"pipeline": {"path": "/app/p.py"}}}) == []


@pytest.mark.parametrize("example", sorted(EXAMPLES_DIR.glob("jetjob-*.yaml")), ids=lambda p: p.name)
def test_examples_are_accepted(example) -> None:
    jetjobs = jetjobs_in(example)
    assert jetjobs, f"{example} has no JetJob"
    for document in jetjobs:
        assert _errors(document) == []


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("spec.pipeline", _DELETE, "'pipeline' is a required property"),
        ("spec.pipeline", {"entrypoint": "pipeline"}, "is not valid under any of the given schemas"),
        ("spec.pipeline", {"code": "x", "path": "/p.py"}, "is valid under each of"),
        ("spec.pipeline", {"configMapRef": {"name": "cm"}, "path": "/p.py"}, "is valid under each of"),
        ("spec.members.replicas", -1, "-1 is less than the minimum of 1"),
        ("spec.members.replicas", 0, "0 is less than the minimum of 1"),
        ("spec.members.replicas", "two", "'two' is not of type 'integer'"),
        ("spec.restartPolicy.type", "Sometimes", "'Sometimes' is not one of"),
        ("spec.restartPolicy.maxRetries", -1, "less than the minimum of 0"),
        ("spec.members.replica", 2, "Additional properties are not allowed ('replica' was unexpected)"),
        ("spec.replicas", 2, "Additional properties are not allowed ('replicas' was unexpected)"),
        ("spec.suspend", "yes", "'yes' is not of type 'boolean'"),
        ("spec.state", "suspended", "Additional properties are not allowed ('state' was unexpected)"),
        ("spec.processingGuarantee", "EXACTLY_ONCE", "'EXACTLY_ONCE' is not one of ['none', 'at-least-once', 'exactly-once']"),
        ("spec.snapshotIntervalSeconds", 0, "0 is less than or equal to the minimum of 0"),
        ("spec.snapshotIntervalSeconds", -1, "-1 is less than or equal to the minimum of 0"),
        ("spec.snapshotIntervalSeconds", "1s", "'1s' is not of type 'number'"),
        ("spec.upgradeMode", "snapshot", "'snapshot' is not one of ['stateless', 'savepoint', 'last-state']"),
        ("spec.initialSnapshotName", "", "should be non-empty"),
        ("spec.snapshotStorage", {}, "is not valid under any of the given schemas"),
        ("spec.snapshotStorage", {"url": "s3://b", "persistentVolumeClaim": {"claimName": "c"}},
         "is valid under each of"),
        ("spec.snapshotStorage", {"url": "bucket/prefix"}, "does not match"),
        ("spec.snapshotStorage", {"persistentVolumeClaim": {}}, "'claimName' is a required property"),
        ("spec.snapshotStorage", {"persistentVolumeClaim": {"claimName": "c"}, "path": "/abs"}, "does not match"),
        ("spec.snapshotStorage", {"url": "s3://b", "bucket": "b"}, "'bucket' was unexpected"),
        ("spec.cooperativeThreads", 0, "less than the minimum of 1"),
        ("spec.edgeDefaults.queueSize", "big", "'big' is not of type 'integer'"),
        ("spec.edgeDefaults.queuesize", 10, "'queuesize' was unexpected"),
        ("spec.flowControlPeriodMillis", 0, "less than the minimum of 1"),
        ("spec.spark.conf", {"spark.x": 1}, "1 is not of type 'string'"),
        ("spec.spark.executor.instances", 0, "less than the minimum of 1"),
        ("spec.pipeline.args", ["ok", 3], "3 is not of type 'string'"),
        ("spec.imagePullPolicy", "Sometimes", "'Sometimes' is not one of"),
        ("spec.tls.enabled", "no", "'no' is not of type 'boolean'"),
        ("spec.tls.enable", False, "Additional properties are not allowed ('enable' was unexpected)"),
        ("spec.tls", True, "True is not of type 'object'"),
        ("spec.ttlSecondsAfterFinished", -1, "-1 is less than the minimum of 0"),
        ("spec.ttlSecondsAfterFinished", "5m", "'5m' is not of type 'integer'"),
    ],
)
def test_bad_manifest_is_refused(path: str, value: Any, expected: str) -> None:
    errors = _errors(_with(path, value))
    assert any(expected in error for error in errors), errors


def test_tls_is_on_by_default() -> None:
    tls = openapi_schema()["properties"]["spec"]["properties"]["tls"]
    assert tls["default"] == {} and tls["properties"]["enabled"]["default"] is True


def test_crd_names_and_subresources() -> None:
    crd = load_crd()
    assert crd["metadata"]["name"] == "jetjobs.jet.dev"
    names = crd["spec"]["names"]
    assert (names["kind"], names["plural"], names["shortNames"]) == ("JetJob", "jetjobs", ["jjob"])
    version = crd["spec"]["versions"][0]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.members.replicas",
            "statusReplicasPath": ".status.members.ready",
            "labelSelectorPath": ".status.selector",
        },
    }
    columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
    assert list(columns) == ["Phase", "Members", "Restarts", "Last Snapshot", "Start", "Finish", "Attempts", "Age",
                             "Result", "Dashboard", "Message"]
    assert {name: (c["jsonPath"], c["type"]) for name, c in columns.items() if name in ("Start", "Finish")} == {
        "Start": (".status.startTime", "date"), "Finish": (".status.completionTime", "date")}
    assert columns["Result"]["jsonPath"] == ".status.result.summary" and columns["Result"]["priority"] == 1
    assert columns["Dashboard"]["jsonPath"] == ".status.dashboard.url" and columns["Dashboard"]["priority"] == 1
    assert columns["Members"]["jsonPath"] == ".status.membersReady"
    assert columns["Restarts"]["jsonPath"] == ".status.restarts"
    assert (columns["Last Snapshot"]["jsonPath"], columns["Last Snapshot"]["type"]) == (
        ".status.lastSnapshot.time", "date")
    assert columns["Message"]["priority"] == 1 and columns["Attempts"]["priority"] == 1


def test_cel_rules_accept_the_good_manifest_and_a_job_without_state() -> None:
    assert cel_errors(GOOD) == []
    minimal = {"spec": {"pipeline": {"path": "/p.py"}, "processingGuarantee": "none", "upgradeMode": "stateless"}}
    assert cel_errors(minimal) == []
    on_a_volume = _with("spec.snapshotStorage", {"persistentVolumeClaim": {"claimName": "c"}, "path": "jobs/wc"})
    assert cel_errors(on_a_volume) == [] and _errors(on_a_volume) == []


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("spec.snapshotStorage", _DELETE,
         "spec.processingGuarantee at-least-once/exactly-once needs spec.snapshotStorage"),
        ("spec.snapshotStorage", _DELETE, "spec.upgradeMode savepoint/last-state needs spec.snapshotStorage"),
        ("spec.snapshotStorage", _DELETE, "spec.initialSnapshotName needs spec.snapshotStorage"),
        ("spec.snapshotStorage", {"url": "s3://b/p", "path": "x"},
         "snapshotStorage.path is a directory in the persistentVolumeClaim"),
        ("spec.snapshotStorage", {"persistentVolumeClaim": {"claimName": "c"}, "endpoint": "http://s3"},
         "snapshotStorage.credentialsSecret and endpoint go with url"),
        ("spec.snapshotStorage", {"persistentVolumeClaim": {"claimName": "c"}, "path": "a/../../etc"},
         "snapshotStorage.path must stay inside the volume"),
    ],
)
def test_cel_rules_refuse_state_without_storage_and_misplaced_fields(path: str, value: Any, expected: str) -> None:
    errors = cel_errors(_with(path, value))
    assert any(expected in error for error in errors), errors


@pytest.mark.parametrize(("name", "expected"), [
    ("My_Join", "metadata.name My_Join is not a DNS label"),
    ("wc.v2", "metadata.name wc.v2 is not a DNS label"),
    ("1st", "metadata.name 1st is not a DNS label"),
    ("a" * 46, f"metadata.name {'a' * 46} is longer than 45 characters"),
])
def test_cel_rules_refuse_a_name_kubernetes_cannot_give_the_children(name: str, expected: str) -> None:
    errors = cel_errors(_with("metadata.name", name))
    assert any(expected in error for error in errors), errors


def test_cel_rules_accept_dns_label_names() -> None:
    for name in ("wc", "my-join", "a" * 45, "job-2"):
        assert cel_errors(_with("metadata.name", name)) == [], name


def _walk(node: Any, path: str = ""):
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{path}[{index}]")


def test_schema_is_structural() -> None:
    """The rules of a structural schema that Kubernetes checks when the CRD is created."""
    schema = openapi_schema()
    for path, node in _walk(schema):
        if path.endswith(("oneOf", "anyOf")) or "oneOf[" in path or "anyOf[" in path:
            continue
        assert not ("properties" in node and "additionalProperties" in node), path
        assert node.get("additionalProperties") is not False, path
        if path.endswith(".properties"):
            for name, child in node.items():
                assert "type" in child or child.get("x-kubernetes-int-or-string"), f"{path}.{name}"
    # Only podTemplate keeps unknown fields; spec itself is strict.
    preserving = [p for p, n in _walk(schema) if n.get("x-kubernetes-preserve-unknown-fields")]
    assert preserving == [".properties.spec.properties.members.properties.podTemplate"]
    for junctor in schema["properties"]["spec"]["properties"]["pipeline"]["oneOf"]:
        assert set(junctor) == {"required"}


def test_chart_ships_the_same_crd() -> None:
    assert CHART_CRD_FILE.read_bytes() == CRD_FILE.read_bytes()


def test_manifest_command_output_validates(tmp_path) -> None:
    pipeline_file = tmp_path / "wordcount.py"
    pipeline_file.write_text("from jet import Pipeline\n\ndef main(n):\n    return Pipeline.create()\n")
    text = build_jetjob_manifest(str(pipeline_file), "wc", replicas=3, image="jet:dev",
                                 entrypoint="main", args=["10"])
    document = yaml.safe_load(text)
    assert _errors(document) == []
    assert document["metadata"]["name"] == "wc"
    assert document["spec"]["pipeline"] == {
        "code": pipeline_file.read_text(), "entrypoint": "main", "args": ["10"]
    }
    assert document["spec"]["members"]["replicas"] == 3
    assert document["spec"]["image"] == "jet:dev"
    assert "code: |" in text  # the code stays readable


@pytest.mark.parametrize("name", ["My_Join", "wc.v2", "-wc", "a" * 46, ""])
def test_manifest_refuses_a_name_kubernetes_would_refuse(tmp_path, name: str) -> None:
    pipeline_file = tmp_path / "p.py"
    pipeline_file.write_text("x = 1\n")
    with pytest.raises(ValueError, match="JetJob name|must not be empty") as raised:
        build_jetjob_manifest(str(pipeline_file), name)
    assert repr(name) in str(raised.value) or not name


def test_manifest_refuses_zero_replicas(tmp_path) -> None:
    pipeline_file = tmp_path / "p.py"
    pipeline_file.write_text("x = 1\n")
    with pytest.raises(ValueError):
        build_jetjob_manifest(str(pipeline_file), "p", replicas=0)
