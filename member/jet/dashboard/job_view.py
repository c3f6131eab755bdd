"""A job's DAG and figures as the dashboard draws them (read from what the coordinator holds)."""

from __future__ import annotations

import threading
from typing import Any, Mapping

from jet.cluster.client import job_failure
from jet.cluster.job_history import UnknownJobError
from jet.core.dag import DAG
from jet.execution.vertex_metrics import now_ms, watermark_lag_ms
from jet.run_output import failure_report


def job_dag(coordinator: Any, job_id: str) -> DAG | None:
    """The DAG the coordinator runs job ``job_id`` from (an empty DAG for a job that could not be
    built, None once the job ended: the coordinator lets it go); ``UnknownJobError`` for an
    unknown job. Reads the coordinator's job run, which holds it."""
    return coordinator._run_of(job_id).dag  # noqa: SLF001 - the coordinator keeps the DAG, no accessor yet


class DagShapes:
    """Each kept job's DAG as :func:`dag_view` draws it, taken while the coordinator still holds
    the DAG (at submission: :meth:`remember` runs on every status change), so a finished job's page
    still shows it."""

    def __init__(self, default_parallelism: int) -> None:
        self._default_parallelism = default_parallelism
        self._shapes: dict[str, dict[str, list[dict[str, Any]]]] = {}
        self._lock = threading.Lock()

    def remember(self, coordinator: Any, job_id: str) -> None:
        """Take the job's shape if not taken yet; forget those of jobs the coordinator forgot."""
        with self._lock:
            if job_id in self._shapes:
                return
        try:
            dag = job_dag(coordinator, job_id)
        except UnknownJobError:
            return
        if dag is None:
            return
        shape = dag_view(dag, self._default_parallelism)
        kept = {record.job_id for record in coordinator.records()}
        with self._lock:
            self._shapes[job_id] = shape
            for gone in [known for known in self._shapes if known not in kept and known != job_id]:
                del self._shapes[gone]

    def shape(self, coordinator: Any, job_id: str) -> dict[str, list[dict[str, Any]]]:
        """The job's shape (empty when it ended before anyone took it)."""
        self.remember(coordinator, job_id)
        with self._lock:
            return self._shapes.get(job_id) or {"vertices": [], "edges": []}


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
    if header.get("status") != "FAILED" or not header.get("failure"):
        return ""
    return failure_report(job_failure(header))


def job_detail(coordinator: Any, job_id: str, shapes: DagShapes) -> dict[str, Any]:
    """What ``GET /api/jobs/<id>`` answers: the job's record, its error, snapshots, DAG (each
    vertex with ``totalParallelism`` over the members of its execution) and figures."""
    record = coordinator.record(job_id)
    header = record.to_header()
    wall_ms = now_ms()
    members = max(1, len(record.members) or coordinator.member_count)
    shape = shapes.shape(coordinator, job_id)
    vertices = [{**vertex, "totalParallelism": vertex["localParallelism"] * members} for vertex in shape["vertices"]]
    snapshots = record.snapshots
    return {**header, "error": failure_text(header),
            "snapshots": {"count": snapshots.count, "failures": snapshots.failures,
                          "lastFailure": snapshots.last_failure, "last": snapshots.to_header()},
            "dag": {"vertices": vertices, "edges": shape["edges"]},
            "metrics": vertex_figures(coordinator.metrics(job_id), wall_ms), "wallMs": wall_ms}
