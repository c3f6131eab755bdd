"""Members in this process with real gRPC servers, for the Spark side to dial.

The members' data plane between each other is the in-process one of tests/cluster; Spark
tasks and drivers reach each member over its real MemberServer with the cluster token.
"""

from __future__ import annotations

import threading

from jet.cluster.links.transport import MemberServer

from tests.cluster.inprocess import InProcessCluster

TOKEN = "spark-test-token"
JOB_ID = "job"  # what DistributedExecutionPlan names the job by default


class GrpcCluster(InProcessCluster):
    def __init__(self, member_count: int, flow_control_period_ms: int = 100) -> None:
        self.servers: list[MemberServer] = []
        super().__init__(member_count, flow_control_period_ms)
        self.servers = [MemberServer(0, TOKEN, host="127.0.0.1", on_client_frame=network.on_frame).start()
                        for network in self.networks]
        self.addresses = [f"127.0.0.1:{server.port}" for server in self.servers]

    def _sender(self, me: int):
        def send(peer: int, frame: bytes) -> None:
            if peer >= 0:
                self.networks[peer].on_frame(me, frame)
            else:
                self.servers[me].send(peer, frame)
        return send

    def close(self) -> None:
        for server in self.servers:
            server.stop(0)
        super().close()


def run_with_spark(spark, pipeline, members: int = 2, timeout: float = 120, spark_side=None,
                   on_built=None) -> dict[str, list]:
    """Run ``pipeline`` on in-process members while the Spark side runs in a thread; return the
    job's named results. ``spark_side(spark, pipeline, addresses)`` defaults to run_spark_side."""
    from jet.spark.runner import run_spark_side

    cluster = GrpcCluster(members)
    errors: list[BaseException] = []

    def side() -> None:
        try:
            if spark_side is None:
                run_spark_side(spark, pipeline, cluster.addresses, TOKEN, JOB_ID, ready_timeout_s=60)
            else:
                spark_side(spark, pipeline, cluster.addresses)
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    thread = threading.Thread(target=side, daemon=True)

    def built(plans) -> None:
        thread.start()
        if on_built is not None:
            on_built(plans)

    try:
        job_error = None
        try:
            cluster.run(lambda: pipeline.to_dag(1), timeout=timeout, on_built=built)
        except BaseException as error:  # noqa: BLE001
            job_error = error
        thread.join(timeout)
        if job_error is not None:
            raise job_error
        if errors:
            raise errors[0]
        return cluster.results()
    finally:
        cluster.close()
