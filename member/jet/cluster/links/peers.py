"""Where the members are: the ``--peers`` list, member indexes from pod names, waiting for peers.

``--peers`` takes one of three forms:

- a comma list ``host:port,host:port`` (the local cluster, tests);
- the path of a hostfile with one ``host:port`` a line, ``#`` starting a comment;
- ``dns:<template>`` with ``{i}`` in the template and ``replicas`` members, e.g.
  ``dns:wc-member-{i}.wc-members.default.svc.cluster.local:5701`` (the stable DNS names a
  Kubernetes headless Service gives the pods of a StatefulSet).

The position of an address in the list is the member's index; on Kubernetes it is the pod ordinal.
"""

from __future__ import annotations

import logging
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

DNS_PREFIX = "dns:"
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PeerAddress:
    """One member's host and port."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_address(text: str, source: str = "--peers") -> PeerAddress:
    """Parse ``host:port`` (``[v6addr]:port`` for IPv6); the error names ``text`` and ``source``."""
    text = text.strip()
    match = re.fullmatch(r"\[([^\]]+)\]:(\d+)|([^:\s\[\]]+):(\d+)", text)
    if not match:
        raise ValueError(f"{source}: expected host:port, got {text!r}")
    host = match.group(1) or match.group(3)
    port = int(match.group(2) or match.group(4))
    if not 0 < port < 65536:
        raise ValueError(f"{source}: port of {text!r} must be 1..65535")
    return PeerAddress(host, port)


def parse_peers(spec: str, replicas: int | None = None) -> list[PeerAddress]:
    """The member addresses, in member-index order, from any of the three ``--peers`` forms."""
    spec = spec.strip()
    if spec.startswith(DNS_PREFIX):
        template = spec[len(DNS_PREFIX):]
        if "{i}" not in template:
            raise ValueError(f"--peers {spec!r}: a dns: template must contain {{i}} for the member index")
        if replicas is None or replicas < 1:
            raise ValueError(f"--peers {spec!r}: a dns: template needs replicas >= 1, got {replicas!r}")
        return [parse_address(template.replace("{i}", str(i)), f"--peers {spec!r} (member {i})")
                for i in range(replicas)]
    path = Path(spec)
    if "," not in spec and path.is_file():
        return _parse_hostfile(path)
    entries = [entry for entry in spec.split(",") if entry.strip()]
    if not entries:
        raise ValueError("--peers is empty: give host:port,... or a hostfile or dns:<template>")
    if len(entries) == 1 and ":" not in entries[0]:
        raise ValueError(f"--peers {spec!r} is neither host:port nor an existing hostfile")
    return [parse_address(entry) for entry in entries]


def _parse_hostfile(path: Path) -> list[PeerAddress]:
    addresses = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if line:
            addresses.append(parse_address(line, f"hostfile {str(path)!r} line {number}"))
    if not addresses:
        raise ValueError(f"hostfile {str(path)!r} lists no host:port")
    return addresses


def member_index_from_pod_name(pod_name: str) -> int:
    """The trailing ordinal of a StatefulSet pod name: ``'wc-member-2'`` -> 2."""
    match = re.search(r"-(\d+)$", pod_name.strip())
    if not match:
        raise ValueError(f"pod name {pod_name!r} has no trailing ordinal (expected <name>-<number>)")
    return int(match.group(1))


def tcp_probe(address: PeerAddress, timeout_s: float = 1.0) -> bool:
    """Whether ``address`` resolves and accepts a TCP connection."""
    try:
        with socket.create_connection((address.host, address.port), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_for_peers(addresses: Sequence[PeerAddress], self_index: int, timeout_s: float,
                   probe: Callable[[PeerAddress], bool] = tcp_probe, *,
                   initial_backoff_s: float = 0.05, max_backoff_s: float = 0.5,
                   clock: Callable[[], float] = time.monotonic,
                   sleep: Callable[[float], None] = time.sleep) -> None:
    """Probe every other member until all answer, with exponential backoff, for at most ``timeout_s``.

    Logs each member when it is first seen. Raises ``TimeoutError`` listing the members not seen.
    """
    deadline = clock() + timeout_s
    missing = {i: address for i, address in enumerate(addresses) if i != self_index}
    backoff = initial_backoff_s
    attempt = 0
    while True:
        attempt += 1
        for index, address in list(missing.items()):
            if probe(address):
                del missing[index]
                logger.info("member %d sees member %d at %s (attempt %d)", self_index, index, address, attempt)
        if not missing:
            return
        remaining = deadline - clock()
        if remaining <= 0:
            names = ", ".join(f"{i} ({a})" for i, a in sorted(missing.items()))
            raise TimeoutError(f"member {self_index} did not see members {names} within {timeout_s} s "
                               f"({attempt} attempts)")
        logger.info("member %d waits for members %s; next try in %.2f s",
                    self_index, sorted(missing), min(backoff, remaining))
        sleep(min(backoff, remaining))
        backoff = min(backoff * 2, max_backoff_s)
