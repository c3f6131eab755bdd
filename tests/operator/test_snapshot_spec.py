"""The fault-tolerance fields of a JetJob: how they are read, checked, and turned into the
members' arguments, environment and volumes; what the status shows of ``/job``."""

from __future__ import annotations

from typing import Any

import click
import pytest

from jet import cli as jet_cli

from jet_operator.builders import JobRef, build_statefulset, member_args
from jet_operator.generations import savepoint_name
from jet_operator.lifecycle import JobReport
from jet_operator.spec import parse_spec, spec_problems
from tests.operator.crdschema import EXAMPLES_DIR, cel_errors, jetjobs_in

JOB = JobRef(name="trades", namespace="jobs", uid="uid-1", generation=7)
PIPELINE = {"code": "def pipeline(): ...\n"}
S3 = {"url": "s3://snapshots/trades", "credentialsSecret": "s3-creds", "endpoint": "http://minio:9000"}


def _member(spec: dict[str, Any], initial_snapshot: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    pod_spec = build_statefulset(JOB, parse_spec(spec), replicas=2,
                                 initial_snapshot=initial_snapshot)["spec"]["template"]["spec"]
    (member,) = pod_spec["containers"]
    return pod_spec, member


def _option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def test_defaults_keep_no_state() -> None:
    spec = parse_spec({"pipeline": PIPELINE})
    assert (spec.processing_guarantee, spec.snapshot_interval_seconds, spec.snapshot_storage,
            spec.initial_snapshot_name, spec.upgrade_mode, spec.suspended) == (
        "none", 10.0, None, None, "stateless", False)
    assert spec_problems(spec) == []
    _, member = _member({"pipeline": PIPELINE})
    assert not {"--processing-guarantee", "--snapshot-interval", "--initial-snapshot-name"} & set(member["args"])
    assert not [e for e in member["env"] if e["name"].startswith(("JET_SNAPSHOT", "AWS_"))]


def test_a_guarantee_becomes_member_flags_the_member_command_accepts(tmp_path) -> None:
    spec = {"pipeline": PIPELINE, "processingGuarantee": "exactly-once", "snapshotIntervalSeconds": 0.25,
            "snapshotStorage": S3}
    _, member = _member(spec, initial_snapshot="trades-g6")
    args = member["args"]
    assert _option(args, "--processing-guarantee") == "exactly-once"
    assert _option(args, "--snapshot-interval") == "250ms"
    assert _option(args, "--initial-snapshot-name") == "trades-g6"
    assert _option(args, "--job-name") == "trades"
    assert args.index("--initial-snapshot-name") < len(args) - 1 and "--" not in args
    # `jet member` parses them (its --config and --pipeline files must exist: stand-ins here).
    parsed = list(args[1:])
    for option in ("--config", "--pipeline"):
        stand_in = tmp_path / option.strip("-")
        stand_in.write_text("")
        parsed[parsed.index(option) + 1] = str(stand_in)
    params = jet_cli.member.make_context("member", parsed).params
    assert (params["guarantee"], params["snapshot_interval"], params["initial_snapshot_name"],
            params["job_name"]) == ("exactly-once", 0.25, "trades-g6", "trades")


def test_user_args_stay_last_after_the_snapshot_flags() -> None:
    spec = parse_spec({"pipeline": {**PIPELINE, "args": ["--rate", "5"]}, "processingGuarantee": "at-least-once",
                       "snapshotStorage": S3})
    args = member_args(JOB, spec, "from-here")
    assert args[-3:] == ["--", "--rate", "5"]
    assert _option(args, "--snapshot-interval") == "10000ms"


def test_an_object_store_reaches_the_members_as_url_endpoint_and_credentials() -> None:
    _, member = _member({"pipeline": PIPELINE, "processingGuarantee": "exactly-once", "snapshotStorage": S3})
    env = {e["name"]: e for e in member["env"]}
    assert env["JET_SNAPSHOT_STORE"]["value"] == "s3://snapshots/trades"
    assert env["JET_SNAPSHOT_STORE_ENDPOINT"]["value"] == "http://minio:9000"
    for key, optional in [("AWS_ACCESS_KEY_ID", False), ("AWS_SECRET_ACCESS_KEY", False),
                          ("AWS_DEFAULT_REGION", True), ("AWS_SESSION_TOKEN", True)]:
        reference = env[key]["valueFrom"]["secretKeyRef"]
        assert (reference["name"], reference["key"], reference.get("optional", False)) == ("s3-creds", key, optional)
    assert "/var/lib/jet/snapshots" not in {m["mountPath"] for m in member["volumeMounts"]}


@pytest.mark.parametrize(("path", "url"), [(None, "/var/lib/jet/snapshots"),
                                           ("jobs/trades/", "/var/lib/jet/snapshots/jobs/trades")])
def test_a_claim_is_mounted_in_every_member_and_named_as_the_store(path: str | None, url: str) -> None:
    storage: dict[str, Any] = {"persistentVolumeClaim": {"claimName": "snapshots"}}
    if path is not None:
        storage["path"] = path
    pod_spec, member = _member({"pipeline": PIPELINE, "processingGuarantee": "at-least-once",
                                "snapshotStorage": storage})
    (mount,) = [m for m in member["volumeMounts"] if m["mountPath"] == "/var/lib/jet/snapshots"]
    (volume,) = [v for v in pod_spec["volumes"] if v["name"] == mount["name"]]
    assert volume["persistentVolumeClaim"] == {"claimName": "snapshots"}
    assert not mount.get("readOnly")
    env = {e["name"]: e.get("value") for e in member["env"]}
    assert env["JET_SNAPSHOT_STORE"] == url
    assert "AWS_ACCESS_KEY_ID" not in env and "JET_SNAPSHOT_STORE_ENDPOINT" not in env


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"processingGuarantee": "exactly-once"}, "spec.processingGuarantee 'exactly-once' needs spec.snapshotStorage"),
        ({"upgradeMode": "savepoint"}, "spec.upgradeMode 'savepoint' needs spec.snapshotStorage"),
        ({"upgradeMode": "last-state"}, "spec.upgradeMode 'last-state' needs spec.snapshotStorage"),
        ({"initialSnapshotName": "x"}, "spec.initialSnapshotName needs spec.snapshotStorage"),
    ],
)
def test_state_without_a_store_is_a_problem_naming_the_field(spec: dict[str, Any], expected: str) -> None:
    problems = spec_problems(parse_spec({"pipeline": PIPELINE, **spec}))
    assert any(problem.startswith(expected) for problem in problems), problems


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"processingGuarantee": "EXACTLY_ONCE"},
         "spec.processingGuarantee must be one of none, at-least-once, exactly-once; got 'EXACTLY_ONCE'"),
        ({"upgradeMode": "snapshot"}, "spec.upgradeMode must be one of stateless, savepoint, last-state"),
        ({"snapshotIntervalSeconds": 0}, "spec.snapshotIntervalSeconds must be a number > 0, got 0"),
        ({"snapshotIntervalSeconds": "1s"}, "spec.snapshotIntervalSeconds must be a number > 0, got '1s'"),
        ({"suspend": "yes"}, "spec.suspend must be true or false, got 'yes'"),
        ({"snapshotStorage": {}}, "spec.snapshotStorage needs exactly one of url and persistentVolumeClaim"),
        ({"snapshotStorage": {**S3, "persistentVolumeClaim": {"claimName": "c"}}},
         "spec.snapshotStorage needs exactly one of url and persistentVolumeClaim"),
        ({"snapshotStorage": {"persistentVolumeClaim": {"claimName": "c"}, "path": "a/../.."}},
         "spec.snapshotStorage.path must stay inside the volume"),
    ],
)
def test_bad_values_are_refused_with_the_field_and_what_was_expected(spec: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_spec({"pipeline": PIPELINE, **spec})
    assert expected in str(raised.value)


def test_savepoints_are_named_after_the_job_and_the_generation_they_come_from() -> None:
    assert savepoint_name(JOB, 6) == "trades-g6"


def test_the_status_shows_the_jobs_restarts_and_last_snapshot() -> None:
    report = JobReport.of({
        "jobId": "j1", "status": "RUNNING", "restarts": 2, "lastRestartCause": "member 1 lost",
        "processingGuarantee": "EXACTLY_ONCE", "snapshotCount": 9,
        "lastSnapshot": {"id": 12, "time": 1_700_000_000_000, "bytes": 2048, "keys": 40, "durationMs": 35},
    })
    assert report.status_fields() == {
        "restarts": 2, "lastRestartCause": "member 1 lost", "processingGuarantee": "EXACTLY_ONCE",
        "snapshotCount": 9,
        "lastSnapshot": {"id": 12, "time": "2023-11-14T22:13:20Z", "bytes": 2048, "keys": 40, "durationMs": 35},
    }
    before = JobReport.of({"jobId": "j1", "status": "RUNNING", "lastSnapshot": None})
    assert before.status_fields() == {"restarts": 0, "lastRestartCause": None, "processingGuarantee": None,
                                      "snapshotCount": 0}
    iso = JobReport.of({"jobId": "j1", "lastSnapshot": {"id": 1, "time": "2026-01-02T03:04:05Z", "bytes": 1}})
    assert iso.status_fields()["lastSnapshot"] == {"id": 1, "time": "2026-01-02T03:04:05Z", "bytes": 1}


@pytest.mark.parametrize("example", sorted(EXAMPLES_DIR.glob("jetjob-*.yaml")), ids=lambda p: p.name)
def test_examples_pass_the_crds_cel_rules_and_the_operators_checks(example) -> None:
    for document in jetjobs_in(example):
        assert cel_errors(document) == []
        assert spec_problems(parse_spec(document["spec"])) == []


def test_the_exactly_once_example_builds_its_pipeline_and_mounts_its_claims(tmp_path) -> None:
    (document,) = jetjobs_in(EXAMPLES_DIR / "jetjob-exactly-once.yaml")
    spec = parse_spec(document["spec"])
    assert (spec.processing_guarantee, spec.upgrade_mode, spec.snapshot_storage.store_url) == (
        "exactly-once", "savepoint", "/var/lib/jet/snapshots/trades")
    namespace: dict[str, Any] = {}
    exec(compile(spec.pipeline.code, "main.py", "exec"), namespace)  # noqa: S102 - our own example
    pipeline = namespace[spec.pipeline.entrypoint](str(tmp_path), *spec.pipeline.args[1:])
    assert pipeline.to_dag().is_streaming
    pod_spec, member = _member(document["spec"])
    claims = {v["persistentVolumeClaim"]["claimName"] for v in pod_spec["volumes"] if "persistentVolumeClaim" in v}
    assert claims == {"jet-snapshots", "trades-output"}
    assert {"/var/lib/jet/snapshots", "/data/output"} <= {m["mountPath"] for m in member["volumeMounts"]}
