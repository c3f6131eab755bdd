"""The bounds of every control-plane wait: the coordinator's calls, a member's reports, the
job history, and fault injection for tests (set with the member's other settings,
:mod:`jet.cluster.settings`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ControlSettings:
    """Bounds of every control-plane wait, the coordinator's job history, and fault injection.

    Given flat (``init_timeout_ms: 60000`` in the file, ``JET_INIT_TIMEOUT_MS`` in the
    environment) like every other setting."""

    init_timeout_ms: int = 30_000
    """Coordinator: how long a member may take to build its execution (``init``)."""
    control_timeout_ms: int = 10_000
    """Coordinator: the deadline of every other call to a member (start, cancel, complete, state)."""
    cancel_grace_ms: int = 10_000
    """Coordinator: after a failure, how long the other members get to report their cancel."""
    report_wait_ms: int = 30_000
    """Coordinator: silence from a running member after which it is asked for its execution's
    state (a finished one's lost report is taken from the answer; no answer fails the job)."""
    report_retry_ms: int = 60_000
    """Member: how long it retries sending an execution's end report, with backoff."""
    max_finished_jobs: int = 1_000
    """Coordinator: finished jobs (and their results) kept; the oldest are forgotten first."""
    finished_job_ttl_s: int = 7 * 24 * 3600
    """Coordinator: seconds a finished job (and its results) is kept after it ended."""
    max_finished_result_bytes: int = 256 * 1024 * 1024
    """Coordinator: the finished jobs' list-sink results kept, in (pickled) bytes; beyond it the
    oldest finished jobs' results are released (their records stay)."""
    fetched_result_ttl_s: int = 10
    """Coordinator: seconds a finished job's results stay after a client first fetched them;
    then they are released (its record stays). 0 releases them as they are sent."""
    fault_drop_reports: int = 0
    """Fault injection for tests: a member other than member 0 (whose report to itself crosses no
    network) fails its first N attempts to send an execution report, as if the network lost them."""
    fault_unanswered_state_queries: int = 0
    """Fault injection for tests: a member other than member 0 leaves the coordinator's first N
    questions about an execution's state unanswered (each runs into its deadline)."""
    snapshot_timeout_ms: int = 60_000
    """Coordinator: how long each phase of a snapshot may take on the members; a snapshot past it
    fails and the last good one stays."""
    member_rejoin_timeout_ms: int = 30_000
    """Coordinator: after a member is lost, how long a job waits for it to rejoin before it
    restarts on the members that are up (``auto_scaling``) or is suspended (without)."""
    restart_delay_ms: int = 500
    """Coordinator: the pause before a job restarts after a lost member (Jet waits 2 s); it
    doubles with each restart in a row, up to ``restart_max_delay_ms``."""
    restart_max_delay_ms: int = 10_000
    """Coordinator: the longest pause before a restart (the exponential backoff's cap)."""
    restart_backoff_reset_ms: int = 10_000
    """Coordinator: an execution that ran this long ends a row of restarts: the next restart
    pauses ``restart_delay_ms`` again and counts from 1."""
    max_restarts: int = 0
    """Coordinator: restarts in a row after which a job stops restarting: suspended with a
    guarantee, failed without (0: no bound, as Jet; Flink's restart strategy's attempts)."""
    fault_fail_snapshot_phase1: int = 0
    """Fault injection for tests: this member fails its first N phase-1 snapshot requests."""
    scale_up_delay_ms: int = 10_000
    """Coordinator: after a member joins (a later join starts it again), how long until jobs with
    ``auto_scaling`` that run on fewer members restart on all (Jet's ``scaleUpDelayMillis``)."""
