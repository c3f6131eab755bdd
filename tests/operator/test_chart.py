"""The Helm chart: renders, lints strictly, and every manifest is valid Kubernetes 1.30."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from tests.operator.crdschema import CHART_DIR, load_crd

KUBE_VERSION = "1.30.0"


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The chart's manifests (NOTES.txt left out) for ``values``."""
    with helm.Chart.load(str(CHART_DIR)) as chart:
        files = chart.render(values or {}, name="jet", namespace="jet-system")
    documents = []
    for path, text in sorted(files.items()):
        if path.endswith(".txt"):
            continue
        documents += [doc for doc in yaml.safe_load_all(text) if doc]
    return documents


def notes(values: dict[str, Any] | None = None) -> str:
    with helm.Chart.load(str(CHART_DIR)) as chart:
        files = chart.render(values or {}, name="jet", namespace="jet-system")
    return next(text for path, text in files.items() if path.endswith("NOTES.txt"))


def find(documents: list[dict[str, Any]], kind: str, name: str | None = None,
         namespace: str | None = None) -> list[dict[str, Any]]:
    return [d for d in documents if d["kind"] == kind
            and (name is None or d["metadata"]["name"] == name)
            and (namespace is None or d["metadata"].get("namespace") == namespace)]


def operator_container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = find(documents, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


VALUE_SETS = {
    "defaults": {},
    "namespaced": {"watchNamespaces": ["team-a", "team-b"]},
    "everything": {"watchNamespaces": ["team-a"], "metrics": {"enabled": True, "port": 9100},
                   "logLevel": "debug", "kopfArgs": ["--log-format=json"],
                   "imagePullSecrets": [{"name": "regcred"}], "nodeSelector": {"pool": "ops"},
                   "tolerations": [{"key": "ops", "operator": "Exists"}],
                   "serviceAccount": {"annotations": {"iam": "role"}}},
    "ha": {"replicas": 3, "leaderElection": {"leaseName": "jet-lead", "leaseSeconds": 20}},
}


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_every_manifest_is_valid_kubernetes(values: dict[str, Any]) -> None:
    documents = render(values)
    assert documents
    for document in documents:
        kubernetes_validate.validate(document, KUBE_VERSION, strict=True)


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_chart_lints_strictly(values: dict[str, Any]) -> None:
    result = helm.lint(str(CHART_DIR), values, strict=True, kube_version=f"v{KUBE_VERSION}")
    assert result["errors"] == []
    # Severity 1 is INFO (e.g. "icon is recommended"); nothing worse is allowed.
    assert [m for m in result["messages"] if m["severity"] > 1] == []


def test_operator_deployment_runs_kopf_cluster_wide_by_default() -> None:
    documents = render()
    (deployment,) = find(documents, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    container = operator_container(documents)
    assert container["command"] == ["kopf"]
    assert container["args"] == ["run", "--standalone", "--liveness=http://0.0.0.0:8080/healthz",
                                 "-m", "jet_operator.main", "-A"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    pod_security = deployment["spec"]["template"]["spec"]["securityContext"]
    assert pod_security["runAsNonRoot"] is True and pod_security["runAsUser"] != 0
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert "JET_OPERATOR_JOB_SERVICE_ACCOUNT" not in env  # the per-job account is made instead
    assert env["JET_OPERATOR_SNAPSHOT_ACTION_TIMEOUT_SECONDS"] == "300"


def test_more_replicas_elect_a_leader_over_a_lease() -> None:
    documents = render({"replicas": 2})
    (deployment,) = find(documents, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"] == {"type": "RollingUpdate"}  # one replica stays up
    env = {e["name"]: e.get("value") or e["valueFrom"]["fieldRef"]["fieldPath"]
           for e in operator_container(documents)["env"]}
    assert {name: env[name] for name in env if "LEADER" in name or name.startswith("POD_")} == {
        "POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace",
        "JET_OPERATOR_LEADER_ELECTION": "true", "JET_OPERATOR_LEADER_ELECTION_NAMESPACE": "jet-system",
        "JET_OPERATOR_LEADER_ELECTION_LEASE_NAME": "jet-jet-operator",
        "JET_OPERATOR_LEADER_ELECTION_LEASE_SECONDS": "15",
        "JET_OPERATOR_LEADER_ELECTION_RENEW_DEADLINE_SECONDS": "10",
        "JET_OPERATOR_LEADER_ELECTION_RETRY_SECONDS": "2",
        "JET_OPERATOR_LEADER_ELECTION_WAITING_HEALTH_PORT": "8080"}  # the liveness probe's port
    (role,) = find(documents, "Role", "jet-jet-operator-leader-election", "jet-system")
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["jet-jet-operator"],
         "verbs": ["get", "patch", "update"]}]
    (binding,) = find(documents, "RoleBinding", "jet-jet-operator-leader-election", "jet-system")
    assert binding["subjects"][0]["name"] == "jet-jet-operator"


def test_more_replicas_without_leader_election_are_refused() -> None:
    with pytest.raises(helm.HelmError, match="replicas > 1 needs leaderElection.enabled"):
        render({"replicas": 2, "leaderElection": {"enabled": False}})
    documents = render({"leaderElection": {"enabled": False}})
    assert not find(documents, "Role", "jet-jet-operator-leader-election")
    assert "JET_OPERATOR_LEADER_ELECTION" not in {e["name"] for e in operator_container(documents)["env"]}


def test_cluster_wide_rbac() -> None:
    documents = render()
    assert not find(documents, "Role", "jet-jet-operator")
    (role,) = find(documents, "ClusterRole", "jet-jet-operator")
    rules = {(group, resource): set(rule["verbs"]) for rule in role["rules"]
             for group in rule["apiGroups"] for resource in rule["resources"]}
    assert {"get", "list", "watch", "patch"} <= rules[("jet.dev", "jetjobs")]
    assert "patch" in rules[("jet.dev", "jetjobs/status")]
    assert "create" in rules[("", "events")]
    assert {"create", "delete", "list"} <= rules[("apps", "statefulsets")]
    # The job's Secrets: created once, the CA mirror applied, read back, deleted with the job.
    assert {"get", "create", "patch", "delete"} <= rules[("", "secrets")]
    assert all("*" not in verbs for verbs in rules.values())
    (kopf_role,) = find(documents, "ClusterRole", "jet-jet-operator-kopf")
    kopf_rules = {(r["apiGroups"][0], r["resources"][0]): r["verbs"] for r in kopf_role["rules"]}
    assert kopf_rules == {("apiextensions.k8s.io", "customresourcedefinitions"): ["list", "watch"],
                          ("", "namespaces"): ["list", "watch"]}
    (binding,) = find(documents, "ClusterRoleBinding", "jet-jet-operator")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "jet-jet-operator",
                                    "namespace": "jet-system"}]


def test_spark_drivers_cannot_read_secrets() -> None:
    """Spark drivers run user code: their Role gives no access to the member key or TLS key."""
    roles = [role for role in find(render(), "Role") if role["metadata"]["name"].endswith("-spark")]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            assert "secrets" not in rule["resources"] and "*" not in rule["resources"], rule


def test_namespaced_mode_uses_roles_in_each_watched_namespace() -> None:
    documents = render({"watchNamespaces": ["team-a", "team-b"]})
    args = operator_container(documents)["args"]
    assert "-A" not in args
    assert args[-2:] == ["--namespace=team-a", "--namespace=team-b"]
    assert not find(documents, "ClusterRole", "jet-jet-operator")
    for namespace in ("team-a", "team-b"):
        (role,) = find(documents, "Role", "jet-jet-operator", namespace)
        assert any("jetjobs" in rule["resources"] for rule in role["rules"])
        (binding,) = find(documents, "RoleBinding", "jet-jet-operator", namespace)
        assert binding["subjects"][0]["namespace"] == "jet-system"
        assert find(documents, "ServiceAccount", "jet-job", namespace)
        (spark_role,) = find(documents, "Role", "jet-job-spark", namespace)
        assert spark_role["rules"][0]["resources"] == ["pods", "services", "configmaps",
                                                       "persistentvolumeclaims"]
    env = {e["name"]: e.get("value") for e in operator_container(documents)["env"]}
    assert env["JET_OPERATOR_JOB_SERVICE_ACCOUNT"] == "jet-job"


def test_crd_is_the_repository_crd_and_is_kept_on_uninstall() -> None:
    (crd,) = find(render(), "CustomResourceDefinition")
    assert crd == load_crd()
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert not find(render({"crds": {"install": False}}), "CustomResourceDefinition")


def test_metrics_and_log_level() -> None:
    documents = render({"metrics": {"enabled": True, "port": 9100}, "logLevel": "debug"})
    container = operator_container(documents)
    assert "--verbose" in container["args"]
    assert {"name": "JET_OPERATOR_METRICS_PORT", "value": "9100"} in container["env"]
    (service,) = find(documents, "Service")
    assert service["spec"]["ports"][0]["port"] == 9100
    assert not find(render(), "Service")


def test_notes_tell_what_to_do_next() -> None:
    text = notes()
    assert "kubectl apply -f examples/jetjob-wordcount.yaml" in text
    assert "kubectl get jjob" in text and "jetjobs.jet.dev" in text
    assert "kubectl logs" in text


@pytest.mark.parametrize("bad", [
    {"logLevel": "loud"},
    {"metrics": {"enabled": True, "port": 0}},
    {"watchNamespaces": "team-a"},
    {"image": {"repository": "x", "pullPolicy": "Sometimes"}},
    {"replicaCount": 2},
    {"replicas": 0},
    {"leaderElection": {"enabled": True, "leaseSeconds": 0}},
    {"operator": {"snapshotActionTimeoutSeconds": 0}},
])
def test_values_schema_rejects_bad_values(bad: dict[str, Any]) -> None:
    with helm.Chart.load(str(CHART_DIR)) as chart:
        with pytest.raises(helm.HelmValuesError):
            chart.validate_schema(bad)
        with pytest.raises(helm.HelmError):
            chart.render(bad, name="jet", namespace="jet-system")
