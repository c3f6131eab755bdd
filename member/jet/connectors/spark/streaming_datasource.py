"""The streaming half of the ``jet`` PySpark data source (imports PySpark).

- :class:`JetStreamWriter` (``writeStream.format("jet")``): each micro-batch's tasks stream
  their partitions to the job's Spark stream source as batch writer tasks do (same flow
  control), tagging rows with the query id and micro-batch id Spark sets as local properties
  of every task; ``commit(messages, batchId)`` sends the micro-batch's row counts and, under a
  job that takes snapshots, returns only once every member has the batch in a completed
  snapshot (up to ``DURABLE_COMMIT_TIMEOUT_S``), so Spark checkpoints it only then.
- :class:`JetStreamReader` (``spark.readStream.format("jet")``): offsets are
  ``{"positions": {processor: items taken}, "tick": n, "final": bool}``. A micro-batch reads
  each sink processor's positions ``[start, end)``; ``commit(end)`` lets the members discard
  them. Spark commits a micro-batch's source offsets only when it plans the *next* one, so
  when everything taken is planned but the buffers fill up, or the job's stream has ended,
  the reader bumps ``tick`` to make Spark plan an empty micro-batch that commits the last one
  (``final`` marks the one after the end: the sink processors then complete, and the job).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from pyspark.sql.datasource import (
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)

from jet.connectors.spark import protocol as p
from jet.connectors.spark.client import JetSparkError, MemberLink, _alive, close_all, connect_all, tell_members
from jet.connectors.spark.options import JetOptions
from jet.connectors.spark.partition_io import arrow_schema_ipc, send_partition

DURABLE_COMMIT_TIMEOUT_S = 600.0
"""How long a micro-batch's commit waits for the job's next snapshot (per member)."""

#: Spark's local properties of a micro-batch's tasks (StreamExecution.QUERY_ID_KEY, MicroBatchExecution.BATCH_ID_KEY).
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"


@dataclass
class JetStreamCommitMessage(WriterCommitMessage):
    """What a successful stream writer task reports."""

    query: str
    batch: int
    partition: int
    rows: int


class JetStreamWriter(DataSourceStreamArrowWriter):
    """Writes each micro-batch into the job's Spark stream source (see the module docstring)."""

    def __init__(self, options: JetOptions, addresses: list[str], members: list[int]) -> None:
        self.options = options
        self.addresses = addresses
        self.members = members

    def write(self, iterator: Iterator[Any]) -> JetStreamCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        query, batch = context.getLocalProperty(QUERY_ID_PROPERTY), context.getLocalProperty(BATCH_ID_PROPERTY)
        if query is None or batch is None:
            raise JetSparkError(f"a jet stream write task has no {QUERY_ID_PROPERTY!r}/{BATCH_ID_PROPERTY!r} "
                                f"local property: write with writeStream in micro-batch mode")
        partition = context.partitionId()
        rows = send_partition(self.options, self.addresses, self.members, iterator, partition,
                              context.attemptNumber(), {"query": query, "batch": int(batch)})
        return JetStreamCommitMessage(query, int(batch), partition, rows)

    def commit(self, messages: list[JetStreamCommitMessage | None], batchId: int) -> None:
        """Every task of micro-batch ``batchId`` succeeded: send each partition's row count."""
        done = [m for m in messages if m is not None]
        if not done:
            return  # no partition, no row to account for
        counts = {str(m.partition): m.rows for m in done}
        tell_members(self.options, {"op": p.COMMIT, "query": done[0].query, "batch": batchId, "counts": counts},
                     set(self.members), timeout_s=DURABLE_COMMIT_TIMEOUT_S)

    def abort(self, messages: list[JetStreamCommitMessage | None], batchId: int) -> None:
        """A micro-batch failed (and with it the query): fail the job's source, unless the
        driver reports it with Spark's message."""
        if not self.options.driver_reports_failure:
            tell_members(self.options, {"op": p.ABORT, "reason": f"Spark micro-batch {batchId} was aborted"},
                         set(self.members))


@dataclass
class JetStreamPartition(InputPartition):
    """Positions ``[start, end)`` of one sink processor."""

    processor: int
    member: int
    start: int
    end: int


class JetStreamReader(DataSourceStreamReader):
    """The job's Spark stream sink as a Spark stream (see the module docstring)."""

    def __init__(self, options: JetOptions, schema: Any) -> None:
        self.options = options
        self.schema = schema
        self.owners: dict[int, int] = {}  # sink processor -> member, as the members report them
        self._links: list[MemberLink] | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_links": None}  # read() runs on executors: no driver links there

    def _states(self) -> dict[str, list]:
        """``[appended, committed, input_done, capacity]`` per running sink processor."""
        if self._links is None:
            self._links = connect_all(self.options)
        states: dict[str, list] = {}
        owners: dict[int, int] = {}
        for position in range(len(self._links)):
            link = _alive(self._links, position)
            reply, _ = link.request({"op": p.STATE, "job": self.options.job, "vertex": self.options.vertex})
            states.update(reply["processors"])
            owners.update((int(key), link.member) for key in reply["processors"])
        if owners:  # else the job has ended: keep where the processors were
            self.owners = owners
        return states

    def initialOffset(self) -> dict:
        return {"positions": {key: state[1] for key, state in self._states().items()}, "tick": 0, "final": False}

    def latestOffset(self, start: dict, limit: Any = None) -> dict:
        states = self._states()
        if not states:  # the job has ended: nothing more will come
            return start
        planned = start["positions"]
        ahead = {key: (planned[key], state[0]) for key, state in states.items() if planned.get(key, 0) > state[0]}
        if ahead:
            raise JetSparkError(
                f"the Spark query's checkpoint is ahead of Spark stream sink {self.options.vertex!r} of job "
                f"{self.options.job!r} (processor: (checkpointed offset, items taken) = {ahead}): it is the "
                f"checkpoint of another run of the job; give each run its own checkpoint_location")
        positions = {**planned, **{key: state[0] for key, state in states.items()}}
        if positions != planned:
            return {**start, "positions": positions}
        ended = all(state[2] for state in states.values())
        filling = any(state[0] - state[1] >= max(1, state[3] // 2) for state in states.values())
        if (ended and not start["final"]) or filling:  # make Spark commit the last micro-batch
            return {"positions": positions, "tick": start["tick"] + 1, "final": ended}
        return start

    def partitions(self, start: dict, end: dict) -> list[JetStreamPartition]:
        begin = start["positions"]
        if any(int(key) not in self.owners for key in end["positions"]):
            self._states()  # a restarted query plans its last micro-batch again first
        # a processor the job no longer runs (restored on fewer) handed its items to another
        return [JetStreamPartition(int(key), self.owners[int(key)], begin.get(key, 0), stop)
                for key, stop in sorted(end["positions"].items(), key=lambda entry: int(entry[0]))
                if stop > begin.get(key, 0) and int(key) in self.owners]

    def read(self, partition: JetStreamPartition) -> Iterator[Any]:
        """Positions ``[start, end)`` of one sink processor, as ``pyarrow.RecordBatch``es."""
        options = self.options
        schema = arrow_schema_ipc(self.schema)
        link = MemberLink(options.members[partition.member], partition.member, options.token, options.tls())
        fetch = {"op": p.FETCH, "job": options.job, "vertex": options.vertex, "proc": partition.processor,
                 "end": partition.end, "n": options.chunk_rows, "fmt": p.ARROW}
        position = partition.start
        try:
            while position < partition.end:
                reply, batches = link.request({**fetch, "start": position}, schema,
                                              timeout_s=options.send_timeout_s)
                if not reply.get("n"):
                    raise JetSparkError(f"sink {options.vertex!r}#{partition.processor} returned no items "
                                        f"at position {position} (expected up to {partition.end})")
                position += int(reply["n"])
                yield from batches
        finally:
            link.close()

    def commit(self, end: dict) -> None:
        """Spark has every item below ``end`` in its sink: the members may discard them."""
        tell_members(self.options, {"op": p.TRIM, "ends": end["positions"]})

    def stop(self) -> None:
        if self._links is not None:
            close_all(self._links)
            self._links = None
