"""Prometheus metrics of the operator, served when JET_OPERATOR_METRICS_PORT is set."""

from __future__ import annotations

from prometheus_client import Counter, start_http_server

PHASE_TRANSITIONS = Counter(
    "jet_operator_phase_transitions_total",
    "JetJob phase changes made by the operator, by the phase entered.",
    ["phase"],
)


def serve(port: int) -> None:
    """Serve ``/metrics`` on ``port`` (0: do nothing)."""
    if port:
        start_http_server(port)
