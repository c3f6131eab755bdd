"""Every object the operator sends to the API server, built without a cluster."""

from __future__ import annotations

from typing import Any

import click
import pytest
import yaml

from jet import cli as jet_cli

from jet_operator import constants, naming
from jet_operator.builders import (
    JobRef,
    build_headless_service,
    build_member_config,
    build_pipeline_config_map,
    build_statefulset,
    build_token_secret,
    member_args,
    new_cluster_token,
)
from jet_operator.children import build_children
from jet_operator.config import OperatorConfig
from jet_operator.podmerge import merge_pod_template
from jet_operator.spark import (
    build_spark_driver_pod,
    build_spark_role,
    build_spark_role_binding,
    build_spark_service_account,
    spark_driver_args,
)
from jet_operator.spec import parse_spec

JOB = JobRef(name="wc", namespace="jobs", uid="uid-1", generation=4)
INLINE = parse_spec({"image": "jet:1", "pipeline": {"code": "def pipeline(): ...\n"},
                     "members": {"replicas": 3}})


def _owner_ok(obj: dict[str, Any]) -> None:
    assert obj["metadata"]["namespace"] == "jobs"
    assert obj["metadata"]["ownerReferences"] == [{
        "apiVersion": "jet.dev/v1alpha1", "kind": "JetJob", "name": "wc", "uid": "uid-1",
        "controller": True, "blockOwnerDeletion": True,
    }]


def _container(pod_spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in pod_spec["containers"] if c["name"] == name)


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_labels_are_the_recommended_set_plus_ours() -> None:
    assert naming.labels("wc", "member") == {
        "app.kubernetes.io/name": "jet",
        "app.kubernetes.io/instance": "wc",
        "app.kubernetes.io/component": "member",
        "app.kubernetes.io/managed-by": "jet-operator",
        "app.kubernetes.io/part-of": "jet",
        "jet.dev/jetjob-name": "wc",
        "jet.dev/component": "member",
    }


def test_token_secret() -> None:
    token = new_cluster_token()
    assert len(token) >= 32 and token != new_cluster_token()
    secret = build_token_secret(JOB, token)
    _owner_ok(secret)
    assert secret["metadata"]["name"] == "wc-token"
    assert secret["stringData"] == {"token": token}
    assert secret["metadata"]["labels"]["jet.dev/jetjob-name"] == "wc"


def test_member_config_renders_engine_settings() -> None:
    spec = parse_spec({"pipeline": {"path": "/p.py"}, "cooperativeThreads": 3,
                       "flowControlPeriodMillis": 50,
                       "edgeDefaults": {"queueSize": 64, "packetSizeLimit": 1000}})
    config_map = build_member_config(JOB, spec)
    _owner_ok(config_map)
    assert config_map["metadata"]["name"] == "wc-config"
    assert yaml.safe_load(config_map["data"]["member.yaml"]) == {
        "cooperative_threads": 3,
        "flow_control_period_ms": 50,
        "edge_defaults": {"queue_size": 64, "packet_size_limit": 1000, "receive_window_multiplier": 3},
    }
    default = yaml.safe_load(build_member_config(JOB, INLINE)["data"]["member.yaml"])
    assert "cooperative_threads" not in default and default["flow_control_period_ms"] == 100


def test_pipeline_config_map_only_for_inline_code() -> None:
    config_map = build_pipeline_config_map(JOB, INLINE)
    _owner_ok(config_map)
    assert config_map["metadata"]["name"] == "wc-pipeline"
    assert config_map["data"] == {"main.py": "def pipeline(): ...\n"}
    assert build_pipeline_config_map(JOB, parse_spec({"pipeline": {"path": "/p.py"}})) is None


def test_headless_service() -> None:
    service = build_headless_service(JOB)
    _owner_ok(service)
    assert service["metadata"]["name"] == "wc-member"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"] == {"jet.dev/jetjob-name": "wc", "jet.dev/component": "member"}
    assert {p["name"]: p["port"] for p in service["spec"]["ports"]} == {"jet": 5701, "http": 8080}


def test_statefulset_runs_members_together() -> None:
    sts = build_statefulset(JOB, INLINE, replicas=3, attempt=2)
    _owner_ok(sts)
    spec = sts["spec"]
    assert sts["metadata"]["name"] == "wc-member"
    assert spec["serviceName"] == "wc-member"
    assert spec["replicas"] == 3
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["updateStrategy"] == {"type": "OnDelete"}
    template = spec["template"]
    assert spec["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    assert template["metadata"]["annotations"] == {"jet.dev/generation": "4", "jet.dev/attempt": "2"}
    assert build_statefulset(JOB, INLINE, replicas=0)["spec"]["replicas"] == 0


def test_member_container_follows_the_member_contract() -> None:
    pod_spec = build_statefulset(JOB, INLINE, replicas=3)["spec"]["template"]["spec"]
    member = _container(pod_spec, "member")
    assert member["image"] == "jet:1"
    assert member["command"] == ["jet"]
    assert member["args"] == [
        "member", "--port", "5701", "--http-port", "8080",
        "--peers", "dns:wc-member-{i}.wc-member.jobs.svc.cluster.local:5701",
        "--replicas", "3", "--config", "/etc/jet/member.yaml",
        "--pipeline", "/etc/jet/pipeline/main.py", "--entrypoint", "pipeline",
    ]
    env = _env(member)
    assert env["PYTHONHASHSEED"] == "0"
    assert env["JET_CLUSTER_TOKEN_FILE"] == "/var/run/jet/token/token"
    assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    for probe in ("readinessProbe", "livenessProbe"):
        assert member[probe]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert {p["name"]: p["containerPort"] for p in member["ports"]} == {"jet": 5701, "http": 8080}
    mounts = {m["mountPath"]: m for m in member["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    assert volumes[mounts["/var/run/jet/token"]["name"]]["secret"]["secretName"] == "wc-token"
    assert mounts["/etc/jet/member.yaml"]["subPath"] == "member.yaml"
    assert volumes[mounts["/etc/jet/member.yaml"]["name"]]["configMap"]["name"] == "wc-config"
    assert volumes[mounts["/etc/jet/pipeline"]["name"]]["configMap"]["name"] == "wc-pipeline"
    assert member["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    assert pod_spec["automountServiceAccountToken"] is False


def test_pipeline_from_config_map_ref_and_from_image() -> None:
    spec = parse_spec({"pipeline": {"configMapRef": {"name": "code", "key": "job.py"},
                                    "entrypoint": "main", "args": ["--n", "5"]}})
    pod_spec = build_statefulset(JOB, spec, replicas=2)["spec"]["template"]["spec"]
    member = _container(pod_spec, "member")
    assert member["args"][-7:] == ["--pipeline", "/etc/jet/pipeline/job.py", "--entrypoint", "main",
                                   "--", "--n", "5"]
    pipeline = next(v for v in pod_spec["volumes"] if v["name"] == "pipeline")
    assert pipeline["configMap"] == {"name": "code", "items": [{"key": "job.py", "path": "job.py"}]}

    in_image = parse_spec({"pipeline": {"path": "/app/job.py"}})
    pod_spec = build_statefulset(JOB, in_image, replicas=2)["spec"]["template"]["spec"]
    assert "/app/job.py" in _container(pod_spec, "member")["args"]
    assert all(v["name"] != "pipeline" for v in pod_spec["volumes"])


def test_member_resources_and_service_account() -> None:
    spec = parse_spec({"pipeline": {"path": "/p.py"}, "serviceAccountName": "runner",
                       "members": {"resources": {"limits": {"memory": "1Gi"}}}})
    pod_spec = build_statefulset(JOB, spec, replicas=2, service_account="runner")["spec"]["template"]["spec"]
    assert _container(pod_spec, "member")["resources"] == {"limits": {"memory": "1Gi"}}
    assert pod_spec["serviceAccountName"] == "runner"
    assert "automountServiceAccountToken" not in pod_spec


def test_pod_template_is_merged_over_the_defaults() -> None:
    spec = parse_spec({"pipeline": {"path": "/p.py"}, "members": {"podTemplate": {
        "metadata": {"labels": {"team": "data", "jet.dev/component": "hijack"},
                     "annotations": {"jet.dev/attempt": "99", "note": "x"}},
        "spec": {
            "nodeSelector": {"disk": "ssd"},
            "containers": [
                {"name": "member", "env": [{"name": "EXTRA", "value": "1"},
                                           {"name": "PYTHONUNBUFFERED", "value": "0"}]},
                {"name": "sidecar", "image": "busybox"},
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }}})
    template = build_statefulset(JOB, spec, replicas=2)["spec"]["template"]
    pod_spec = template["spec"]
    assert pod_spec["nodeSelector"] == {"disk": "ssd"}
    assert [c["name"] for c in pod_spec["containers"]] == ["member", "sidecar"]
    env = _env(_container(pod_spec, "member"))
    assert env["EXTRA"] == "1" and env["PYTHONUNBUFFERED"] == "0" and env["PYTHONHASHSEED"] == "0"
    assert _container(pod_spec, "member")["image"] == constants.DEFAULT_IMAGE
    assert {"token", "config", "data"} <= {v["name"] for v in pod_spec["volumes"]}
    assert template["metadata"]["labels"]["team"] == "data"
    assert template["metadata"]["labels"]["jet.dev/component"] == "member"  # selector is ours
    assert template["metadata"]["annotations"]["jet.dev/attempt"] == "0"
    assert template["metadata"]["annotations"]["note"] == "x"


def test_merge_pod_template_leaves_its_inputs_alone() -> None:
    defaults = {"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]}}
    overrides = {"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "2"}]}]}}
    merged = merge_pod_template(defaults, overrides)
    assert merged["spec"]["containers"][0]["env"] == [{"name": "X", "value": "2"}]
    assert defaults["spec"]["containers"][0]["env"] == [{"name": "X", "value": "1"}]


SPARK = parse_spec({
    "image": "jet:1",
    "pipeline": {"code": "x", "entrypoint": "build", "args": ["in"]},
    "members": {"replicas": 2},
    "spark": {"image": "jet-spark:1", "executor": {"instances": 4, "cores": 2, "memory": "3g"},
              "driver": {"resources": {"requests": {"cpu": "1"}}},
              "conf": {"spark.sql.shuffle.partitions": "8", "spark.executor.memory": "5g"}},
})


JOB_ID = "0a1b-2c3d-4e5f-6789"


def _parse_driver_args(args: list[str]) -> click.Context:
    """Parse a driver container's arguments with the ``jet`` command the image runs."""
    command = jet_cli.main.get_command(click.Context(jet_cli.main), args[0])
    assert command is not None, f"jet has no command {args[0]!r}"
    return command.make_context(f"jet {args[0]}", list(args[1:]))


def _defaulted(context: click.Context) -> set[str]:
    return {name for name in context.params
            if context.get_parameter_source(name) == click.core.ParameterSource.DEFAULT}


@pytest.mark.parametrize("component", ["spark-source", "spark-sink"])
def test_spark_driver_args_are_what_the_driver_command_needs(component: str) -> None:
    context = _parse_driver_args(spark_driver_args(JOB, SPARK, component, "wc-spark", JOB_ID))
    params = context.params
    # The driver finds the job's Spark vertices by its id: it must be the running job's.
    assert params["job_id"] == JOB_ID
    assert params["members"].split(",") == naming.member_addresses("wc", "jobs", 2)
    assert params["pipeline_file"] == "/etc/jet/pipeline/main.py"
    assert params["entrypoint"] == "build"
    assert params["token_file"] == constants.TOKEN_FILE
    assert params["master"] == constants.SPARK_MASTER
    assert params["args"] == ("in",)
    # Nothing the job depends on is left to the command's defaults.
    assert _defaulted(context) <= {"ready_timeout"}, _defaulted(context)
    conf = dict(entry.split("=", 1) for entry in params["confs"])
    assert conf["spark.kubernetes.container.image"] == "jet-spark:1"
    assert conf["spark.executor.instances"] == "4"
    assert conf["spark.executor.cores"] == "2"
    assert conf["spark.executor.memory"] == "5g"  # the user's conf wins
    assert conf["spark.sql.shuffle.partitions"] == "8"
    assert conf["spark.kubernetes.namespace"] == "jobs"
    assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == "wc-spark"
    assert conf["spark.kubernetes.driver.pod.name"] == "$(POD_NAME)"
    assert conf["spark.executorEnv.PYTHONHASHSEED"] == "0"


def test_spark_driver_args_refuse_an_empty_job_id() -> None:
    with pytest.raises(ValueError, match="job id"):
        spark_driver_args(JOB, SPARK, "spark-source", "wc-spark", "")


def test_spark_driver_pod() -> None:
    pod = build_spark_driver_pod(JOB, SPARK, "spark-sink", "wc-spark", JOB_ID, attempt=1)
    _owner_ok(pod)
    assert pod["metadata"]["name"] == "wc-spark-sink"
    assert pod["metadata"]["labels"]["jet.dev/component"] == "spark-sink"
    assert pod["metadata"]["annotations"] == {"jet.dev/generation": "4", "jet.dev/attempt": "1",
                                              "jet.dev/job-id": JOB_ID}
    assert pod["spec"]["serviceAccountName"] == "wc-spark"
    assert pod["spec"]["restartPolicy"] == "Never"
    driver = _container(pod["spec"], "driver")
    assert driver["image"] == "jet-spark:1"
    assert driver["command"] == ["jet"]
    assert _parse_driver_args(driver["args"]).params["job_id"] == JOB_ID
    assert driver["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert driver["resources"] == {"requests": {"cpu": "1"}}
    assert _env(driver)["JET_CLUSTER_TOKEN_FILE"] == "/var/run/jet/token/token"
    assert {v["name"] for v in pod["spec"]["volumes"]} >= {"token", "pipeline"}


def test_spark_rbac_grants_only_what_spark_needs() -> None:
    account, role, binding = (build_spark_service_account(JOB), build_spark_role(JOB),
                              build_spark_role_binding(JOB))
    for obj in (account, role, binding):
        _owner_ok(obj)
        assert obj["metadata"]["name"] == "wc-spark"
    assert role["kind"] == "Role"
    (rule,) = role["rules"]
    assert rule["apiGroups"] == [""]
    assert sorted(rule["resources"]) == ["configmaps", "persistentvolumeclaims", "pods", "services"]
    assert "*" not in rule["verbs"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "wc-spark"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "wc-spark", "namespace": "jobs"}]


def test_children_of_a_spark_job() -> None:
    kinds = [(c["kind"], c["metadata"]["name"]) for c in build_children(JOB, SPARK, member_replicas=2)]
    # No driver pods: they are made once member 0 reports the job's id.
    assert kinds == [
        ("ServiceAccount", "wc-spark"), ("Role", "wc-spark"), ("RoleBinding", "wc-spark"),
        ("ConfigMap", "wc-config"), ("ConfigMap", "wc-pipeline"), ("Service", "wc-member"),
        ("StatefulSet", "wc-member"),
    ]
    with_account = build_children(JOB, SPARK, member_replicas=0, default_account="jet-job")
    assert [c["kind"] for c in with_account] == ["ConfigMap", "ConfigMap", "Service", "StatefulSet"]
    sts = with_account[-1]
    assert sts["spec"]["replicas"] == 0
    assert sts["spec"]["template"]["spec"]["serviceAccountName"] == "jet-job"


def test_children_of_a_plain_job_have_no_spark_parts() -> None:
    kinds = [c["kind"] for c in build_children(JOB, INLINE, member_replicas=3)]
    assert kinds == ["ConfigMap", "ConfigMap", "Service", "StatefulSet"]


def test_config_from_env() -> None:
    config = OperatorConfig.from_env({
        "JET_OPERATOR_SCHEDULING_TIMEOUT_SECONDS": "12.5",
        "JET_OPERATOR_JOB_URL_TEMPLATE": "http://127.0.0.1:9/{namespace}/{name}",
        "JET_OPERATOR_WATCH_SERVER_TIMEOUT_SECONDS": "60",
        "UNRELATED": "x",
    })
    assert config.scheduling_timeout_seconds == 12.5
    assert config.watch_server_timeout_seconds == 60
    assert config.job_url("wc", "jobs") == "http://127.0.0.1:9/jobs/wc"
    assert OperatorConfig().job_url("wc", "jobs") == (
        "http://wc-member-0.wc-member.jobs.svc.cluster.local:8080/job"
    )


def test_member_args_end_with_user_args() -> None:
    spec = parse_spec({"pipeline": {"path": "/p.py", "args": ["a b", "--x"]}})
    assert member_args(JOB, spec)[-3:] == ["--", "a b", "--x"]
