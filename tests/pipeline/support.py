"""Run a pipeline on one member, or on several members in this process."""

from __future__ import annotations

from jet.execution import execute

from tests.cluster.inprocess import InProcessCluster


def run_pipeline(pipeline, members: int = 1, threads: int = 1) -> dict[str, list]:
    """Plan and run ``pipeline``; return its named results, gathered from every member."""
    pipeline.preflight()
    if members == 1:
        return execute(pipeline.to_dag(threads), cooperative_threads=threads, timeout=60)
    cluster = InProcessCluster(members)
    try:
        cluster.run(lambda: pipeline.to_dag(threads), timeout=60)
        return cluster.results()
    finally:
        cluster.close()
