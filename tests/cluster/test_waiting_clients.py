"""Clients waiting on their jobs never lock another client out of member 0 (on real members)."""

from __future__ import annotations

import threading

import jet
from jet.cluster.client import JetClient
from jet.cluster.coordination.job_state import JobStatus
from jet.execution.errors import JobCancelledError

from tests.cluster.cluster_support import endless_dag, wait_until

JOINS = 100
CLIENTS = 4


def test_a_hundred_joins_from_several_clients_leave_room_for_another_clients_submit():
    """Long job_wait calls held all 32 client-call slots: every other client's submit and status
    were refused (RESOURCE_EXHAUSTED)."""
    from jet import Pipeline, Sinks, Sources

    with jet.local_cluster(members=1) as cluster:
        endless = cluster.new_job(endless_dag(), {"name": "endless"})
        wait_until(lambda: endless.status is JobStatus.RUNNING, what="RUNNING")
        clients = [JetClient(cluster.addresses, cluster.token) for _ in range(CLIENTS)]
        ended: list[BaseException] = []

        def join(client: JetClient) -> None:
            try:
                client.job(endless.id).join(timeout=120)
            except BaseException as error:  # noqa: BLE001 - what ended the wait is what the test checks
                ended.append(error)

        joins = [threading.Thread(target=join, args=(clients[i % CLIENTS],), daemon=True) for i in range(JOINS)]
        for thread in joins:
            thread.start()
        try:
            other = JetClient(cluster.addresses, cluster.token)
            p = Pipeline.create()
            p.read_from(Sources.items([1, 2, 3])).map(lambda x: x * 10).write_to(Sinks.list())
            small = other.new_job(p)  # refused when the waiting calls held every slot
            small.join(timeout=60)
            assert sorted(small.result()) == [10, 20, 30]
            assert other.job(endless.id).status is JobStatus.RUNNING
            other.close()
        finally:
            endless.cancel()
            for thread in joins:
                thread.join(60)
            for client in clients:
                client.close()
        assert len(ended) == JOINS and all(isinstance(error, JobCancelledError) for error in ended), \
            {type(error).__name__ for error in ended}
