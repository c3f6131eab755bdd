"""Floods of connections that never authenticate: a member keeps serving its cluster.

The members are spawned (not forked) with a soft limit of 256 open files, so a flood of a few
hundred connections runs a member out of file descriptors, as a larger one would in production.
"""

from __future__ import annotations

import http.client
import os
import resource
import socket
from contextlib import ExitStack

from jet.cluster.links.tcp_links import MAX_GREETINGS
from jet.cluster.local.local_cluster import LocalCluster
from jet.cluster.member_http import HTTP_CONNECTIONS, HTTP_READ_TIMEOUT_S
from tests.cluster.cluster_support import wait_until
from tests.cluster.member_loss_support import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TIMEOUT_MS, REJOIN_WAIT_S

OPEN_FILES = 256
FLOOD = 400


def spawned_cluster_with_few_files(tmp_path) -> LocalCluster:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, hard))
    try:  # a PYTHONHASHSEED of their own makes them spawned, so they inherit this limit
        return LocalCluster(2, log_dir=tmp_path, member_env=[{"PYTHONHASHSEED": "101"}, {"PYTHONHASHSEED": "102"}],
                            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS, heartbeat_timeout_ms=HEARTBEAT_TIMEOUT_MS)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def flood(stack: ExitStack, port: int, count: int) -> int:
    """Open ``count`` connections to ``port`` and send nothing; how many connected."""
    opened = 0
    for _ in range(count):
        try:
            stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=2))
            opened += 1
        except OSError:
            pass  # the backlog is full: a flood all the same
    return opened


def test_a_member_links_back_after_a_flood_without_tickets_took_its_files(tmp_path):
    """The accept loop quit on the first accept() error (no file descriptor left), so a
    restarted member 0 never linked back to the flooded member."""
    assert FLOOD > OPEN_FILES > MAX_GREETINGS
    with spawned_cluster_with_few_files(tmp_path) as cluster:
        with ExitStack() as stack:
            assert flood(stack, cluster.link_ports[1], FLOOD) > OPEN_FILES
            cluster.kill_member(0)  # it dials member 1's link port when it comes back
            wait_until(lambda: cluster.member_restarts >= 1, REJOIN_WAIT_S, "member 0 restarted")
        wait_until(cluster.cluster_ready, REJOIN_WAIT_S, "member 0 linked back to member 1", interval_s=0.2)
        log = cluster.log_paths[1].read_text()
        assert "have not shown a ticket yet" in log
        assert log.count("refused a link connection") < 20, "refusals are logged a few times, not per connection"


def test_idle_http_connections_take_a_bounded_number_of_threads_and_time_out(tmp_path):
    """Each open HTTP connection held a thread of the member, with no read timeout."""
    with spawned_cluster_with_few_files(tmp_path) as cluster:
        port, pid = cluster.http_ports[0], cluster.members[0].pid
        before = threads_of(pid)
        with ExitStack() as stack:
            flood(stack, port, HTTP_CONNECTIONS + 100)
            wait_until(lambda: threads_of(pid) >= before + HTTP_CONNECTIONS // 2, 10, "the flood being served")
            assert threads_of(pid) <= before + HTTP_CONNECTIONS + 4
            # The idle connections time out and the member answers again while they stay open.
            wait_until(lambda: healthz(port) == 200, HTTP_READ_TIMEOUT_S + 20, "/healthz answered after the flood")


def threads_of(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def healthz(port: int) -> int | None:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/healthz")
        return connection.getresponse().status
    except (OSError, http.client.HTTPException):
        return None
