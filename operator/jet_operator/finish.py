"""What a finished JetJob keeps, and for how long (pure functions only).

A job that ends (``Completed`` or ``Failed``, no restart to come) keeps its member pods for
``spec.ttlSecondsAfterFinished`` seconds (as a Kubernetes Job or a Spark operator application
keeps its pods), so ``kubectl logs`` still finds member 0 and ``/job`` still answers; then the
members are scaled to 0 (the StatefulSet stays, empty, so a restart can fill it again). ``0``
scales them down at once. ``status.result`` sums the outcome up, and stays after the pods go.
"""

from __future__ import annotations

import datetime
from typing import Any, Mapping

from jet_operator.lifecycle import JobReport, Phase, format_time, parse_time

TRACEBACK_HEADER = "Traceback (most recent call last):"
# The longest one-line reason kept in status.result.message.
RESULT_MESSAGE_MAX_CHARS = 300


def failure_headline(message: str) -> str:
    """The one line that says why a job failed: a Python traceback's exception line (its last
    unindented line), with what came before the traceback on its first line; else the
    message's first line."""
    lines = [line.rstrip() for line in message.splitlines() if line.strip()]
    if not lines:
        return ""
    headline = lines[0]
    if TRACEBACK_HEADER in message:
        prefix = lines[0].split(TRACEBACK_HEADER, 1)[0]
        exception = [line for line in lines[1:] if not line[:1].isspace() and TRACEBACK_HEADER not in line]
        if exception:
            headline = prefix + exception[-1]
    return headline[:RESULT_MESSAGE_MAX_CHARS]


def members_until(finished: datetime.datetime, ttl_seconds: int) -> datetime.datetime:
    """When the members of a job that finished at ``finished`` are scaled to 0."""
    return finished + datetime.timedelta(seconds=ttl_seconds)


def build_result(phase: Phase, message: str, report: JobReport | None, status: Mapping[str, Any],
                 completion_time: str, ttl_seconds: int) -> dict[str, Any]:
    """``status.result``: the outcome of a job that ended in ``phase`` (Completed or Failed).

    ``message`` is the phase's message (the failure, for a failed job); ``report`` member 0's
    last ``/job`` report, if it answered (a pod that never started has none); ``status`` the
    JetJob's status before this update."""
    job_status = report.status if report is not None and report.status in ("COMPLETED", "FAILED") else (
        "COMPLETED" if phase == Phase.COMPLETED else "FAILED")
    result: dict[str, Any] = {
        "status": job_status,
        "jobId": (report.job_id if report is not None else None) or status.get("jobId") or None,
        "completionTime": completion_time,
        "restarts": report.restarts if report is not None else int(status.get("restarts") or 0),
        "attempts": int(status.get("restartCount") or 0),
        "message": failure_headline(message) if phase == Phase.FAILED else "",
    }
    start = (report.start_time if report is not None else None) or status.get("startTime")
    duration = None
    if start:
        duration = max(0, int((parse_time(completion_time) - parse_time(start)).total_seconds()))
        result["startTime"] = start
        result["durationSeconds"] = duration
    if report is not None:
        result["snapshotCount"] = report.snapshot_count
        figures = report.status_fields().get("lastSnapshot")
        if figures:
            result["lastSnapshot"] = figures
    result["summary"] = _summary(result, duration)
    result["membersKeptSeconds"] = ttl_seconds
    return result


def _summary(result: Mapping[str, Any], duration: int | None) -> str:
    """One line for ``kubectl get -o wide``: ``COMPLETED in 42s (0 restarts, 5 snapshots)``."""
    took = f" in {duration}s" if duration is not None and result["status"] == "COMPLETED" else (
        f" after {duration}s" if duration is not None else "")
    details = [f"{result['restarts']} restart{'s' if result['restarts'] != 1 else ''}"]
    if result.get("snapshotCount"):
        details.append(f"{result['snapshotCount']} snapshots")
    reason = f": {result['message']}" if result.get("message") else ""
    return f"{result['status']}{took} ({', '.join(details)}){reason}"


def finish_fields(phase: Phase, message: str, report: JobReport | None, status: Mapping[str, Any],
                  completion_time: str, ttl_seconds: int, now: datetime.datetime) -> dict[str, Any]:
    """The status fields of a job that just ended for good: its result, and until when its
    members stay (``membersUntil``; None when they go at once)."""
    until = members_until(now, ttl_seconds) if ttl_seconds > 0 else None
    return {
        "result": build_result(phase, message, report, status, completion_time, ttl_seconds),
        "membersUntil": format_time(until) if until is not None else None,
    }


def members_expired(status: Mapping[str, Any], now: datetime.datetime) -> bool:
    """Whether a finished job's members are kept no longer (its ``membersUntil`` has passed)."""
    until = parse_time(status.get("membersUntil"))
    return until is not None and now >= until
