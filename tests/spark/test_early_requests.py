"""A Spark side that asks before the members are ready for Spark keeps asking, on new links.

Real member processes: until a member has loaded a job with Spark vertices it does not handle
Spark frames and breaks the stream of the first one. ``wait_for_vertex`` must dial again and
find the vertex once it runs, instead of reusing the dead link until its timeout.
"""

import threading

import jet
from jet.connectors.spark import hub as spark_hub
from jet.connectors.spark.client import wait_for_vertex
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


def test_a_probe_before_the_hub_exists_is_asked_again_on_a_new_link(tmp_path):
    with jet.local_cluster(members=2, log_dir=tmp_path) as cluster:
        options = JetOptions(job=EARLY_JOB, vertex=VERTEX, members=tuple(cluster.addresses),
                             token=cluster.token, ready_timeout_s=60)
        found: dict = {}
        waiting = threading.Thread(target=lambda: found.update(owners=_owners_or_error(options)), daemon=True)
        waiting.start()
        for index in (0, 1):
            wait_until(lambda: "SPARK_REQUEST" in cluster.log_paths[index].read_text(errors="replace"), 30,
                       f"member {index} breaking the stream of an early Spark request")
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
