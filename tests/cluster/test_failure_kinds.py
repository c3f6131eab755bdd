"""Whether a failure restarts a job is a typed fact set where it happened, never read from its
message: a job's own ConnectionError fails the job; the engine's broken link is a lost member."""

import pytest

import jet
from jet import Pipeline, Sinks, Sources
from jet.cluster.coordination.job_restarts import Next, decide
from jet.cluster.executions.outcome import ExecutionOutcome, FailureKind
from jet.cluster.links.errors import LinkError
from jet.execution.errors import JobCancelledError, JobFailedError, MemberLostError
from jet.job_config import JobConfig, ProcessingGuarantee


def outcome_of(error: BaseException) -> ExecutionOutcome:
    return ExecutionOutcome.of_failure("job", 1, 0, error)


def test_a_failure_is_the_jobs_unless_the_engine_says_otherwise():
    assert outcome_of(ConnectionError("refused")).kind is FailureKind.JOB
    assert outcome_of(ValueError("bad")).kind is FailureKind.JOB
    assert outcome_of(LinkError("stream with member 1 broke")).kind is FailureKind.MEMBER_LOST
    assert outcome_of(MemberLostError("member 1 was lost", tasklet="connection to member 1")).kind \
        is FailureKind.MEMBER_LOST
    assert outcome_of(JobCancelledError("cancelled")).kind is FailureKind.CANCELLED
    assert ExecutionOutcome.of_failure("job", 1, 0, None).kind is FailureKind.NONE


def test_the_kind_crosses_the_wire_and_a_failure_needs_one():
    outcome = outcome_of(LinkError("gone"))
    assert ExecutionOutcome.from_header(outcome.to_header()) == outcome
    with pytest.raises(ValueError, match="needs a FailureKind"):
        ExecutionOutcome("job", 1, 0, ok=False, error="E: x")


@pytest.mark.parametrize("auto_scaling", [True, False])
@pytest.mark.parametrize("guarantee", list(ProcessingGuarantee))
def test_decide_restarts_only_what_the_cluster_failed(guarantee, auto_scaling):
    config = JobConfig(processing_guarantee=guarantee, auto_scaling=auto_scaling)
    # The message of a job's failure that once read as a lost member's does not matter any more.
    users = ExecutionOutcome("job", 1, 0, ok=False, error="ConnectionError: MemberLostError", kind=FailureKind.JOB,
                             tasklet="connection to member 1")
    assert decide(config, None, users, set()).next is Next.FAIL
    lost = outcome_of(LinkError("stream with member 1 broke"))
    expected = Next.RESTART_AFTER_REJOIN_WAIT if auto_scaling or guarantee.snapshots else Next.FAIL
    assert decide(config, None, lost, set()).next is expected
    assert decide(config, None, users, {1}).next is expected  # a member lost while it ran


def raise_connection_error(item):
    raise ConnectionError(f"the service refused item {item}")


def test_a_users_connection_error_fails_the_job_once_on_two_members():
    """It restarted every 0.5 s forever, never showing the error, when restarts were decided by
    the error's text."""
    p = Pipeline.create()
    p.read_from(Sources.items(list(range(10)))).map(raise_connection_error).write_to(Sinks.list())
    with jet.local_cluster(members=2) as cluster:
        job = cluster.new_job(p, {"processing_guarantee": "exactly_once"})
        with pytest.raises(JobFailedError, match="ConnectionError: the service refused item") as failed:
            job.join(timeout=120)
        assert "raise_connection_error" in failed.value.traceback_text
        assert job.info()["restarts"] == 0
