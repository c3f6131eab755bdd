"""Processors and helpers of the multi-member tests; members import this module by name
(``tests.cluster.cluster_support``) when they unpickle a job, so it must stay importable."""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

from jet.connectors.file_sinks import FileSinkP, to_json
from jet.core import DAG, Edge, Processor

DEADLINE_S = 30.0


class JsonLinesSinkP(FileSinkP):
    """Writes every received item, as a JSON line, to ``<dir>/<vertex>-m<member>-p<local>.jsonl``
    (the file exists, maybe empty, for every processor of the vertex)."""

    def __init__(self, out_dir: str) -> None:
        super().__init__(out_dir, to_json, ".jsonl")

    def init(self, outbox, context) -> None:
        Processor.init(self, outbox, context)
        name = f"{context.vertex_name}-m{context.member_index}-p{context.local_index}.jsonl"
        self._file = open(os.path.join(self._directory, name), "w", encoding="utf-8")


def json_sink(out_dir) -> callable:
    out_dir = str(out_dir)
    return lambda: JsonLinesSinkP(out_dir)


def deliveries(out_dir, vertex: str) -> dict[tuple[int, int], list]:
    """(member, local index) -> the items that processor received."""
    result: dict[tuple[int, int], list] = {}
    for path in Path(out_dir).glob(f"{vertex}-m*-p*.jsonl"):
        member, local = path.stem[len(vertex) + 2:].split("-p")
        result[(int(member), int(local))] = [json.loads(line) for line in path.read_text().splitlines()]
    return result


class EndlessSourceP(Processor):
    """Emits increasing integers until the job is cancelled (for mid-job failures)."""

    def __init__(self, started_dir: str | None = None) -> None:
        self._next = 0
        self._started_dir = started_dir

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        if self._started_dir:
            Path(self._started_dir, f"started-m{context.member_index}-p{context.local_index}").touch()

    def complete(self) -> bool:
        while self.outbox.offer(self._next):
            self._next += 1
            if self._next % 100 == 0:
                time.sleep(0.001)
                return False
        return False


def endless_source(started_dir=None):
    started_dir = None if started_dir is None else str(started_dir)
    return lambda: EndlessSourceP(started_dir)


class FailOnMemberP(Processor):
    """Passes items through, but raises ``ValueError`` on member ``bad_member`` at item ``at``."""

    def __init__(self, bad_member: int, at: int) -> None:
        self._bad_member = bad_member
        self._at = at
        self._seen = 0

    def process(self, ordinal, inbox) -> None:
        chunk = inbox.take_chunk()
        self._seen += len(chunk)
        if self.context.member_index == self._bad_member and self._seen >= self._at:
            explode_in_user_code(self._seen)


def explode_in_user_code(seen: int) -> None:
    raise ValueError(f"user function exploded after {seen} items")


def fail_on_member(bad_member: int, at: int = 1):
    return lambda: FailOnMemberP(bad_member, at)


class SlowFirstSupplier:
    """A processor supplier whose first call in the whole cluster (the one that creates
    ``marker``) sleeps ``seconds`` first: one member's ``init`` is slower than its peers'."""

    def __init__(self, marker, seconds: float, supplier) -> None:
        self.marker, self.seconds, self.supplier = str(marker), seconds, supplier

    def __call__(self) -> Processor:
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            time.sleep(self.seconds)
        except FileExistsError:
            pass
        return self.supplier()


def wait_until(condition, timeout_s: float = DEADLINE_S, what: str = "condition", interval_s: float = 0.02):
    """Poll ``condition()`` until truthy; AssertionError naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)


def join_failure(job, timeout_s: float) -> tuple[str, float]:
    """Join a job that must fail: the message it failed with and the seconds that took."""
    started = time.monotonic()
    try:
        job.join(timeout=timeout_s)
    except Exception as error:  # noqa: BLE001 - the failure is what is asked for
        return str(error), time.monotonic() - started
    raise AssertionError(f"the job ended without failing within {timeout_s} s")


def group_counts(deliveries_by_processor: dict) -> dict:
    counts = defaultdict(int)
    for items in deliveries_by_processor.values():
        for item in items:
            counts[json.dumps(item)] += 1
    return counts


def endless_dag() -> DAG:
    """A job that runs until cancelled: an endless source into a sink that drops its items."""
    from jet.core.processors import map_p

    dag = DAG()
    source = dag.new_vertex("source", endless_source(), 1)
    sink = dag.new_vertex("sink", map_p(lambda x: None), 1)
    dag.edge(Edge.between(source, sink))
    return dag
