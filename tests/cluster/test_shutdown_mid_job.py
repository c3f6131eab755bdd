"""A job cut short by the execution service shutting down is never COMPLETED.

One real member in this process (gRPC server, coordinator): its service is shut down while a
non-cooperative processor is mid-job; the coordinator, and so a client, must see the job FAILED
as cancelled, not COMPLETED with partial output.
"""

import time

from jet.cluster.coordination.coordinator import JobStatus
from jet.core import Processor

from tests.cluster.cluster_support import wait_until
from tests.cluster.member_support import member_in_this_process, submit_one_vertex


class BlockingWriterP(Processor):
    """Non-cooperative, the job's only tasklet: writes (counts) a batch per call, forever."""

    is_cooperative = False
    batches = 0

    def complete(self) -> bool:
        BlockingWriterP.batches += 1
        time.sleep(0.001)
        return False


def test_a_member_service_shut_down_mid_job_fails_the_job_as_cancelled():
    with member_in_this_process() as member:
        job = submit_one_vertex(member, "writer", BlockingWriterP)
        wait_until(lambda: BlockingWriterP.batches >= 10, what="the job running")
        member.service.shutdown()
        record = member.coordinator.wait(job, 60)
        assert record.status is JobStatus.FAILED, record.to_header()
        assert record.failure.cancelled and "shut down" in record.failure.error
