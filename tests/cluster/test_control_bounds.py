"""Every wait of the control plane has a bound and a named outcome (real member processes).

The lost reports and the silent member are made with the members' fault-injection settings
(``fault_drop_reports``, ``fault_unanswered_state_queries``), which act on member 1 only: member 0
reports to itself in place.
"""

import os
import time
from pathlib import Path

import jet
import pytest
from jet.cluster.coordination.coordinator import JobStatus
from jet.connectors.sinks import ListResultSinkP
from jet.core import DAG, Edge
from jet.core.processors import items_source_p, noop_p
from jet.execution.errors import JobFailedError

from tests.cluster.cluster_support import wait_until

ITEMS = list(range(1000))
FAST_BOUNDS = {"report_retry_ms": 200, "report_wait_ms": 500, "control_timeout_ms": 1000,
               "cancel_grace_ms": 500}


def listing_dag() -> DAG:
    """Each of 2 members lists its half of ITEMS into the job's results."""
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(ITEMS), 1)
    sink = dag.new_vertex("sink", lambda: ListResultSinkP("default"), 1)
    dag.edge(Edge.between(source, sink))
    return dag


def member_log(cluster, index: int) -> str:
    return cluster.log_paths[index].read_text(errors="replace")


def test_a_report_lost_once_is_sent_again_and_the_job_completes(tmp_path):
    with jet.local_cluster(members=2, log_dir=tmp_path, fault_drop_reports=1) as cluster:
        job = cluster.new_job(listing_dag())
        job.join(timeout=60)
        assert job.status is JobStatus.COMPLETED
        assert sorted(job.result()) == ITEMS, "member 1's results came with its second report"
        assert "report of job" in member_log(cluster, 1) and "retrying" in member_log(cluster, 1)


def test_a_report_lost_for_good_is_taken_from_the_members_answer(tmp_path):
    with jet.local_cluster(members=2, log_dir=tmp_path, fault_drop_reports=1000, **FAST_BOUNDS) as cluster:
        job = cluster.new_job(listing_dag())
        job.join(timeout=60)
        assert job.status is JobStatus.COMPLETED
        assert sorted(job.result()) == ITEMS
        assert "member 1 had finished but its report was lost" in member_log(cluster, 0)


def test_a_member_that_never_reports_fails_the_job_naming_it(tmp_path):
    with jet.local_cluster(members=2, log_dir=tmp_path, fault_drop_reports=1000,
                           fault_unanswered_state_queries=1000, **FAST_BOUNDS) as cluster:
        job = cluster.new_job(listing_dag())
        with pytest.raises(JobFailedError) as failure:
            job.join(timeout=60)
        assert job.status is JobStatus.FAILED
        assert failure.value.member_index == 1
        message = str(failure.value)
        assert "MemberSilentError: member 1 sent no report" in message
        assert "did not answer when asked for the state of execution" in message


class SupplierStuckOnOneMember:
    """A processor supplier that, in the process ``pid`` only, waits for ``gate`` to exist."""

    def __init__(self, pid: int, gate: Path) -> None:
        self.pid, self.gate = pid, str(gate)

    def __call__(self):
        deadline = time.monotonic() + 120
        while os.getpid() == self.pid and not os.path.exists(self.gate) and time.monotonic() < deadline:
            time.sleep(0.05)
        return noop_p()()


def test_a_member_that_does_not_answer_init_within_the_setting_fails_the_job_naming_it(tmp_path):
    gate = tmp_path / "let-init-finish"
    with jet.local_cluster(members=2, log_dir=tmp_path, init_timeout_ms=1000) as cluster:
        dag = DAG()
        dag.new_vertex("stuck", SupplierStuckOnOneMember(cluster.members[1].pid, gate), 1)
        job = cluster.new_job(dag)
        try:
            with pytest.raises(JobFailedError) as failure:
                job.join(timeout=20)  # the built-in bound before init_timeout_ms was 30 s
        finally:
            gate.touch()
        assert failure.value.member_index == 1
        assert "member 1 failed init" in str(failure.value)
        assert "DEADLINE_EXCEEDED" in str(failure.value)
        # A member starts within its init: the init that finishes after the job gave up on it
        # must not start the execution it was cancelled for.
        wait_until(lambda: "before its init finished" in member_log(cluster, 1), 20, "member 1's late init refused")
        time.sleep(0.5)
        assert "completed on member 1" not in member_log(cluster, 1)
        assert "initialised on member 1" not in member_log(cluster, 1)
