"""Ask a job's coordinator (member 0) how the job is doing: ``GET /job`` on its HTTP port."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request

from jet_operator.lifecycle import JobReport

logger = logging.getLogger(__name__)


def fetch_job_report(url: str, timeout_seconds: float) -> JobReport | None:
    """The coordinator's report, or None if it cannot be reached or answers nonsense yet."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_seconds) as response:  # noqa: S310
            body = json.loads(response.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError) as error:
        logger.debug("Coordinator at %s not answering: %s", url, error)
        return None
    if not isinstance(body, dict):
        return None
    return JobReport.of(body)
