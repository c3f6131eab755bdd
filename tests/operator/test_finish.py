"""What a finished JetJob keeps: its result in one line, and until when its members stay
(pure functions, no cluster)."""

from __future__ import annotations

import datetime

from jet_operator.finish import build_result, failure_headline, finish_fields, members_expired
from jet_operator.lifecycle import JobReport, Phase
from jet_operator.spec import parse_spec

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)


def test_a_traceback_is_summed_up_by_its_exception_line() -> None:
    message = ("the job failed: Traceback (most recent call last):\n  File \"x.py\", line 3, in parse\n"
               "    raise ValueError('bad row 7')\nValueError: bad row 7\n")
    assert failure_headline(message) == "the job failed: ValueError: bad row 7"


def test_another_message_is_summed_up_by_its_first_line() -> None:
    assert failure_headline("pod wc-member-0: ImagePullBackOff: boom\nmore") == "pod wc-member-0: ImagePullBackOff: boom"
    assert failure_headline("") == ""
    assert len(failure_headline("x" * 1000)) == 300


def test_the_result_of_a_completed_job() -> None:
    report = JobReport(job_id="j1", status="COMPLETED", start_time="2026-01-02T03:03:05Z", restarts=2,
                       snapshot_count=4, last_snapshot={"id": 3, "time": 1767323040000, "bytes": 5, "keys": 1})
    result = build_result(Phase.COMPLETED, "the job completed", report, {"restartCount": 1},
                          "2026-01-02T03:04:05Z", 300)
    assert result == {
        "status": "COMPLETED", "jobId": "j1", "completionTime": "2026-01-02T03:04:05Z", "restarts": 2,
        "attempts": 1, "message": "", "startTime": "2026-01-02T03:03:05Z", "durationSeconds": 60,
        "snapshotCount": 4, "lastSnapshot": {"id": 3, "time": "2026-01-02T03:04:00Z", "bytes": 5, "keys": 1},
        "summary": "COMPLETED in 60s (2 restarts, 4 snapshots)", "membersKeptSeconds": 300,
    }


def test_the_result_of_a_job_whose_pods_never_ran() -> None:
    result = build_result(Phase.FAILED, "pod wc-member-1: ErrImagePull: no such image", None,
                          {"jobId": None, "restarts": 0}, "2026-01-02T03:04:05Z", 0)
    assert (result["status"], result["jobId"], result["message"]) == (
        "FAILED", None, "pod wc-member-1: ErrImagePull: no such image")
    assert result["summary"] == "FAILED (0 restarts): pod wc-member-1: ErrImagePull: no such image"
    assert "durationSeconds" not in result and "snapshotCount" not in result


def test_members_stay_until_the_ttl_runs_out_and_zero_keeps_none() -> None:
    kept = finish_fields(Phase.COMPLETED, "done", None, {}, "2026-01-02T03:04:05Z", 30, NOW)
    assert kept["membersUntil"] == "2026-01-02T03:04:35Z"
    assert not members_expired(kept, NOW + datetime.timedelta(seconds=29))
    assert members_expired(kept, NOW + datetime.timedelta(seconds=30))
    at_once = finish_fields(Phase.COMPLETED, "done", None, {}, "2026-01-02T03:04:05Z", 0, NOW)
    assert at_once["membersUntil"] is None and not members_expired(at_once, NOW)


def test_the_ttl_defaults_to_five_minutes() -> None:
    assert parse_spec({"pipeline": {"path": "/p.py"}}).ttl_seconds_after_finished == 300
    assert parse_spec({"pipeline": {"path": "/p.py"}, "ttlSecondsAfterFinished": 0}).ttl_seconds_after_finished == 0
