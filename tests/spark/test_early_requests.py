"""A Spark side that asks before the job runs is answered "not yet" and keeps asking.

Real member processes: a member answers Spark requests from its start (the hub is registered
by ``jet member``), so an early probe gets a reply that names no processors instead of a broken
stream; and should a link die anyway, ``wait_for_vertex`` dials again instead of reusing it.
"""

import threading

import jet
from jet.connectors.spark import hub as spark_hub
from jet.connectors.spark import protocol
from jet.connectors.spark.client import MemberLink, wait_for_vertex
from jet.connectors.spark.options import JetOptions
from jet.core import DAG, Processor
from tests.cluster.cluster_support import wait_until

EARLY_JOB = "asked-before-it-ran"
VERTEX = "spark-out"


class EarlySinkP(Processor):
    """Stands for a Spark sink of job EARLY_JOB: registers its endpoint and runs until cancelled."""

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._endpoint = spark_hub.register_endpoint(context.member_index, EARLY_JOB, VERTEX, "sink",
                                                     context.global_index, context.total_parallelism,
                                                     capacity_items=16)

    def complete(self) -> bool:
        return False

    def close(self) -> None:
        spark_hub.unregister_endpoint(self._endpoint)


def test_a_probe_before_any_job_is_answered_not_yet_on_a_link_that_stays_open(tmp_path):
    with jet.local_cluster(members=2, log_dir=tmp_path) as cluster:
        for index, address in enumerate(cluster.addresses):
            link = MemberLink(address, index, cluster.token)
            try:
                for _ in range(2):  # the same link answers again: the first reply did not close it
                    reply, _payload = link.request({"op": protocol.PROBE, "job": EARLY_JOB, "vertex": VERTEX})
                    assert (reply["member"], reply["processors"], reply["ended"]) == (index, [], None)
                assert not link.is_dead
            finally:
                link.close()
        for index in (0, 1):
            assert "SPARK_REQUEST" not in cluster.log_paths[index].read_text(errors="replace")


def test_a_probe_before_the_job_runs_finds_the_vertex_once_it_does(tmp_path):
    with jet.local_cluster(members=2, log_dir=tmp_path) as cluster:
        options = JetOptions(job=EARLY_JOB, vertex=VERTEX, members=tuple(cluster.addresses),
                             token=cluster.token, ready_timeout_s=60)
        found: dict = {}
        waiting = threading.Thread(target=lambda: found.update(owners=_owners_or_error(options)), daemon=True)
        waiting.start()
        dag = DAG()
        dag.new_vertex(VERTEX, EarlySinkP, 1)
        job = cluster.new_job(dag)
        waiting.join(90)
        job.cancel()
        assert found.get("owners") == {0: 0, 1: 1}, found


def _owners_or_error(options):
    try:
        return wait_for_vertex(options, "sink")
    except Exception as error:  # noqa: BLE001 - the test shows what went wrong
        return error
