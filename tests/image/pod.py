"""Member 0 of a JetJob run inside the image the way the operator's StatefulSet runs it.

The operator's own reconcile step makes the JetJob's children (its Secrets, ConfigMaps and the
StatefulSet with the member pod: command, arguments, environment, volumes) in an in-memory
store; this stands in for the kubelet: ConfigMap, Secret and emptyDir volumes become host directories
bind-mounted at their mount paths, ``fieldRef`` variables get the pod's values, and a
``readOnlyRootFilesystem`` makes the image's writable home read-only. Only the pod
network, which this machine has not, is replaced: the member listens on free loopback ports and
is its own only peer (one member, so ``--replicas`` goes).
"""

from __future__ import annotations

import base64
import copy
import datetime
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, ContextManager, Mapping

from jet_operator import constants, naming
from jet_operator.builders import JobRef
from jet_operator.config import OperatorConfig
from jet_operator.reconcile import start_generation
from jet_operator.spec import parse_spec
from tests.image.buildah import Container
from tests.image.objects import ObjectStore

NAMESPACE = "default"
POLL_S = 0.2


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _volume_files(volume: Mapping[str, Any], objects: ObjectStore) -> dict[str, str]:
    """path -> content of what the kubelet would put in ``volume`` (ConfigMap, Secret, emptyDir)."""
    if "emptyDir" in volume:
        return {}
    if "configMap" in volume:
        source = volume["configMap"]
        data = dict(objects.named("ConfigMap", source["name"]).get("data") or {})
    elif "secret" in volume:
        source = volume["secret"]
        secret = objects.named("Secret", source["secretName"])
        data = {key: base64.b64decode(value).decode() for key, value in (secret.get("data") or {}).items()}
        data.update(secret.get("stringData") or {})
    else:
        raise LookupError(f"volume {volume['name']!r}: no stand-in for {sorted(volume)}")
    items = source.get("items")
    return {item["path"]: data[item["key"]] for item in items} if items else data


def _pod_args(args: list[str], port: int, http_port: int) -> list[str]:
    """The member's arguments on loopback ports, with itself as the only peer."""
    result, values = [], iter(args)
    replaced = {"--port": str(port), "--http-port": str(http_port), "--peers": f"127.0.0.1:{port}"}
    for arg in values:
        if arg == "--":
            result += [arg, *values]
        elif arg in replaced:
            next(values)
            result += [arg, replaced[arg]]
        elif arg == "--replicas":
            next(values)
        else:
            result.append(arg)
    return result


class MemberPod:
    """Member 0 of the JetJob ``jetjob`` (with the other ``documents`` of its manifest, e.g.
    the ConfigMaps it mounts), run in ``container`` as a one-member cluster."""

    def __init__(self, container: Container, jetjob: Mapping[str, Any],
                 documents: list[dict[str, Any]], workdir: Path) -> None:
        spec = copy.deepcopy(dict(jetjob["spec"]))
        spec.setdefault("members", {})["replicas"] = 1
        job = JobRef(jetjob["metadata"]["name"], NAMESPACE, "uid-image-test")
        objects = ObjectStore({**doc, "metadata": {"namespace": NAMESPACE, **doc["metadata"]}}
                              for doc in documents)
        started = start_generation(objects, OperatorConfig(), job, parse_spec(spec), {},
                                   datetime.datetime.now(datetime.timezone.utc))
        assert started.status["phase"] == "Pending", started.status.get("message")
        statefulset = objects.named("StatefulSet", naming.statefulset_name(job.name))
        pod_spec = statefulset["spec"]["template"]["spec"]
        member = next(c for c in pod_spec["containers"] if c["name"] == constants.MEMBER_CONTAINER)
        self.container = container
        self.port, self.http_port = free_port(), free_port()
        self.argv = [*member["command"], *_pod_args(member["args"], self.port, self.http_port)]
        pod_values = {"metadata.name": f"{statefulset['metadata']['name']}-0",
                      "metadata.namespace": NAMESPACE, "status.podIP": "127.0.0.1"}
        self.env = {var["name"]: var["value"] if "value" in var
                    else pod_values[var["valueFrom"]["fieldRef"]["fieldPath"]]
                    for var in member.get("env") or []}
        self.mounts, self.read_only = self._materialise(member, pod_spec, objects, workdir)
        self.log = workdir / "member.log"

    def _materialise(self, member: Mapping[str, Any], pod_spec: Mapping[str, Any],
                     objects: ObjectStore, workdir: Path) -> tuple[dict[str, str], list[str]]:
        """Write every mounted volume under ``workdir``; (container path -> host path, read-only paths)."""
        volumes = {volume["name"]: volume for volume in pod_spec.get("volumes") or []}
        mounts, read_only = {}, []
        if (member.get("securityContext") or {}).get("readOnlyRootFilesystem"):
            # The only place of the image its user may write is its home, the working directory:
            # bound read-only over itself, the root file system is read-only for the member.
            home = self.container.working_directory()
            mounts[home] = self.container.host_path(home)
            read_only.append(home)
        targets = self.container.real_paths([mount["mountPath"] for mount in member.get("volumeMounts") or []])
        for mount, target in zip(member.get("volumeMounts") or [], targets):
            host = workdir / "volumes" / mount["name"]
            host.mkdir(parents=True, exist_ok=True)
            host.chmod(0o777)  # the image's user (10001) writes emptyDirs, reads the rest
            for path, content in _volume_files(volumes[mount["name"]], objects).items():
                (host / path).write_text(content)
                (host / path).chmod(0o644)
            source = host / mount["subPath"] if mount.get("subPath") else host
            mounts[target] = str(source)
            if mount.get("readOnly"):
                read_only.append(target)
        return mounts, read_only

    def url(self, path: str) -> str:
        """The member's HTTP endpoint ``path`` (``/healthz``, ``/metrics``, ...)."""
        return f"http://127.0.0.1:{self.http_port}{path}"

    def start(self) -> ContextManager[subprocess.Popen]:
        """Start the member (a context manager that stops it)."""
        return self.container.background(self.argv, self.log, mounts=self.mounts, env=self.env,
                                         read_only=self.read_only)

    def get(self, path: str) -> tuple[int, str]:
        """(status, body) of GET ``path``; status 0 while nothing answers."""
        try:
            with urllib.request.urlopen(self.url(path), timeout=5) as response:  # noqa: S310
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")
        except (urllib.error.URLError, OSError):
            return 0, ""

    def wait_until(self, process: subprocess.Popen, check: Callable[[], Any], what: str,
                   bound_s: float) -> Any:
        """Poll ``check()`` until truthy; fails (with the member's log) if the member exits or
        ``bound_s`` passes. The bound only ends a hung wait: it asserts nothing about speed."""
        deadline = time.monotonic() + bound_s
        while True:
            value = check()
            if value:
                return value
            if process.poll() is not None:
                raise AssertionError(
                    f"the member exited ({process.returncode}) before {what}:\n{self.log_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {bound_s:.0f} s:\n{self.log_text()}")
            time.sleep(POLL_S)

    def job_counter(self, outcome: str) -> float:
        """``jet_jobs_<outcome>_total`` from the member's /metrics (0 while not answering)."""
        status, body = self.get("/metrics")
        if status != 200:
            return 0.0
        match = re.search(rf"^jet_jobs_{outcome}_total (\S+)$", body, re.MULTILINE)
        return float(match.group(1)) if match else 0.0

    def log_text(self) -> str:
        """What the member wrote so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""
