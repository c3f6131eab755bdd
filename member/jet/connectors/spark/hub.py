"""The member side of the ``jet`` Spark format: routes Spark frames to the Spark processors.

Every Spark source and sink processor registers an endpoint here under (member index, job id,
vertex name, global index) while it runs. :class:`SparkHub` (one per MemberNetwork, made when
the first Spark frame arrives) answers probes, queues a writer's rows for its source
processor, forwards commits and aborts, hands sink chunks to readers, and every flow-control
period sends each writer attempt the absolute limit of its :class:`ReceiveWindow` (Jet's
protocol; the processor acks the footprint of the rows it has emitted into the job).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any

from jet.cluster.edges.chunk_packets import chunk_footprint
from jet.cluster.edges.flow_control import ReceiveWindow
from jet.cluster.edges.network import MemberNetwork, register_default_frame_handler
from jet.cluster.links.packets import FrameType
from jet.connectors.spark import protocol as p
from jet.connectors.spark.arrow_items import ItemSchemaError, count_rows, items_to_batches
from jet.connectors.spark.stream_endpoints import MicroBatchCommits, StreamSinkEndpoint
from jet.core.columnar import batch_to_rows, is_batch, prefetch_arrow
from jet.execution.backoff import wake_parked_workers

log = logging.getLogger("jet.connectors.spark")

ARROW_CHUNK_ROWS = 65536
"""At most this many items go into one chunk frame to an Arrow reader (fewer when the job
hands over larger chunks)."""
VertexKey = tuple[int, str, str]  # member index, job id, vertex name
_REGISTRY: dict[VertexKey, "VertexEndpoints"] = {}
_REGISTRY_LOCK = threading.Lock()
_ENDED: dict[tuple[int, str], str] = {}
"""(member, job) whose Spark vertices closed before finishing: the job failed or was cancelled.
A probe for such a job is answered with this, so a Spark side does not wait for it to start."""
_ENDED_KEPT = 256
_FINISHED: dict[VertexKey, bool] = {}
"""Stream sink vertices whose processors finished (Spark committed every item): a Spark side
that finds such a vertex gone knows it did not just restart."""


class AttemptWindow:
    """Flow control of one writer task attempt (one peer) towards one source processor."""

    __slots__ = ("window", "queued_bytes")

    def __init__(self, period_ns: int) -> None:
        self.window = ReceiveWindow(period_ns=period_ns)
        self.queued_bytes = 0


class SourceEndpoint:
    """What a Spark source processor shares with the network thread."""

    dropped_rows_total = 0
    """Rows dropped as already emitted (re-sent by a retried or speculative attempt), in this
    process since it started (for tests and metrics)."""

    def __init__(self, vertex: "VertexEndpoints", index: int) -> None:
        self.vertex = vertex
        self.index = index
        self.frames: deque[tuple[int, dict, bytes, int, int]] = deque()  # peer, header, frame, offset, footprint
        self.attempts: dict[int, AttemptWindow] = {}
        self.lock = threading.Lock()
        self.buffered_bytes = 0
        self.max_buffered_bytes = 0

    def enqueue(self, peer: int, header: dict, frame: bytes, offset: int, period_ns: int) -> None:
        footprint = chunk_footprint(len(frame) - offset, int(header.get("n", 0)))
        with self.lock:
            attempt = self.attempts.get(peer)
            if attempt is None:
                attempt = self.attempts[peer] = AttemptWindow(period_ns)
            attempt.queued_bytes += footprint
            self.buffered_bytes += footprint
            self.max_buffered_bytes = max(self.max_buffered_bytes, self.buffered_bytes)
            self.frames.append((peer, header, frame, offset, footprint))
        wake_parked_workers()

    def consumed(self, peer: int, footprint: int) -> None:
        """Processor thread: the rows of one frame are in the job (or dropped as duplicates)."""
        with self.lock:
            self.buffered_bytes -= footprint
            attempt = self.attempts.get(peer)
            if attempt is not None:
                attempt.queued_bytes -= footprint
                attempt.window.on_item_acked(footprint)


class SinkEndpoint:
    """What a Spark sink processor shares with the reader task pulling from it."""

    def __init__(self, vertex: "VertexEndpoints", index: int, capacity_items: int) -> None:
        self.vertex = vertex
        self.index = index
        self.capacity_items = capacity_items
        self.chunks: deque[list] = deque()
        self.buffered_items = 0
        self.input_done = False
        self.done_sent = False
        self.reader: int | None = None
        self.reader_started = False
        self.credit = 0
        self.schema: Any = None  # the reader's Arrow schema (its first pull): chunks go as batches of it
        self.failure: str | None = None  # why the job's items cannot go to the reader
        self.lock = threading.Lock()
        self.network: MemberNetwork | None = None

    def is_full(self) -> bool:
        return self.buffered_items >= self.capacity_items

    def add(self, chunk: list) -> None:
        with self.lock:
            self.chunks.append(chunk)
            self.buffered_items += count_rows(chunk)
        self.pump()

    def finish_input(self) -> None:
        with self.lock:
            self.input_done = True
        self.pump()

    def pump(self) -> None:
        """Send buffered chunks while the reader has credit; then the DONE chunk."""
        with self.lock:
            while self.credit > 0 and self.reader is not None and self.network is not None:
                if self.failure is not None:
                    return
                if self.chunks:
                    chunk = self._take_chunk()
                    done = False
                elif self.input_done and not self.done_sent:
                    chunk, done = [], True
                else:
                    return
                try:
                    frame = self._encode_chunk(chunk, done)
                except ItemSchemaError as error:
                    self.failure = (f"Spark sink {self.vertex.key[2]!r} #{self.index} of job "
                                    f"{self.vertex.key[1]!r}: {error}")
                    self._send_error(self.failure)
                    return
                try:
                    self.network.send_frame(self.reader, frame)
                except ConnectionError:
                    log.warning("reader of sink %s#%d went away", self.vertex.key[2], self.index)
                    self.chunks.appendleft(chunk)
                    self.buffered_items += count_rows(chunk)
                    self.reader, self.credit = None, 0
                    return
                self.credit -= 1
                self.reader_started = True
                if done:
                    self.done_sent = True

    def _take_chunk(self) -> list:
        """The next buffered chunk: buffered chunks joined up to ``ARROW_CHUNK_ROWS`` items (one
        batch per frame rather than one per inbox chunk)."""
        chunk = self.chunks.popleft()
        if self.chunks and len(chunk) + len(self.chunks[0]) <= ARROW_CHUNK_ROWS:
            chunk = list(chunk)
            while self.chunks and len(chunk) + len(self.chunks[0]) <= ARROW_CHUNK_ROWS:
                chunk.extend(self.chunks.popleft())
        self.buffered_items -= count_rows(chunk)
        return chunk

    def _encode_chunk(self, chunk: list, done: bool) -> bytes:
        header = {"op": p.CHUNK, "proc": self.index, "done": done, "n": len(chunk), "fmt": p.ARROW}
        batches = items_to_batches(chunk, self.schema) if chunk else []
        return p.encode(FrameType.SPARK_REPLY, header, p.to_ipc(self.schema, batches))

    def _send_error(self, message: str) -> None:
        try:
            self.network.send_frame(self.reader, p.encode(FrameType.SPARK_REPLY, {"op": p.ERROR, "message": message}))
        except ConnectionError:
            pass

    def abandon(self) -> None:
        """The job ended before this sink's DONE went out (it failed or was cancelled): tell
        the reader at once, instead of letting it wait for chunks until its timeout."""
        if not self.done_sent:
            _record_ended(self.vertex.key)
        with self.lock:
            if self.reader is None or self.network is None or self.done_sent:
                return
            self._send_error(f"job {self.vertex.key[1]!r} ended before Spark sink {self.vertex.key[2]!r}"
                             f" #{self.index} finished: the job failed or was cancelled (see its error)")

    def sample(self, count: int) -> tuple[bool, list]:
        with self.lock:
            items: list = []
            for chunk in self.chunks:
                items.extend(chunk[:count - len(items)])
                if len(items) >= count:
                    break
            return bool(items) or self.input_done, items


class VertexEndpoints:
    """The Spark processors of one vertex of one job on one member, and the driver's verdict."""

    def __init__(self, key: VertexKey, kind: str, total: int) -> None:
        self.key = key
        self.kind = kind
        self.total = total
        self.processors: dict[int, Any] = {}
        self.counts: dict[int, int] | None = None
        self.commits = MicroBatchCommits()  # a stream source's committed micro-batches
        self.ended = False  # a stream source's Spark query ended
        self.abort_reason: str | None = None
        self.arrow_schema: Any = None  # a source's: the Arrow schema of the first write it received
        self.changed = threading.Condition()


def register_endpoint(member: int, job: str, vertex: str, kind: str, index: int, total: int,
                      **kwargs: Any) -> Any:
    """Called by a Spark processor's init: its endpoint, registered until :func:`unregister_endpoint`."""
    prefetch_arrow()
    key = (member, job, vertex)
    with _REGISTRY_LOCK:
        entry = _REGISTRY.get(key)
        if entry is None or entry.kind != kind:
            entry = _REGISTRY[key] = VertexEndpoints(key, kind, total)
        endpoint = _ENDPOINT_TYPES[kind](entry, index, **kwargs)
        entry.processors[index] = endpoint
    return endpoint


_ENDPOINT_TYPES = {"source": SourceEndpoint, "stream-source": SourceEndpoint, "sink": SinkEndpoint,
                   "stream-sink": StreamSinkEndpoint}
SOURCE_KINDS = ("source", "stream-source")


def _record_ended(key: VertexKey) -> None:
    with _REGISTRY_LOCK:
        _ENDED[(key[0], key[1])] = (f"job {key[1]!r} ended on member {key[0]} before its Spark"
                                    f" vertex {key[2]!r} finished (it failed or was cancelled)")
        while len(_ENDED) > _ENDED_KEPT:
            del _ENDED[next(iter(_ENDED))]


def unregister_endpoint(endpoint: Any) -> None:
    if isinstance(endpoint, SinkEndpoint):
        endpoint.abandon()
    elif isinstance(endpoint, StreamSinkEndpoint) and not endpoint.finished:
        _record_ended(endpoint.vertex.key)
    elif isinstance(endpoint, StreamSinkEndpoint):
        with _REGISTRY_LOCK:
            _FINISHED[endpoint.vertex.key] = True
            while len(_FINISHED) > _ENDED_KEPT:
                del _FINISHED[next(iter(_FINISHED))]
    key = endpoint.vertex.key
    with _REGISTRY_LOCK:
        entry = _REGISTRY.get(key)
        if entry is not None and entry.processors.get(endpoint.index) is endpoint:
            del entry.processors[endpoint.index]
            if not entry.processors:
                del _REGISTRY[key]
                entry.commits.abandon(f"its Spark vertex stopped on member {key[0]}")


class SparkHub:
    """The Spark frame handler of one member network (see the module docstring)."""

    def __init__(self, network: MemberNetwork) -> None:
        self.network = network
        self.member = network.member_index
        self._period_s = network.flow_control_period_s
        self._timer = threading.Thread(target=self._ack_loop, name=f"jet.spark-acks-{self.member}", daemon=True)
        self._timer.start()

    def _reply(self, peer: int, header: dict, payload: Any = None) -> None:
        try:
            self.network.send_frame(peer, p.encode(FrameType.SPARK_REPLY, header, payload))
        except ConnectionError as error:
            log.debug("could not answer Spark peer %d: %s", peer, error)

    def on_frame(self, peer: int, frame: bytes) -> None:
        header, offset = p.decode_header(frame)
        op = header["op"]
        key = (self.member, str(header.get("job")), str(header.get("vertex")))
        with _REGISTRY_LOCK:
            entry = _REGISTRY.get(key)
        if op == p.PROBE:
            self._probe(peer, header, entry)
            return
        rid = header.get("rid")
        if entry is None and op == p.STATE:  # the stream sink has finished here (or never ran)
            self._reply(peer, {"op": p.STATE, "rid": rid, "processors": {}})
            return
        if entry is None:
            with _REGISTRY_LOCK:
                known = sorted(v for m, j, v in _REGISTRY if m == self.member and j == key[1])
            self._reply(peer, {"op": p.ERROR, "rid": rid, "message":
                               f"member {self.member} runs no Spark vertex {key[2]!r} of job {key[1]!r}"
                               f" (the job failed, was cancelled or has finished; its Spark vertices"
                               f" here: {known})"})
            return
        if op == p.ROWS:
            endpoint = self._processor(peer, entry, header)
            if endpoint is not None:
                endpoint.enqueue(peer, header, frame, offset, int(self._period_s * 1e9))
        elif op == p.FLUSH:
            self._reply(peer, {"op": p.FLUSHED, "rid": rid})
        elif op in (p.COMMIT, p.ABORT, p.END):
            with entry.changed:
                counts = {int(k): int(v) for k, v in header.get("counts", {}).items()}
                if op == p.END:
                    entry.ended = True
                elif op == p.ABORT:
                    entry.abort_reason = str(header.get("reason") or "the Spark write was aborted")
                elif "batch" in header:
                    entry.commits.add(str(header["query"]), int(header["batch"]), counts)
                else:
                    entry.counts = counts
                entry.changed.notify_all()
            if op == p.COMMIT and "batch" in header:  # acknowledged once a snapshot holds it
                entry.commits.acknowledge_when_durable(
                    str(header["query"]), int(header["batch"]), list(entry.processors),
                    lambda: self._reply(peer, {"op": p.OK, "rid": rid}),
                    lambda reason: self._reply(peer, {"op": p.ERROR, "rid": rid, "message": reason}))
                return
            self._reply(peer, {"op": p.OK, "rid": rid})
        elif op in (p.STATE, p.FETCH, p.TRIM):
            self._stream_sink_request(peer, entry, header, frame, offset)
        elif op == p.PULL:
            endpoint = self._processor(peer, entry, header)
            if endpoint is not None:
                schema = p.decode_ipc(frame, offset)[0] if header.get("fmt") == p.ARROW else None
                if schema is None and endpoint.schema is None:
                    self._reply(peer, {"op": p.ERROR, "message": "a reader's first pull must carry its "
                                       "Arrow schema"})
                    return
                self._pull(peer, endpoint, int(header.get("credit", 1)), schema)
        elif op == p.SAMPLE:
            ready, items = False, []
            for endpoint in list(entry.processors.values()):
                ready, items = endpoint.sample(int(header.get("n", 100)))
                if items:
                    break
            # a record batch item stands for its rows, by column name
            items = [row for item in items
                     for row in (batch_to_rows(item, "dict") if is_batch(item) else (item,))]
            self._reply(peer, {"op": p.SAMPLE, "rid": rid, "ready": ready or not entry.processors}, items)
        else:
            self._reply(peer, {"op": p.ERROR, "rid": rid, "message": f"unknown Spark request {op!r}"})

    def _stream_sink_request(self, peer: int, entry: VertexEndpoints, header: dict, frame: bytes,
                             offset: int) -> None:
        """``state`` of every local processor, ``fetch`` a range of one, ``trim`` committed ones."""
        rid, op = header.get("rid"), header["op"]
        if entry.kind != "stream-sink":
            self._reply(peer, {"op": p.ERROR, "rid": rid, "message": f"Spark vertex {entry.key[2]!r} is a"
                               f" {entry.kind}, not a stream sink: it has no {op!r}"})
            return
        if op == p.STATE:
            states = {str(i): e.state() for i, e in list(entry.processors.items())}
            self._reply(peer, {"op": p.STATE, "rid": rid, "processors": states})
        elif op == p.TRIM:
            for index, end in header["ends"].items():
                endpoint = entry.processors.get(int(index))
                if endpoint is not None:
                    endpoint.trim(int(end))
            self._reply(peer, {"op": p.OK, "rid": rid})
        else:
            endpoint = self._processor(peer, entry, header)
            if endpoint is None:
                return
            try:
                if header.get("fmt") != p.ARROW:
                    raise ValueError("a fetch must carry the reader's Arrow schema")
                items = endpoint.fetch(int(header["start"]), int(header["end"]), int(header["n"]))
                schema = p.decode_ipc(frame, offset)[0]  # the reader's: reply with Arrow batches of it
                payload = p.to_ipc(schema, items_to_batches(items, schema) if items else [])
            except ItemSchemaError as error:
                self._reply(peer, {"op": p.ERROR, "rid": rid, "message": f"Spark stream sink "
                                   f"{entry.key[2]!r} #{endpoint.index} of job {entry.key[1]!r}: {error}"})
                return
            except ValueError as error:
                self._reply(peer, {"op": p.ERROR, "rid": rid, "message": str(error)})
                return
            self._reply(peer, {"op": p.FETCH, "rid": rid, "n": len(items), "fmt": p.ARROW}, payload)

    def _processor(self, peer: int, entry: VertexEndpoints, header: dict) -> Any:
        endpoint = entry.processors.get(int(header.get("proc", -1)))
        if endpoint is None:
            self._reply(peer, {"op": p.ERROR, "rid": header.get("rid"),
                               "message": f"member {self.member} runs no processor #{header.get('proc')}"
                                          f" of Spark vertex {entry.key[2]!r} (it runs {sorted(entry.processors)})"})
        return endpoint

    def _probe(self, peer: int, header: dict, entry: VertexEndpoints | None) -> None:
        with _REGISTRY_LOCK:
            vertices = sorted(v for m, j, v in _REGISTRY if m == self.member and j == header.get("job"))
            ended = _ENDED.get((self.member, str(header.get("job"))))
        self._reply(peer, {"op": p.PROBE, "rid": header.get("rid"), "member": self.member, "ended": ended,
                           "kind": entry.kind if entry else None,
                           "snapshots": entry.commits.requires_snapshot if entry else False,
                           "finished": (self.member, str(header.get("job")), str(header.get("vertex"))) in _FINISHED,
                           "processors": sorted(entry.processors) if entry else [],
                           "total": entry.total if entry else 0, "vertices": vertices})

    def _pull(self, peer: int, endpoint: SinkEndpoint, credit: int, schema: Any = None) -> None:
        with endpoint.lock:
            if endpoint.reader != peer:
                if endpoint.reader_started:
                    message = (f"sink processor #{endpoint.index} of {endpoint.vertex.key[2]!r} was already"
                               f" partly read by another task attempt; a jet read cannot be retried"
                               f" once it has started (see docs/spark.md)")
                    self._reply(peer, {"op": p.ERROR, "message": message})
                    return
                endpoint.reader, endpoint.credit = peer, 0
            endpoint.credit += credit
            endpoint.network = self.network
            if schema is not None:
                endpoint.schema = schema
        endpoint.pump()

    def _ack_loop(self) -> None:
        while not self.network.wait_stopped(self._period_s):
            try:
                self.send_acks()
            except Exception:  # noqa: BLE001 - the timer must survive one bad round
                log.exception("sending Spark flow-control acks failed")

    def send_acks(self) -> None:
        """One ack per writer attempt of every Spark source processor of this member."""
        now = time.monotonic_ns()
        with _REGISTRY_LOCK:
            entries = [e for k, e in _REGISTRY.items() if k[0] == self.member and e.kind in SOURCE_KINDS]
        for entry in entries:
            for endpoint in list(entry.processors.values()):
                with endpoint.lock:
                    limits = [(peer, a.window.update_and_get_send_seq_limit_compressed(now, a.queued_bytes == 0))
                              for peer, a in endpoint.attempts.items()]
                for peer, limit in limits:
                    try:
                        self.network.send_frame(peer, p.encode(FrameType.SPARK_REPLY, {
                            "op": p.ACK, "proc": endpoint.index, "limit": limit}))
                    except ConnectionError:  # the attempt ended: forget its window
                        with endpoint.lock:
                            endpoint.attempts.pop(peer, None)


def _make_hub(network: MemberNetwork):
    return SparkHub(network).on_frame


register_default_frame_handler(FrameType.SPARK_REQUEST, _make_hub)
