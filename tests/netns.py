"""Network namespaces for test members with their own IPs and pod DNS names (as on Kubernetes).

Needs root and iproute2 (``ip netns add``); :func:`netns_support` says whether this machine
allows it, and why not. Callers remove what they create: :func:`remove_netns` deletes a
namespace with its veth pair and its ``/etc/netns/<ns>`` directory, :func:`remove_link` a bridge.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import uuid
from typing import Iterable

from tests.system_packages import PACKAGES


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``ip <args>`` (raises CalledProcessError when ``check`` and it fails)."""
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=10)


@functools.cache
def netns_support() -> str | None:
    """None when network namespaces work here (tried once), else the reason they do not."""
    if shutil.which("ip") is None:
        return f"the ip command is not installed (apt-get install iproute2: {PACKAGES['iproute2']})"
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    probe = f"jetprobe-{uuid.uuid4().hex[:8]}"
    result = ip("netns", "add", probe, check=False)
    if result.returncode != 0:
        return f"ip netns add does not work here: {result.stderr.strip()}"
    ip("netns", "del", probe, check=False)
    return None


def free_subnet(first_octets: str) -> str:
    """A ``<first_octets>.X.`` prefix of a /24 that no route on this host uses yet.

    Raises LookupError when every X in 100..199 is taken.
    """
    routes = ip("route").stdout
    for third in [100 + os.getpid() % 100, *range(100, 200)]:
        prefix = f"{first_octets}.{third}."
        if prefix not in routes:
            return prefix
    raise LookupError(f"no free {first_octets}.X.0/24 subnet")


def add_bridge(bridge: str, address: str) -> None:
    """A bridge with the host side's ``address`` (CIDR), up."""
    ip("link", "add", bridge, "type", "bridge")
    ip("addr", "add", address, "dev", bridge)
    ip("link", "set", bridge, "up")


def add_netns(name: str, veth: str, bridge: str, address: str) -> None:
    """Namespace ``name`` whose ``eth0`` (``address``, CIDR) is paired with ``veth`` on ``bridge``.

    Partially created state is left for :func:`remove_netns` (call it in a ``finally``).
    """
    ip("netns", "add", name)
    ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
    ip("link", "set", veth, "master", bridge, "up")
    ip("-n", name, "addr", "add", address, "dev", "eth0")
    ip("-n", name, "link", "set", "eth0", "up")
    ip("-n", name, "link", "set", "lo", "up")


def write_hosts(name: str, entries: Iterable[tuple[str, str]]) -> None:
    """``/etc/netns/<name>/hosts`` (what ``ip netns exec`` shows as /etc/hosts): (address, host name).

    Rewritten in place, so processes already running in the namespace see the new names.
    """
    os.makedirs(f"/etc/netns/{name}", exist_ok=True)
    lines = ["127.0.0.1 localhost"] + [f"{address} {host}" for address, host in entries]
    with open(f"/etc/netns/{name}/hosts", "w") as hosts:
        hosts.write("\n".join(lines) + "\n")


def remove_netns(name: str, veth: str | None = None) -> None:
    """Delete a namespace, its veth pair and ``/etc/netns/<name>``; never raises."""
    if veth is not None:
        ip("link", "del", veth, check=False)
    ip("netns", "del", name, check=False)
    shutil.rmtree(f"/etc/netns/{name}", ignore_errors=True)


def remove_link(name: str) -> None:
    """Delete a link (a bridge); never raises."""
    ip("link", "del", name, check=False)


def exec_in(name: str, command: list[str]) -> list[str]:
    """``command`` run inside namespace ``name``."""
    return ["ip", "netns", "exec", name, *command]
