"""A job's DAG and figures as the dashboard draws them (read from what the coordinator holds)."""

from __future__ import annotations

from typing import Any, Mapping

from jet.cluster.coordination.job_state import job_failure
from jet.core.dag import DAG
from jet.dashboard.member_view import CoordinatorView
from jet.execution.tracebacks import failure_report
from jet.execution.vertex_metrics import now_ms, watermark_lag_ms


def depths(dag: DAG) -> dict[str, int]:
    """Each vertex's column: the longest path from a source to it (sources are 0)."""
    depth: dict[str, int] = {}
    for vertex in dag.validate() if len(dag) else []:  # topological order
        inbound = dag.inbound_edges(vertex.name)
        depth[vertex.name] = max((depth[edge.source.name] + 1 for edge in inbound), default=0)
    return depth


def dag_view(dag: DAG, default_parallelism: int) -> dict[str, list[dict[str, Any]]]:
    """``{"vertices": [{name, localParallelism, depth}], "edges": [{source,
    sourceOrdinal, dest, destOrdinal, kind, distributed, routing, priority}]}``; ``kind`` is Jet's
    DOT label (``distributed-partitioned``, ``broadcast``, ...; ``local`` for local unicast)."""
    column = depths(dag)
    vertices = []
    for vertex in dag.vertices:
        local = vertex.determine_local_parallelism(default_parallelism)
        vertices.append({"name": vertex.name, "localParallelism": local, "depth": column.get(vertex.name, 0)})
    edges = [{"source": edge.source.name, "sourceOrdinal": edge.source_ordinal, "dest": edge.dest_name,
              "destOrdinal": edge.dest_ordinal, "kind": edge.label() or "local",
              "distributed": edge.is_distributed(), "routing": edge.routing_policy.value,
              "priority": edge.get_priority()} for edge in dag.edges]
    return {"vertices": vertices, "edges": edges}


def vertex_figures(metrics: Mapping[str, Mapping[str, int]], wall_ms: int) -> dict[str, dict[str, Any]]:
    """Each vertex's merged figures (``Coordinator.metrics``), with ``watermarkLagMs`` (None when
    the vertex has no watermark)."""
    return {vertex: {**figures, "watermarkLagMs": watermark_lag_ms(figures, wall_ms)}
            for vertex, figures in metrics.items()}


def failure_text(header: Mapping[str, Any]) -> str:
    """A FAILED job's error as ``jet run`` prints it (the user's frames first); empty otherwise."""
    failure = header.get("failure")
    if header.get("status") != "FAILED" or not failure:
        return ""
    if failure.get("cancelled"):  # no failure of the job's: say what stopped it
        return "cancelled: " + str(failure.get("error", "")).removeprefix("JobCancelledError: ")
    return failure_report(job_failure(header))


def job_detail(coordinator: CoordinatorView, job_id: str, default_parallelism: int) -> dict[str, Any]:
    """What ``GET /api/jobs/<id>`` answers: the job's record, its error, snapshots, DAG (each
    vertex with ``totalParallelism`` over the members of its execution) and figures."""
    record = coordinator.record(job_id)
    header = record.to_header()
    wall_ms = now_ms()
    members = max(1, len(record.members) or coordinator.member_count)
    shape = dag_view(coordinator.dag(job_id), default_parallelism)
    vertices = [{**vertex, "totalParallelism": vertex["localParallelism"] * members} for vertex in shape["vertices"]]
    snapshots = record.snapshots
    return {**header, "error": failure_text(header),
            "snapshots": {"count": snapshots.count, "failures": snapshots.failures,
                          "lastFailure": snapshots.last_failure, "last": snapshots.to_header()},
            "dag": {"vertices": vertices, "edges": shape["edges"]},
            "metrics": vertex_figures(coordinator.metrics(job_id), wall_ms), "wallMs": wall_ms}
