"""Every object the operator sends to the API server, built without a cluster."""

from __future__ import annotations

import base64
import datetime
import json
import ssl
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from jet import cli as jet_cli

from jet_operator import constants, naming
from jet_operator.builders import (
    JobRef,
    build_headless_service,
    build_member_config,
    build_pipeline_config_map,
    build_statefulset,
    member_args,
)
from jet_operator.certificates import issue_member_tls
from jet_operator.credentials import (
    build_ca_secret,
    build_member_key_secret,
    build_member_tls_secret,
    build_token_secret,
    new_cluster_token,
    new_member_key,
    secret_text,
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


def _secret_data(secret: dict[str, Any]) -> dict[str, str]:
    return {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}


def test_token_secret() -> None:
    token = new_cluster_token()
    assert len(token) >= 32 and token != new_cluster_token()
    secret = build_token_secret(JOB, token)
    _owner_ok(secret)
    assert secret["metadata"]["name"] == "wc-token"
    assert _secret_data(secret) == {"token": token}
    assert secret_text(secret, "token") == token
    assert secret["metadata"]["labels"]["jet.dev/jetjob-name"] == "wc"


def test_member_key_secret_is_separate_from_the_token() -> None:
    key = new_member_key()
    assert len(key) >= 32 and key != new_member_key() and key.strip() == key
    secret = build_member_key_secret(JOB, key)
    _owner_ok(secret)
    assert secret["metadata"]["name"] == "wc-member-key" != naming.token_secret_name("wc")
    assert _secret_data(secret) == {"member-key": key}
    with pytest.raises(KeyError, match="'wc-member-key' has no key 'token'"):
        secret_text(secret, "token")


TLS = issue_member_tls("wc", "jobs", replicas=3)
OTHER_TLS = issue_member_tls("wc", "jobs", replicas=3)


def _load_tls_secret(secret: dict[str, Any]) -> tuple[x509.Certificate, x509.Certificate, Any]:
    """The CA certificate, the member certificate and the member key of a TLS Secret."""
    data = _secret_data(secret)
    return (x509.load_pem_x509_certificate(data["ca.crt"].encode()),
            x509.load_pem_x509_certificate(data["tls.crt"].encode()),
            serialization.load_pem_private_key(data["tls.key"].encode(), password=None))


def _extension(cert: x509.Certificate, kind: type) -> x509.Extension:
    return cert.extensions.get_extension_for_class(kind)


def test_member_tls_secret_holds_a_member_certificate_the_ca_signed() -> None:
    secret = build_member_tls_secret(JOB, TLS)
    _owner_ok(secret)
    assert secret["metadata"]["name"] == "wc-tls"
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    ca, cert, key = _load_tls_secret(secret)
    ca.verify_directly_issued_by(ca)  # self-signed
    cert.verify_directly_issued_by(ca)
    _, other_cert, _ = _load_tls_secret(build_member_tls_secret(JOB, OTHER_TLS))
    with pytest.raises(InvalidSignature):
        other_cert.verify_directly_issued_by(ca)  # every job gets its own CA

    constraints = _extension(ca, x509.BasicConstraints)
    assert constraints.critical and constraints.value.ca and constraints.value.path_length == 0
    assert _extension(ca, x509.KeyUsage).value.key_cert_sign
    assert _extension(cert, x509.BasicConstraints).value.ca is False
    assert not _extension(cert, x509.KeyUsage).value.key_cert_sign
    usages = set(_extension(cert, x509.ExtendedKeyUsage).value)
    assert {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH} <= usages

    public = serialization.PublicFormat.SubjectPublicKeyInfo
    assert (key.public_key().public_bytes(serialization.Encoding.PEM, public)
            == cert.public_key().public_bytes(serialization.Encoding.PEM, public))
    for private_or_public in (key, ca.public_key()):
        assert isinstance(private_or_public, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey))
        assert private_or_public.curve.name == "secp256r1" and private_or_public.key_size == 256
    now = datetime.datetime.now(datetime.timezone.utc)
    for certificate in (ca, cert):
        assert certificate.signature_hash_algorithm.name == "sha256"
        assert certificate.not_valid_before_utc <= now < certificate.not_valid_after_utc
        assert certificate.not_valid_after_utc - now > datetime.timedelta(days=365)
    assert cert.not_valid_after_utc <= ca.not_valid_after_utc


def test_member_certificate_names_every_member_behind_the_headless_service() -> None:
    _, cert, _ = _load_tls_secret(build_member_tls_secret(JOB, TLS))
    names = set(_extension(cert, x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName))
    for index in range(3):
        assert f"wc-member-{index}.wc-member.jobs.svc" in names
        assert f"wc-member-{index}.wc-member.jobs.svc.cluster.local" in names
    assert {"*.wc-member.jobs.svc", "*.wc-member.jobs.svc.cluster.local", "localhost"} <= names
    assert naming.member_host("wc", "jobs", 2) in names  # what --peers and --members dial


def _handshake(tls_files: dict[str, Path], ca_file: Path, hostname: str) -> None:
    """A real TLS handshake in memory: the client verifies the member's certificate and name."""
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(tls_files["tls.crt"], tls_files["tls.key"])
    client_context = ssl.create_default_context(cafile=str(ca_file))
    client_in, client_out, server_in, server_out = (ssl.MemoryBIO() for _ in range(4))
    client = client_context.wrap_bio(client_in, client_out, server_hostname=hostname)
    server = server_context.wrap_bio(server_in, server_out, server_side=True)
    for _ in range(10):
        finished = True
        for side, outgoing, peer_incoming in ((client, client_out, server_in), (server, server_out, client_in)):
            try:
                side.do_handshake()
            except ssl.SSLWantReadError:
                finished = False
            peer_incoming.write(outgoing.read())
        if finished:
            return
    raise AssertionError("the TLS handshake did not finish")


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("tls")
    files = {}
    for key, text in _secret_data(build_member_tls_secret(JOB, TLS)).items():
        files[key] = directory / key
        files[key].write_text(text)
    files["other-ca.crt"] = directory / "other-ca.crt"
    files["other-ca.crt"].write_text(OTHER_TLS.ca_cert_pem)
    return files


@pytest.mark.parametrize("hostname", [
    "wc-member-0.wc-member.jobs.svc.cluster.local", "wc-member-2.wc-member.jobs.svc",
    "wc-member-11.wc-member.jobs.svc.cluster.local",  # a member added by scaling later
    "wc-member.jobs.svc", "localhost", "127.0.0.1",
])
def test_clients_with_the_ca_accept_every_member_name(tls_files: dict[str, Path], hostname: str) -> None:
    _handshake(tls_files, tls_files["ca.crt"], hostname)


@pytest.mark.parametrize("hostname", [
    "wc-member-0.other.jobs.svc.cluster.local", "wc-member-0.wc-member.prod.svc.cluster.local",
    "x.wc-member-0.wc-member.jobs.svc.cluster.local", "example.com",
])
def test_clients_refuse_names_outside_the_job(tls_files: dict[str, Path], hostname: str) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(tls_files, tls_files["ca.crt"], hostname)


def test_clients_with_another_jobs_ca_refuse_the_member(tls_files: dict[str, Path]) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(tls_files, tls_files["other-ca.crt"], "wc-member-0.wc-member.jobs.svc.cluster.local")


def test_ca_secret_holds_the_ca_certificate_only() -> None:
    secret = build_ca_secret(JOB, TLS.ca_cert_pem)
    _owner_ok(secret)
    assert secret["metadata"]["name"] == "wc-ca"
    assert _secret_data(secret) == {"ca.crt": TLS.ca_cert_pem}
    assert "PRIVATE KEY" not in TLS.ca_cert_pem and "PRIVATE KEY" in TLS.key_pem


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
        "--replicas", "3", "--config", "/etc/jet/member.yaml", "--job-name", "wc",
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


def _secret_mounts(pod_spec: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
    """mount path -> name of the Secret mounted there."""
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    return {m["mountPath"]: volumes[m["name"]]["secret"]["secretName"]
            for m in container["volumeMounts"] if "secret" in volumes[m["name"]]}


def _executor_secrets(args: list[str]) -> dict[str, str]:
    conf = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--conf")
    prefix = "spark.kubernetes.executor.secrets."
    return {key[len(prefix):]: value for key, value in conf.items() if key.startswith(prefix)}


def test_member_pods_get_the_token_the_member_key_and_tls() -> None:
    pod_spec = build_statefulset(JOB, INLINE, replicas=3)["spec"]["template"]["spec"]
    member = _container(pod_spec, "member")
    assert _secret_mounts(pod_spec, member) == {
        "/var/run/jet/token": "wc-token", "/var/run/jet/member-key": "wc-member-key",
        "/var/run/jet/tls": "wc-tls",
    }
    env = _env(member)
    assert env["JET_CLUSTER_TOKEN_FILE"] == "/var/run/jet/token/token"
    assert env["JET_MEMBER_KEY_FILE"] == "/var/run/jet/member-key/member-key"
    assert (env["JET_TLS_CERT_FILE"], env["JET_TLS_KEY_FILE"], env["JET_TLS_CA_FILE"]) == (
        "/var/run/jet/tls/tls.crt", "/var/run/jet/tls/tls.key", "/var/run/jet/tls/ca.crt")
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    for mount in member["volumeMounts"]:
        if "secret" in volumes[mount["name"]]:
            assert mount["readOnly"] is True
            assert volumes[mount["name"]]["secret"]["defaultMode"] == 0o440


def test_spark_pods_get_the_token_and_the_ca_only() -> None:
    for component in ("spark-source", "spark-sink"):
        pod = build_spark_driver_pod(JOB, SPARK, component, "wc-spark", JOB_ID)
        text = json.dumps(pod)
        for secret_of_members in ("member-key", "wc-tls", "tls.key", "tls.crt", "JET_TLS_KEY_FILE",
                                  "JET_TLS_CERT_FILE", "JET_MEMBER_KEY"):
            assert secret_of_members not in text, secret_of_members
        driver = _container(pod["spec"], "driver")
        assert _secret_mounts(pod["spec"], driver) == {"/var/run/jet/token": "wc-token",
                                                       "/var/run/jet/ca": "wc-ca"}
        env = _env(driver)
        assert env["JET_CLUSTER_TOKEN_FILE"] == "/var/run/jet/token/token"
        assert env["JET_TLS_CA_FILE"] == "/var/run/jet/ca/ca.crt"
        # Executors: the same two Secrets at the same paths, the same variables.
        assert _executor_secrets(driver["args"]) == {"wc-token": "/var/run/jet/token", "wc-ca": "/var/run/jet/ca"}
        assert "spark.executorEnv.JET_TLS_CA_FILE=/var/run/jet/ca/ca.crt" in driver["args"]
        assert "spark.executorEnv.JET_CLUSTER_TOKEN_FILE=/var/run/jet/token/token" in driver["args"]


def test_tls_off_leaves_out_the_tls_secrets_env_and_mounts() -> None:
    plain = parse_spec({"pipeline": {"code": "x"}, "spark": {}, "tls": {"enabled": False}})
    pod_spec = build_statefulset(JOB, plain, replicas=2)["spec"]["template"]["spec"]
    member = _container(pod_spec, "member")
    assert _secret_mounts(pod_spec, member) == {"/var/run/jet/token": "wc-token",
                                                "/var/run/jet/member-key": "wc-member-key"}
    assert not [name for name in _env(member) if name.startswith("JET_TLS_")]
    assert "wc-tls" not in json.dumps(pod_spec)
    pod = build_spark_driver_pod(JOB, plain, "spark-sink", "wc-spark", JOB_ID)
    driver = _container(pod["spec"], "driver")
    assert _secret_mounts(pod["spec"], driver) == {"/var/run/jet/token": "wc-token"}
    assert _executor_secrets(driver["args"]) == {"wc-token": "/var/run/jet/token"}
    assert "JET_TLS_CA_FILE" not in json.dumps(pod) and "wc-ca" not in json.dumps(pod)


def test_tls_is_on_unless_the_spec_turns_it_off() -> None:
    assert parse_spec({"pipeline": {"path": "/p.py"}}).tls_enabled is True
    assert parse_spec({"pipeline": {"path": "/p.py"}, "tls": {}}).tls_enabled is True
    assert parse_spec({"pipeline": {"path": "/p.py"}, "tls": {"enabled": False}}).tls_enabled is False
    with pytest.raises(ValueError, match=r"spec\.tls\.enabled must be true or false, got 'no'"):
        parse_spec({"pipeline": {"path": "/p.py"}, "tls": {"enabled": "no"}})
    with pytest.raises(ValueError, match=r"spec\.tls must be an object, got True"):
        parse_spec({"pipeline": {"path": "/p.py"}, "tls": True})


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
