"""Ask a job's coordinator (member 0) how the job is doing: ``GET /job`` on its HTTP port.

``/job`` answers only a caller who presents the cluster token or its read-only job-status
credential. The operator sends the credential (hex HMAC-SHA256 of the token over
``jet-job-status``, the members' documented formula), so the token itself never crosses the pod
network in clear text.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import urllib.error
import urllib.request

from jet_operator.lifecycle import JobReport

logger = logging.getLogger(__name__)


def job_status_credential(token: str) -> str:
    """The read-only credential for ``/job`` derived from the cluster ``token``."""
    return hmac.new(token.encode("utf-8"), b"jet-job-status", hashlib.sha256).hexdigest()


def fetch_job_report(url: str, timeout_seconds: float, token: str) -> JobReport | None:
    """The coordinator's report, or None if it cannot be reached or answers nonsense yet."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {job_status_credential(token)}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_seconds) as response:  # noqa: S310
            body = json.loads(response.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError) as error:
        logger.debug("Coordinator at %s not answering: %s", url, error)
        return None
    if not isinstance(body, dict):
        return None
    return JobReport.of(body)
