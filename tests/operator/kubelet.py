"""A stand-in for the StatefulSet controller, the kubelet and the garbage collector: it runs the
member pods of our JetJobs' StatefulSets as real ``jet member`` processes on this machine, and
the Spark driver pods the operator creates as real ``jet spark-source``/``spark-sink`` processes.

For every StatefulSet of the API emulator labelled ``app.kubernetes.io/managed-by: jet-operator``
it keeps pods ``<sts>-<i>`` for ``i < spec.replicas`` (labels and annotations from the template,
an ownerReference to the StatefulSet) and, for each pod, one process running the ``member``
container: ``command``/``args``/``env`` from the pod spec, ``POD_NAME``/``POD_NAMESPACE``/
``POD_IP`` from the downward API, and ``PYTHONPATH`` set so it imports this checkout.

Pod status follows the process as a kubelet reports it: ``Pending`` when created, then
``Running`` with ``podIP`` once the process is started, ``Ready`` while ``GET /healthz`` answers
on the readiness probe's port (while running, for a container without a probe). A member
process that exits on its own is restarted once at once and then after a back-off, with
``restartCount``, ``lastState.terminated`` and the waiting reason ``CrashLoopBackOff``
meanwhile (what the operator reads). Pods beyond ``replicas``, pods deleted through the API
(e.g. by an operator restart) and pods of a deleted StatefulSet are stopped (SIGTERM, then
SIGKILL after a bound) and deleted; a deleted pod the StatefulSet still wants is made again at
once, same name and address, new uid (what the StatefulSet controller does).

Spark driver pods (``jet.dev/component: spark-source|spark-sink``, ``restartPolicy: Never``)
run once: the pod ends ``Succeeded`` or ``Failed`` with ``state.terminated`` (exit code; for a
failure under ``terminationMessagePolicy: FallbackToLogsOnError`` the log's last 80 lines or
2048 bytes as ``message``, as a kubelet does). The stand-in has no executors to give a driver,
so ``--master`` is replaced by ``local[N]`` with N = ``spark.executor.instances`` x
``spark.executor.cores`` of the pod's ``--conf``s: Spark runs in local mode inside the driver
process; every other argument is the operator's. ``$(VAR)`` in ``command``/``args`` is expanded
from the container's environment, as Kubernetes does.

Networking:

- where network namespaces work (:func:`tests.netns.netns_support`), each pod gets its own
  namespace and an IP on a bridge of a free ``10.232.X.0/24``, and ``/etc/netns/<ns>/hosts``
  names every pod of its StatefulSet ``<sts>-<i>.<svc>.<ns>.svc.cluster.local``, so the
  StatefulSet's ``--peers dns:...`` argument resolves unchanged; a pod's MAC address follows
  from its IP, so a pod made again is reached at once (no stale ARP entries elsewhere);
- otherwise (loopback fallback) each pod gets its own ``127.232.X.Y``: the member is started
  with ``--host <its address>`` and ``--peers`` rewritten from the dns template to the static
  list of the pods' addresses; a driver's ``--members`` DNS names are rewritten to the members'
  addresses and Spark binds the pod's address instead of ``0.0.0.0`` (drivers share ports).

Pod addresses are fixed in advance (per StatefulSet and ordinal: :meth:`Kubelet.address`), so
a test can point the operator's ``JET_OPERATOR_JOB_URL_TEMPLATE`` at member 0 before it starts.

Volumes are not mounted: the Secret, ConfigMaps and emptyDirs of the pod are written to a
per-pod directory, a PersistentVolumeClaim is one directory per claim shared by every pod
(:meth:`Kubelet.claim_directory`), and every argument or environment value naming a path under a mount path is
rewritten to the same path under that directory (a stand-in's shortcut: the processes share
this machine's file system). An emptyDir mounted at ``/tmp`` becomes the process's ``TMPDIR``
instead, so paths under the real ``/tmp`` (a test's files) are left alone.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kmock

from jet_operator import constants
from tests.conftest import REPO_ROOT
from tests.netns import (
    add_bridge, add_netns, exec_in, free_subnet, ip, netns_support, remove_link, remove_netns,
    write_hosts,
)
from tests.operator.emulator import Emulator
from tests.operator.fakes import PODS, STATEFULSETS, get

log = logging.getLogger(__name__)

STATEFULSETS_RESOURCE = kmock.resource(STATEFULSETS)
PODS_RESOURCE = kmock.resource(PODS)
MAX_REPLICAS = 16  # addresses per StatefulSet
TERMINATION_LOG_MAX_LINES = 80  # FallbackToLogsOnError takes the smaller of these two
TERMINATION_LOG_MAX_BYTES = 2048
STOP_GRACE_SECONDS = 10.0
BACKOFF_SECONDS = 10.0
TICK_SECONDS = 0.1
PROBE_INTERVAL_SECONDS = 0.3
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_VAR_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _probe(url: str) -> bool:
    try:
        with _NO_PROXY.open(url, timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


@dataclass
class PodRuntime:
    """One pod's process and what the kubelet reports about it."""

    namespace: str
    name: str
    uid: str
    statefulset: str  # empty for a pod of no StatefulSet (a Spark driver)
    index: int
    address: str
    directory: Path
    container: str = constants.MEMBER_CONTAINER
    restart_policy: str = "Always"
    termination_policy: str = "File"
    log_start: int = 0  # where the current process's output starts in the log
    netns: str | None = None
    veth: str | None = None
    process: subprocess.Popen | None = None
    log_file: Any = None
    ready: bool = False
    restarts: int = 0
    last_exit: dict[str, Any] | None = None
    restart_at: float | None = None
    probe_at: float = 0.0
    probe_task: asyncio.Task | None = None
    probe_url: str = ""
    started_at: str = ""
    reported: dict[str, Any] = field(default_factory=dict)

    @property
    def log_path(self) -> Path:
        return self.directory / "member.log"


class Kubelet:
    """See the module docstring. Use as ``async with Kubelet(k8s) as kubelet:``."""

    def __init__(self, k8s: Emulator, use_netns: bool | None = None) -> None:
        self.k8s = k8s
        reason = netns_support()
        self.netns = reason is None if use_netns is None else use_netns
        self.netns_reason = reason
        self.tag = f"{os.getpid() % 100000}"
        self.root = Path(tempfile.mkdtemp(prefix="jet-kubelet-"))
        self.pods: dict[tuple[str, str], PodRuntime] = {}
        self.slots: dict[tuple[str, str], int] = {}
        self.retired_logs: list[tuple[str, str]] = []
        self.errors: list[str] = []  # the stand-in's own failures (a test should see none)
        self.bridge = f"jkb{self.tag}"
        self.prefix = ""
        self._task: asyncio.Task | None = None
        self._netns_counter = 0

    @property
    def networking(self) -> str:
        """Which networking the pods get, and why loopback if so."""
        if self.netns:
            return "network namespaces"
        return f"loopback ({self.netns_reason or 'forced'})"

    # -- addresses -------------------------------------------------------------------------

    def address(self, statefulset: str, index: int, namespace: str = "default") -> str:
        """The IP pod ``<statefulset>-<index>`` gets (fixed before the pod exists)."""
        slot = self.slots.setdefault((namespace, statefulset), len(self.slots))
        host = 10 + slot * MAX_REPLICAS + index
        if host > 250 or index >= MAX_REPLICAS:
            raise ValueError(f"no address for {statefulset}-{index}: too many pods for the stand-in")
        return f"{self.prefix}{host}"

    def job_url(self, statefulset: str, namespace: str = "default") -> str:
        """Member 0's ``/job`` URL, for ``JET_OPERATOR_JOB_URL_TEMPLATE``."""
        return f"http://{self.address(statefulset, 0, namespace)}:{constants.MEMBER_HTTP_PORT}/job"

    # -- life ------------------------------------------------------------------------------

    async def __aenter__(self) -> "Kubelet":
        try:
            if self.netns:
                self.prefix = free_subnet("10.232")
                add_bridge(self.bridge, f"{self.prefix}1/24")
            else:
                self.prefix = f"127.232.{os.getpid() % 200 + 20}."
        except BaseException:
            await self.close()
            raise
        self._task = asyncio.create_task(self._run(), name="kubelet")
        return self

    async def __aexit__(self, *_: Any) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop the loop, every process, every namespace, the bridge; remove the pod directories."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - reported by the test
                pass
            self._task = None
        try:
            await asyncio.gather(*(self._stop(pod) for pod in list(self.pods.values())),
                                 return_exceptions=True)
        finally:
            for pod in list(self.pods.values()):
                self._release(pod)
            self.pods.clear()
            if self.netns:
                remove_link(self.bridge)
            shutil.rmtree(self.root, ignore_errors=True)

    def claim_directory(self, claim: str, namespace: str = "default") -> Path:
        """The directory standing in for PersistentVolumeClaim ``claim``: one for every pod that
        mounts it, kept while the stand-in lives (across pod deletions, as a volume is)."""
        directory = self.root / "claims" / namespace / claim
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def processes(self) -> list[subprocess.Popen]:
        """The running processes of the pods that exist now (members and Spark drivers)."""
        return [pod.process for pod in self.pods.values() if pod.process is not None]

    def logs(self) -> str:
        """Every member's output so far (for assertion messages)."""
        parts = list(self.retired_logs)
        for pod in self.pods.values():
            if pod.log_path.exists():
                parts.append((pod.name, pod.log_path.read_text(errors="replace")))
        parts += [("kubelet stand-in errors", "\n".join(self.errors))] if self.errors else []
        return "\n".join(f"----- {name}\n{text}" for name, text in parts)

    async def _run(self) -> None:
        while True:
            try:
                await self._sync()
            except Exception as error:  # noqa: BLE001 - kept going; the test checks self.errors
                log.exception("kubelet stand-in: sync failed")
                self.errors.append(f"sync failed: {error!r}")
            await asyncio.sleep(TICK_SECONDS)

    # -- the controllers ---------------------------------------------------------------------

    def _ours(self, resource: Any) -> dict[tuple[str, str], dict[str, Any]]:
        """The live objects of ``resource`` labelled as made by the operator (or from its templates)."""
        found = {}
        for (kind, namespace, name), obj in list(self.k8s.objects.items()):
            if kind != resource or obj.deleted:
                continue
            labels = (obj.raw.get("metadata") or {}).get("labels") or {}
            if labels.get(constants.LABEL_MANAGED_BY) == constants.MANAGED_BY:
                found[namespace, name] = obj.raw
        return found

    async def _sync(self) -> None:
        statefulsets = self._ours(STATEFULSETS_RESOURCE)
        wanted: dict[tuple[str, str], tuple[dict[str, Any], int]] = {}
        for (namespace, name), sts in statefulsets.items():
            for index in range(int(sts["spec"].get("replicas") or 0)):
                wanted[namespace, f"{name}-{index}"] = (sts, index)
        drivers = {key: obj for key, obj in self._ours(PODS_RESOURCE).items() if _is_spark_driver(obj)}
        # Pods that should not exist: not wanted, or deleted/replaced through the API.
        doomed = []
        for key, pod in list(self.pods.items()):
            current = get(self.k8s, PODS, pod.name, pod.namespace)
            if (key not in wanted and key not in drivers or current is None
                    or current["metadata"].get("uid") != pod.uid):
                doomed.append(pod)
        if doomed:
            await asyncio.gather(*(self._stop(pod) for pod in doomed))
            for pod in doomed:
                self._release(pod)
                del self.pods[pod.namespace, pod.name]
                current = get(self.k8s, PODS, pod.name, pod.namespace)
                if current is not None and current["metadata"].get("uid") == pod.uid:
                    self.k8s.objects[PODS, pod.namespace, pod.name].delete()
        # The garbage collector: our StatefulSets' pods that should not exist (the StatefulSet is
        # gone or smaller) and have no process.
        for key, obj in self._ours(PODS_RESOURCE).items():
            if key not in wanted and key not in self.pods and _owned_by_statefulset(obj):
                self.k8s.objects[(PODS, *key)].delete()
        for (namespace, pod_name), (sts, index) in wanted.items():
            runtime = self.pods.get((namespace, pod_name))
            if runtime is None:
                self._create_pod(namespace, pod_name, sts, index)
            else:
                self._tend(runtime)
        for (namespace, pod_name), obj in drivers.items():
            runtime = self.pods.get((namespace, pod_name))
            if runtime is None:
                self._run_driver(namespace, pod_name, obj)
            else:
                self._tend(runtime)

    def _create_pod(self, namespace: str, pod_name: str, sts: dict[str, Any], index: int) -> None:
        existing = get(self.k8s, PODS, pod_name, namespace)
        if existing is None:
            template = sts["spec"]["template"]
            self.k8s.objects[PODS, namespace, pod_name] = {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {
                    # As the real controller does: the pod's own name as a label (Services select by it).
                    "labels": {**(template["metadata"].get("labels") or {}),
                               "statefulset.kubernetes.io/pod-name": pod_name},
                    "annotations": dict(template["metadata"].get("annotations") or {}),
                    "name": pod_name, "namespace": namespace,
                    "uid": str(uuid.uuid4()), "creationTimestamp": _now(),
                    "ownerReferences": [{
                        "apiVersion": "apps/v1", "kind": "StatefulSet",
                        "name": sts["metadata"]["name"], "uid": sts["metadata"].get("uid"),
                        "controller": True, "blockOwnerDeletion": True,
                    }],
                },
                "spec": template["spec"],
                "status": {"phase": "Pending"},
            }
            existing = get(self.k8s, PODS, pod_name, namespace)
        name = sts["metadata"]["name"]
        self._launch(PodRuntime(
            namespace=namespace, name=pod_name, uid=existing["metadata"]["uid"], statefulset=name,
            index=index, address=self.address(name, index, namespace),
            directory=self._pod_directory(namespace, pod_name, existing),
        ), existing)

    def _run_driver(self, namespace: str, pod_name: str, obj: dict[str, Any]) -> None:
        """Run a Spark driver pod the operator created (its own address group: no StatefulSet)."""
        (container,) = [c for c in obj["spec"]["containers"] if c["name"] == constants.SPARK_DRIVER_CONTAINER]
        self._launch(PodRuntime(
            namespace=namespace, name=pod_name, uid=obj["metadata"]["uid"], statefulset="", index=0,
            address=self.address(pod_name, 0, namespace), directory=self._pod_directory(namespace, pod_name, obj),
            container=constants.SPARK_DRIVER_CONTAINER,
            restart_policy=obj["spec"].get("restartPolicy") or "Always",
            termination_policy=container.get("terminationMessagePolicy") or "File",
        ), obj)

    def _pod_directory(self, namespace: str, pod_name: str, obj: dict[str, Any]) -> Path:
        return self.root / f"{namespace}-{pod_name}-{obj['metadata']['uid'][:8]}"

    def _launch(self, runtime: PodRuntime, obj: dict[str, Any]) -> None:
        """Give a new pod its directory and network, start its process and report it."""
        self.pods[runtime.namespace, runtime.name] = runtime
        try:
            runtime.directory.mkdir(parents=True)
            if self.netns:
                self._netns_counter += 1
                runtime.netns = f"jkp{self.tag}-{self._netns_counter}"
                runtime.veth = f"jkv{self.tag}n{self._netns_counter}"
                add_netns(runtime.netns, runtime.veth, self.bridge, f"{runtime.address}/24")
                # A pod made again keeps its address; with a new MAC the other pods' (and the
                # host's) ARP entries for it would send to the old one for up to a minute.
                ip("-n", runtime.netns, "link", "set", "eth0", "address", _mac_of(runtime.address))
                self._write_hosts(runtime.namespace)
            self._start(runtime, obj)
        except Exception as error:  # noqa: BLE001 - reported on the pod, like a kubelet would
            log.exception("kubelet stand-in: cannot start %s", runtime.name)
            self.errors.append(f"cannot start {runtime.name}: {error!r}")
            runtime.last_exit = {"exitCode": 128, "reason": "StartError", "message": str(error)}
            runtime.restart_at = float("inf")
        self._report(runtime)

    def _member_hosts(self, namespace: str) -> dict[str, str]:
        """{pod DNS name: address} of every member pod our StatefulSets in ``namespace`` want."""
        hosts = {}
        for (sts_namespace, name), sts in self._ours(STATEFULSETS_RESOURCE).items():
            if sts_namespace == namespace:
                service = sts["spec"]["serviceName"]
                for i in range(int(sts["spec"].get("replicas") or 0)):
                    hosts[f"{name}-{i}.{service}.{namespace}.svc.cluster.local"] = self.address(name, i, namespace)
        return hosts

    def _write_hosts(self, namespace: str) -> None:
        """Every pod's /etc/hosts: the member pods' DNS names and, as a kubelet writes it, the
        pod's own host name (this machine's: the pods share its UTS namespace; the JVM of a
        Spark driver looks it up)."""
        entries = [(address, host) for host, address in self._member_hosts(namespace).items()]
        for pod in self.pods.values():
            if pod.namespace == namespace and pod.netns:
                write_hosts(pod.netns, [*entries, (pod.address, socket.gethostname())])

    # -- one pod's process ---------------------------------------------------------------------

    def _start(self, pod: PodRuntime, obj: dict[str, Any]) -> None:
        spec = obj["spec"]
        (container,) = [c for c in spec["containers"] if c["name"] == pod.container]
        mounts, tmpdir = self._materialise_volumes(pod, spec, container)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": os.pathsep.join(str(REPO_ROOT / d) for d in ("member", "operator", ".")),
            "HOME": str(pod.directory),
        }
        values = {variable["name"]: self._env_value(pod, obj, variable) for variable in container.get("env") or []}
        declared = {name: _rewrite(value, mounts) for name, value in values.items() if value is not None}
        env.update(declared)
        if tmpdir is not None:
            env["TMPDIR"] = tmpdir
        command = [_expand(part, declared) for part in container.get("command") or []]
        if command == [constants.JET_COMMAND]:
            command = [sys.executable, "-m", "jet.cli"]
        args = [_rewrite(_expand(arg, declared), mounts) for arg in container.get("args") or []]
        if not pod.statefulset:
            args = self._driver_args(pod, args)
        if self.netns:
            command = exec_in(pod.netns, command + args)
        elif pod.statefulset:
            command = command + self._loopback_args(pod, args)
        else:
            command = command + args
        if pod.log_file is None:
            pod.log_file = open(pod.log_path, "ab")
        pod.log_file.write(f"--- start {' '.join(command)}\n".encode())
        pod.log_file.flush()
        pod.log_start = pod.log_file.tell()
        pod.process = subprocess.Popen(command, env=env, stdout=pod.log_file, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, cwd=pod.directory, start_new_session=True)
        pod.ready = False
        pod.probe_at = 0.0
        pod.restart_at = None
        pod.started_at = _now()
        pod.probe_url = _readiness_url(pod.address, container)
        pod.ready = not pod.probe_url  # no probe: ready while running

    def _driver_args(self, pod: PodRuntime, args: list[str]) -> list[str]:
        """A Spark driver's arguments with Spark in local mode (the slots its executors would
        have) and, on loopback, the members' addresses and the pod's own bind address."""
        out = list(args)
        confs = dict(out[i + 1].split("=", 1) for i, arg in enumerate(out) if arg == "--conf")
        slots = int(confs.get("spark.executor.instances", 1)) * int(confs.get("spark.executor.cores", 1))
        out[out.index("--master") + 1] = f"local[{slots}]"
        if self.netns:
            return out
        hosts = self._member_hosts(pod.namespace)
        at = out.index("--members") + 1
        out[at] = ",".join(f"{hosts.get(host, host)}:{port}"
                           for host, port in (member.rsplit(":", 1) for member in out[at].split(",")))
        return [f"spark.driver.bindAddress={pod.address}" if arg.startswith("spark.driver.bindAddress=")
                else arg for arg in out]

    def _loopback_args(self, pod: PodRuntime, args: list[str]) -> list[str]:
        """``--host <pod address>`` and a static ``--peers`` list instead of the dns template."""
        out = list(args)
        if "--peers" in out:
            at = out.index("--peers")
            template = out[at + 1]
            if template.startswith("dns:"):
                port = template.rsplit(":", 1)[1]
                replicas = int(out[out.index("--replicas") + 1]) if "--replicas" in out else 1
                out[at + 1] = ",".join(f"{self.address(pod.statefulset, i, pod.namespace)}:{port}"
                                       for i in range(replicas))
        return out[:1] + ["--host", pod.address] + out[1:]

    def _env_value(self, pod: PodRuntime, obj: dict[str, Any], variable: dict[str, Any]) -> str | None:
        """The variable's value; None for an optional Secret key that is missing (no variable)."""
        if "value" in variable:
            return str(variable["value"])
        source = variable.get("valueFrom") or {}
        if "fieldRef" in source:
            return {
                "metadata.name": pod.name, "metadata.namespace": pod.namespace,
                "status.podIP": pod.address, "metadata.uid": pod.uid,
            }[source["fieldRef"]["fieldPath"]]
        if "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            data = _secret_data(get(self.k8s, "v1/secrets", ref["name"], pod.namespace))
            return data.get(ref["key"]) if ref.get("optional") else data[ref["key"]]
        if "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            return get(self.k8s, "v1/configmaps", ref["name"], pod.namespace)["data"][ref["key"]]
        raise ValueError(f"env {variable['name']}: unsupported source {source}")

    def _materialise_volumes(self, pod: PodRuntime, spec: dict[str, Any],
                             container: dict[str, Any]) -> tuple[list[tuple[str, str]], str | None]:
        """Write the pod's volumes under its directory; (mount path, host path) pairs, TMPDIR."""
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        mounts: list[tuple[str, str]] = []
        tmpdir = None
        for mount in container.get("volumeMounts") or []:
            volume = volumes[mount["name"]]
            if "persistentVolumeClaim" in volume:
                claim = self.claim_directory(volume["persistentVolumeClaim"]["claimName"], pod.namespace)
                mounts.append((mount["mountPath"].rstrip("/"), str(claim)))
                continue
            where = pod.directory / "volumes" / mount["name"]
            if not where.exists():
                where.mkdir(parents=True)
                mode = (volume.get("secret") or volume.get("configMap") or {}).get("defaultMode")
                for key, text in self._volume_files(pod, volume).items():
                    (where / key).write_text(text)
                    if mode is not None:
                        (where / key).chmod(mode)
            host_path = where / mount["subPath"] if mount.get("subPath") else where
            if "emptyDir" in volume and mount["mountPath"] == "/tmp":
                tmpdir = str(host_path)
                continue
            mounts.append((mount["mountPath"].rstrip("/"), str(host_path)))
        mounts.sort(key=lambda pair: len(pair[0]), reverse=True)
        return mounts, tmpdir

    def _volume_files(self, pod: PodRuntime, volume: dict[str, Any]) -> dict[str, str]:
        if "secret" in volume:
            data = _secret_data(get(self.k8s, "v1/secrets", volume["secret"]["secretName"], pod.namespace))
        elif "configMap" in volume:
            config_map = get(self.k8s, "v1/configmaps", volume["configMap"]["name"], pod.namespace)
            data = dict((config_map or {}).get("data") or {})
            items = volume["configMap"].get("items")
            if items:
                data = {item["path"]: data[item["key"]] for item in items}
            if config_map is None:
                raise FileNotFoundError(f"ConfigMap {volume['configMap']['name']} not found")
        elif "emptyDir" in volume:
            data = {}
        else:
            raise ValueError(f"volume {volume['name']}: unsupported kind")
        return data

    def _tend(self, pod: PodRuntime) -> None:
        """Follow one running pod: exits, restarts, readiness."""
        loop = asyncio.get_running_loop()
        if pod.process is not None and pod.process.poll() is not None:
            code = pod.process.returncode
            pod.last_exit = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                             "finishedAt": _now()}
            if code != 0 and pod.termination_policy == "FallbackToLogsOnError":
                pod.last_exit["message"] = self._log_tail(pod)
            pod.process, pod.ready = None, False
            if pod.restart_policy == "Never":
                pod.restart_at = None
            else:
                pod.restarts += 1
                pod.restart_at = loop.time() + (0 if pod.restarts == 1 else BACKOFF_SECONDS)
        if pod.process is None and pod.restart_at is not None and loop.time() >= pod.restart_at:
            obj = get(self.k8s, PODS, pod.name, pod.namespace)
            if obj is not None:
                self._start(pod, obj)
        if pod.process is not None and pod.probe_url and loop.time() >= pod.probe_at and (
                pod.probe_task is None or pod.probe_task.done()):
            if pod.probe_task is not None and not pod.probe_task.cancelled():
                pod.ready = bool(pod.probe_task.result())
            pod.probe_at = loop.time() + PROBE_INTERVAL_SECONDS
            pod.probe_task = asyncio.create_task(asyncio.to_thread(_probe, pod.probe_url))
        self._report(pod)

    def _log_tail(self, pod: PodRuntime) -> str:
        """What a kubelet makes the termination message under FallbackToLogsOnError."""
        pod.log_file.flush()
        with open(pod.log_path, "rb") as log_file:
            log_file.seek(pod.log_start)
            text = log_file.read()[-TERMINATION_LOG_MAX_BYTES:].decode(errors="replace")
        return "\n".join(text.splitlines()[-TERMINATION_LOG_MAX_LINES:])

    def _report(self, pod: PodRuntime) -> None:
        """Write the pod's status when it changed."""
        running = pod.process is not None
        ended = not running and pod.last_exit is not None and pod.restart_policy == "Never"
        if running:
            state: dict[str, Any] = {"running": {"startedAt": pod.started_at}}
        elif pod.last_exit is None:
            state = {"waiting": {"reason": "ContainerCreating"}}
        elif pod.last_exit.get("reason") == "StartError":
            state = {"waiting": {"reason": "CreateContainerError", "message": pod.last_exit["message"]}}
        elif pod.restarts >= 2:
            state = {"waiting": {"reason": "CrashLoopBackOff", "message": (
                f"back-off {int(BACKOFF_SECONDS)}s restarting failed container={pod.container} "
                f"pod={pod.name}: exit code {pod.last_exit['exitCode']}")}}
        else:
            state = {"terminated": pod.last_exit}
        container = {"name": pod.container, "ready": pod.ready, "restartCount": pod.restarts,
                     "state": state, "image": "jet (stand-in)"}
        if pod.last_exit is not None and not ended:
            container["lastState"] = {"terminated": pod.last_exit}
        if ended:
            phase = "Succeeded" if pod.last_exit["exitCode"] == 0 else "Failed"
        else:
            phase = "Running" if running or pod.restarts else "Pending"
        status = {
            "phase": phase,
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Initialized", "status": "True"},
                {"type": "ContainersReady", "status": str(pod.ready)},
                {"type": "Ready", "status": str(pod.ready)},
            ],
            "hostIP": f"{self.prefix}1" if self.netns else "127.0.0.1",
            "podIP": pod.address,
            "podIPs": [{"ip": pod.address}],
            "containerStatuses": [container],
        }
        if status == pod.reported:
            return
        obj = get(self.k8s, PODS, pod.name, pod.namespace)
        if obj is None or obj["metadata"].get("uid") != pod.uid:
            return
        pod_object = self.k8s.objects[PODS, pod.namespace, pod.name]
        pod_object.patch({"status": None, "spec": {"nodeName": "kubelet-stand-in"}})
        pod_object.patch({"status": status})
        pod.reported = status

    async def _stop(self, pod: PodRuntime) -> None:
        """SIGTERM the pod's process group, SIGKILL it after the grace period."""
        process = pod.process
        if pod.probe_task is not None:
            pod.probe_task.cancel()
        if process is None or process.poll() is not None:
            return
        _signal_group(process, signal.SIGTERM)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STOP_GRACE_SECONDS
        while process.poll() is None and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if process.poll() is None:
            _signal_group(process, signal.SIGKILL)
            await asyncio.to_thread(process.wait)
        _signal_group(process, signal.SIGKILL)  # anything the member left behind in its group

    def _release(self, pod: PodRuntime) -> None:
        """Forget a stopped pod: its namespace, log handle (the log text is kept)."""
        if pod.process is not None and pod.process.poll() is None:
            _signal_group(pod.process, signal.SIGKILL)
            pod.process.wait()
        if pod.log_file is not None:
            pod.log_file.close()
            pod.log_file = None
        if pod.log_path.exists():
            self.retired_logs.append((pod.name, pod.log_path.read_text(errors="replace")))
        if pod.netns is not None:
            remove_netns(pod.netns, pod.veth)
            pod.netns = None


def _mac_of(address: str) -> str:
    """A locally administered MAC address fixed by the IPv4 ``address``."""
    return "02:4a:" + ":".join(f"{int(octet):02x}" for octet in address.split("."))


def _readiness_url(address: str, container: dict[str, Any]) -> str:
    """The URL of the container's ``readinessProbe.httpGet`` (a named port looked up); empty
    when it has no probe."""
    if "readinessProbe" not in container:
        return ""
    probe = container["readinessProbe"]["httpGet"]
    port = probe["port"]
    if isinstance(port, str):
        (port,) = [p["containerPort"] for p in container.get("ports") or [] if p.get("name") == port]
    return f"http://{address}:{port}{probe.get('path', '/')}"


def _signal_group(process: subprocess.Popen, number: int) -> None:
    try:
        os.killpg(process.pid, number)
    except (ProcessLookupError, PermissionError):
        pass


def _rewrite(value: str, mounts: list[tuple[str, str]]) -> str:
    for mount_path, host_path in mounts:
        if value == mount_path or value.startswith(mount_path + "/"):
            return host_path + value[len(mount_path):]
    return value


def _secret_data(secret: dict[str, Any] | None) -> dict[str, str]:
    if secret is None:
        raise FileNotFoundError("Secret not found")
    data = {key: base64.b64decode(value).decode() for key, value in (secret.get("data") or {}).items()}
    data.update(secret.get("stringData") or {})
    return data


def _expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion in command and args: a variable the container declares
    is replaced, ``$$`` is a literal ``$``, anything else is left as written."""
    return _VAR_REFERENCE.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), value)


def _is_spark_driver(obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(constants.LABEL_JET_COMPONENT) in constants.SPARK_COMPONENTS


def _owned_by_statefulset(obj: dict[str, Any]) -> bool:
    references = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(reference.get("kind") == "StatefulSet" for reference in references)

