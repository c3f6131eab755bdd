"""A job cut short by the execution service shutting down is never COMPLETED.

One real member in this process (gRPC server, coordinator): its service is shut down while a
non-cooperative processor is mid-job; the coordinator, and so a client, must see the job FAILED
as cancelled, not COMPLETED with partial output.
"""

import time

from jet.cluster.coordinator import JobStatus
from jet.cluster.member import Member
from jet.cluster.settings import MemberSettings
from jet.core import DAG, Processor


class BlockingWriterP(Processor):
    """Non-cooperative, the job's only tasklet: writes (counts) a batch per call, forever."""

    is_cooperative = False
    batches = 0

    def complete(self) -> bool:
        BlockingWriterP.batches += 1
        time.sleep(0.001)
        return False


def test_a_member_service_shut_down_mid_job_fails_the_job_as_cancelled():
    member = Member(MemberSettings(port=0, http_port=0, host="127.0.0.1", cooperative_threads=1,
                                   token="shutdown-test")).start()
    try:
        dag = DAG()
        dag.new_vertex("writer", BlockingWriterP, 1)
        job = member.submit(dag)
        deadline = time.monotonic() + 30
        while BlockingWriterP.batches < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert BlockingWriterP.batches >= 10, "the job runs"
        member.service.shutdown()
        record = member.coordinator.wait(job, 60)
        assert record.status is JobStatus.FAILED, record.to_header()
        assert record.failure.cancelled and "shut down" in record.failure.error
    finally:
        member.stop()
