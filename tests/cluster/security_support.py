"""A job held open by a gate file, and frames an attacker would send while it runs.

Members import this module by name when they unpickle the job, so it must stay importable.
"""

from __future__ import annotations

import pathlib
import re
from pathlib import Path

from jet.cluster.edges.chunk_packets import encode_chunk
from jet.core import DAG, Edge, Processor

from tests.cluster.cluster_support import json_sink, wait_until

ITEMS_PER_MEMBER = 500


class TouchFile:
    """A payload that creates a marker file when it is unpickled."""

    def __init__(self, path: pathlib.Path):
        self.path = path

    def __reduce__(self):
        return (pathlib.Path.touch, (self.path,))


class GatedSourceP(Processor):
    """Marks ``started-m<member>`` and emits its member's ``ITEMS_PER_MEMBER`` numbers only once
    the gate file exists, so the job's execution stays registered for as long as a test needs."""

    def __init__(self, directory: str) -> None:
        self._directory = Path(directory)

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        first = context.member_index * ITEMS_PER_MEMBER
        self._pending = list(range(first, first + ITEMS_PER_MEMBER))
        (self._directory / f"started-m{context.member_index}").touch()

    def complete(self) -> bool:
        if not (self._directory / "gate").exists():
            return False
        while self._pending and self.outbox.offer(self._pending[-1]):
            self._pending.pop()
        return not self._pending


def gated_job(directory: Path) -> DAG:
    """source (one per member, gated) --distributed--> sink (one per member, JSON lines files)."""
    directory = str(directory)
    dag = DAG()
    source = dag.new_vertex("source", lambda: GatedSourceP(directory), 1)
    sink = dag.new_vertex("sink", json_sink(directory), 1)
    dag.edge(Edge.between(source, sink).distributed())
    return dag


def wait_running(directory: Path, members: int) -> None:
    wait_until(lambda: len(list(directory.glob("started-m*"))) == members, what="the gated job on every member")


def open_gate(directory: Path) -> None:
    (directory / "gate").touch()


def execution_id(member_log: Path, job_id: str) -> int:
    """The execution id of ``job_id`` as its member logged it when the execution was initialised."""
    found = re.search(rf"job {re.escape(job_id)}: execution (\d+) initialised", member_log.read_text())
    assert found, f"{member_log} does not say which execution job {job_id} runs"
    return int(found.group(1))


def poisoned_data_frame(dag: DAG, execution: int, marker: Path) -> bytes:
    """A CHUNK frame that the sink's receiver of ``execution`` accepts from a member and
    unpickles: its payload creates ``marker`` when unpickled."""
    sink_vertex_id = [vertex.name for vertex in dag.validate()].index("sink")
    return encode_chunk(execution, sink_vertex_id, 0, [TouchFile(marker)])
