"""The way to a JetJob's web dashboard: the chart's ``dashboard.*`` values reach the operator,
which makes a Service to member 0 (and an Ingress to it) per JetJob, owned by it, or none."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest

from jet_operator import constants
from jet_operator.builders import JobRef
from jet_operator.config import ENV_PREFIX, OperatorConfig
from jet_operator.dashboard import build_dashboard_children
from tests.operator.crdschema import CHART_DIR
from tests.operator.emulator import Emulator
from prometheus_client.parser import text_string_to_metric_families

from tests.operator.fakes import PODS, eventually, get, names, run_statefulset
from tests.operator.kubelet import Kubelet
from tests.operator.test_chart import KUBE_VERSION, find, notes, operator_container, render
from tests.operator.test_end_to_end import kubelet, start_operator_for  # noqa: F401 - a fixture
from tests.operator.test_grafana_dashboard import MONITORING_ON, Prometheus, as_promql, load_dashboard, queries
from tests.operator.test_operator import COLLECTION, delete_jetjob, jetjob, operator, wait_phase
from tests.operator.test_stream_end_to_end import TICKING_DAG

SERVICES = "v1/services"
INGRESSES = "networking.k8s.io/v1/ingresses"
EXPOSED = {"dashboard": {"service": {"enabled": True}, "ingress": {
    "enabled": True, "host": "{name}.{namespace}.jet.example.com", "className": "nginx",
    "annotations": {"nginx.ingress.kubernetes.io/proxy-read-timeout": "60"},
    "tls": {"secretName": "jet-dashboards-tls"}}}}


def operator_env(values: dict[str, Any]) -> dict[str, str]:
    """The JET_OPERATOR_* variables the chart gives the operator for ``values``."""
    return {e["name"]: e["value"] for e in operator_container(render(values))["env"]
            if e["name"].startswith(ENV_PREFIX) and "value" in e}


def jobs_rules(values: dict[str, Any]) -> set[tuple[str, str]]:
    (role,) = find(render(values), "ClusterRole", "jet-jet-operator")
    return {(group, resource) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"]}


def test_chart_values_reach_the_operator_config() -> None:
    config = OperatorConfig.from_env(operator_env(EXPOSED))
    assert config.dashboard_service_enabled and config.dashboard_ingress_enabled
    assert config.dashboard_host("wc", "team-a") == "wc.team-a.jet.example.com"
    assert config.dashboard_ingress_class_name == "nginx"
    assert config.ingress_annotations() == {"nginx.ingress.kubernetes.io/proxy-read-timeout": "60"}
    assert config.dashboard_tls_secret("wc", "team-a") == "jet-dashboards-tls"
    defaults = OperatorConfig.from_env(operator_env({}))
    assert not defaults.dashboard_service_enabled and not defaults.dashboard_ingress_enabled


def test_the_operator_may_manage_ingresses_only_with_the_ingress_on() -> None:
    assert ("networking.k8s.io", "ingresses") in jobs_rules(EXPOSED)
    assert ("networking.k8s.io", "ingresses") not in jobs_rules({})
    assert ("", "services") in jobs_rules({})


def test_chart_with_the_dashboard_exposed_lints_and_notes_the_ways_in() -> None:
    result = helm.lint(str(CHART_DIR), EXPOSED, strict=True, kube_version=f"v{KUBE_VERSION}")
    assert result["errors"] == [] and [m for m in result["messages"] if m["severity"] > 1] == []
    for document in render(EXPOSED):
        kubernetes_validate.validate(document, KUBE_VERSION, strict=True)
    text = notes(EXPOSED)
    assert "kubectl port-forward pod/wordcount-member-0 8080" in text
    assert "kubectl port-forward svc/wordcount-dashboard 8080" in text
    assert "{name}.{namespace}.jet.example.com" in text
    assert "wordcount-token" in notes({})


def test_an_ingress_without_a_host_is_refused() -> None:
    with pytest.raises(Exception, match="host"):
        render({"dashboard": {"ingress": {"enabled": True}}})


@pytest.mark.parametrize("env, message", [
    ({"DASHBOARD_SERVICE_ENABLED": "yes please"}, "DASHBOARD_SERVICE_ENABLED: expected true or false"),
    ({"DASHBOARD_INGRESS_ENABLED": "true"}, "DASHBOARD_INGRESS_HOST: empty"),
    ({"DASHBOARD_INGRESS_HOST": "{job}.example.com"}, "DASHBOARD_INGRESS_HOST: '{job}.example.com'"),
    ({"DASHBOARD_INGRESS_ANNOTATIONS": "[1]"}, "expected a JSON object of strings"),
    ({"DASHBOARD_INGRESS_ANNOTATIONS": "{nope"}, "DASHBOARD_INGRESS_ANNOTATIONS: not JSON"),
    ({"METRICS_PORT": "ninety"}, "METRICS_PORT: expected int, got 'ninety'"),
])
def test_bad_settings_fail_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("[", r"\[")):
        OperatorConfig.from_env({ENV_PREFIX + key: value for key, value in env.items()})


def test_false_spelled_false_is_off() -> None:
    config = OperatorConfig.from_env({f"{ENV_PREFIX}DASHBOARD_SERVICE_ENABLED": "false"})
    assert config.dashboard_service_enabled is False
    assert build_dashboard_children(JobRef("wc", "jobs", "u"), config) == []


def test_the_ingress_alone_brings_its_service_and_both_are_valid_kubernetes() -> None:
    config = OperatorConfig(dashboard_ingress_enabled=True, dashboard_ingress_host="{name}.example.com")
    children = build_dashboard_children(JobRef("wc", "jobs", "u"), config)
    assert [child["kind"] for child in children] == ["Service", "Ingress"]
    for child in children:
        kubernetes_validate.validate(child, KUBE_VERSION, strict=True)
    assert "tls" not in children[1]["spec"] and "ingressClassName" not in children[1]["spec"]


def selected_pods(k8s: Emulator, selector: dict[str, str]) -> set[str]:
    return {name for name in names(k8s, PODS)
            if all((get(k8s, PODS, name)["metadata"].get("labels") or {}).get(key) == value
                   for key, value in selector.items())}


def assert_owned_by(child: dict[str, Any], owner: dict[str, Any]) -> None:
    (reference,) = child["metadata"]["ownerReferences"]
    assert reference["uid"] == owner["metadata"]["uid"] and reference["kind"] == "JetJob"
    assert reference["controller"] is True


async def test_the_operator_exposes_member_0s_dashboard_per_jetjob(k8s: Emulator, monkeypatch) -> None:
    for key, value in {"DASHBOARD_SERVICE_ENABLED": "true", "DASHBOARD_INGRESS_ENABLED": "true",
                       "DASHBOARD_INGRESS_HOST": "{name}.{namespace}.jet.example.com",
                       "DASHBOARD_INGRESS_CLASS_NAME": "nginx",
                       "DASHBOARD_INGRESS_ANNOTATIONS": '{"a.example/b": "c"}',
                       "DASHBOARD_INGRESS_TLS_SECRET": "{name}-dashboard-tls"}.items():
        monkeypatch.setenv(ENV_PREFIX + key, value)
    with operator():
        await k8s.post(COLLECTION, json=jetjob())
        await wait_phase(k8s, "Pending")
        owner = get(k8s, "jet.dev/v1alpha1/jetjobs", "wc")
        service = await eventually(lambda: get(k8s, SERVICES, "wc-dashboard"), what="the dashboard Service")
        assert_owned_by(service, owner)
        assert service["spec"]["type"] == "ClusterIP"
        (port,) = service["spec"]["ports"]
        assert port["port"] == constants.MEMBER_HTTP_PORT and port["targetPort"] == "http"
        run_statefulset(k8s, "wc-member")  # the StatefulSet controller's pods wc-member-0, wc-member-1
        assert selected_pods(k8s, service["spec"]["selector"]) == {"wc-member-0"}
        member_0 = get(k8s, PODS, "wc-member-0")
        (container,) = member_0["spec"]["containers"]
        assert {"name": "http", "containerPort": constants.MEMBER_HTTP_PORT, "protocol": "TCP"} in container["ports"]

        ingress = get(k8s, INGRESSES, "wc-dashboard")
        assert ingress is not None
        assert_owned_by(ingress, owner)
        assert ingress["metadata"]["annotations"] == {"a.example/b": "c"}
        spec = ingress["spec"]
        assert spec["ingressClassName"] == "nginx"
        assert spec["tls"] == [{"hosts": ["wc.default.jet.example.com"], "secretName": "wc-dashboard-tls"}]
        (rule,) = spec["rules"]
        assert rule["host"] == "wc.default.jet.example.com"
        (path,) = rule["http"]["paths"]
        assert path["backend"] == {"service": {"name": "wc-dashboard", "port": {"name": "http"}}}
        for child in (service, ingress):
            kubernetes_validate.validate(child, KUBE_VERSION, strict=False)

        await delete_jetjob(k8s, "wc")
        assert get(k8s, SERVICES, "wc-dashboard") is None and get(k8s, INGRESSES, "wc-dashboard") is None


async def test_without_the_settings_no_dashboard_service_or_ingress(k8s: Emulator) -> None:
    with operator():
        await k8s.post(COLLECTION, json=jetjob())
        await wait_phase(k8s, "Pending")
        assert get(k8s, SERVICES, "wc-member") is not None
        assert get(k8s, SERVICES, "wc-dashboard") is None
        assert names(k8s, INGRESSES) == set()
        await delete_jetjob(k8s, "wc")


def matching_pods(k8s: Emulator, selector: dict[str, str]) -> list[dict[str, Any]]:
    """The pods a Service or PodMonitor ``selector`` (matchLabels) picks, as the API server's
    endpoints controller and Prometheus' pod discovery pick them."""
    return [get(k8s, PODS, name) for name in sorted(selected_pods(k8s, selector))]


def container_port(pod: dict[str, Any], port: int | str) -> int:
    """A named port looked up in the pod's containers, as a Service's ``targetPort`` is."""
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports") or []
                 if p.get("name") == port]
    return number


def job_families_of(url: str) -> set[str]:
    """``job_name`` of every per-job figure (``jet_job_restarts_total``) at a /metrics URL."""
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310
        text = response.read().decode()
    return {sample.labels["job_name"] for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == "jet_job_restarts_total"}


@pytest.mark.slow
@pytest.mark.timeout(150)
async def test_the_service_reaches_member_0_and_prometheus_lists_the_jetjob_in_the_dashboard(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Real members (the kubelet stand-in): the dashboard Service picks the coordinator, and a real
    Prometheus scraping what the chart's PodMonitor selects shows the JetJob under its name in the
    dashboard's JetJob variable and panels."""
    monkeypatch.setenv(f"{ENV_PREFIX}DASHBOARD_SERVICE_ENABLED", "true")
    document = jetjob("ticks", pipeline={"code": TICKING_DAG, "entrypoint": "dag"})
    with start_operator_for(kubelet, monkeypatch, "ticks"):
        response = await k8s.post(COLLECTION, json=document)
        assert response.status in (200, 201), await response.text()
        await wait_phase(k8s, "Running", "ticks", timeout=45)
        service = get(k8s, SERVICES, "ticks-dashboard")
        (pod,) = matching_pods(k8s, service["spec"]["selector"])
        (port,) = service["spec"]["ports"]
        url = f"http://{pod['status']['podIP']}:{container_port(pod, port['targetPort'])}/metrics"
        # Only the coordinator (member 0) exports the job's own figures.
        await eventually(lambda: job_families_of(url) == {"ticks"}, 30, what="member 0's job figures")

        (monitor,) = find(render(MONITORING_ON), "PodMonitor")
        (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
        members = matching_pods(k8s, monitor["spec"]["selector"]["matchLabels"])
        assert len(members) == 2
        prometheus = Prometheus([f"{member['status']['podIP']}:{container_port(member, endpoint['port'])}"
                                 for member in members], "default", tmp_path)
        try:
            await eventually(prometheus.ready, 30, what="Prometheus ready")
            promql = {where: as_promql(query, "default", "ticks") for where, query in queries(load_dashboard()).items()}
            jetjobs = promql["variable job_name"]
            await eventually(lambda: prometheus.query(jetjobs), 30, what="the JetJob variable's values")
            assert [series["metric"]["job_name"] for series in prometheus.query(jetjobs)] == ["ticks"]
            throughput = promql["panel 'Throughput per vertex' A"]
            await eventually(lambda: len(prometheus.query(throughput)) == 2, 30, what="a rate for both vertices")
            assert {series["metric"]["vertex"] for series in prometheus.query(throughput)} == {"ticks", "sink"}
        finally:
            prometheus.stop()
        await delete_jetjob(k8s, "ticks")
