"""Stream sources: the item stream, the socket source and the file watcher."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jet import SimpleEvent, Sources
from jet.connectors.stream_sources import ITEM_STREAM_CHUNK_LIMIT, ItemStreamP, due_timestamps
from jet.core import DAG, Edge
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.core.processors import list_sink_p
from jet.core import event_time
from jet.core.event_time import EventTimePolicy
from jet.core.special_items import IDLE_MESSAGE, Watermark
from jet.execution import execute
from jet.execution.runner import start

from tests.core.stream_driver import FakeClock

DEADLINE_S = 30.0
START_MS = 1_700_000_000_000


def drive(processor, context: Context, clock: FakeClock, times_ms, capacity: int = 1 << 30) -> list:
    """Call complete() once at each time, taking everything the processor emitted."""
    outbox = Outbox(1, capacity)
    processor.init(outbox, context)
    emitted = []
    for now_ms in times_ms:
        clock.now_ms = now_ms
        assert processor.complete() is False  # a stream never completes
        emitted.extend(outbox.buckets[0])
        outbox.buckets[0] = []
        if outbox.pending_special is not None:
            emitted.append(outbox.pending_special)
            outbox.special_taken()
    return emitted


def source_to_list(supplier, parallelism: int, received: list) -> DAG:
    """A DAG of the source (``parallelism`` processors) into ``received``."""
    dag = DAG()
    source = dag.new_vertex("source", supplier, parallelism)
    sink = dag.new_vertex("sink", list_sink_p(received), 1)
    dag.edge(Edge.between(source, sink))
    return dag


def expected_events(rate: int, elapsed_ms: int) -> list[SimpleEvent]:
    """Every event stamped within ``elapsed_ms`` of the start (sequence s: s * 1000 // rate)."""
    return [SimpleEvent(START_MS + s * 1000 // rate, s) for s in range(((elapsed_ms + 1) * rate - 1) // 1000 + 1)]


@pytest.mark.parametrize("rate, members, parallelism", [(1000, 1, 1), (1000, 3, 1), (250_000, 2, 2), (7, 2, 1)])
def test_the_processors_of_an_item_stream_together_emit_every_due_event_once_stamped_with_its_due_time(
        rate, members, parallelism):
    times = list(range(START_MS, START_MS + 2000, 7)) + [START_MS + 2000]
    seen = []
    for member in range(members):
        for local in range(parallelism):
            clock = FakeClock(START_MS)
            context = Context(local_index=local, local_parallelism=parallelism, member_index=member,
                              member_count=members)
            events = drive(ItemStreamP(rate, None, None, clock_ms=clock), context, clock, times)
            total = members * parallelism
            assert [e.sequence % total for e in events] == [context.global_index] * len(events)
            seen.extend(events)
    assert all(type(e) is SimpleEvent for e in seen)
    assert sorted(seen, key=lambda e: e.sequence) == expected_events(rate, 2000)


def test_every_processor_emits_the_events_of_a_millisecond_once_it_has_begun():
    # 100,000 events/s over 2 processors: sequence 1001, processor 1's first of millisecond 10,
    # is stamped START_MS + 10. Due at the exact 1001 / rate it used to wait for millisecond 11,
    # so processor 1's watermarks came 1 ms after processor 0's.
    clock = FakeClock(START_MS)
    for member in (0, 1):
        events = drive(ItemStreamP(100_000, None, None, clock_ms=clock), Context(member_index=member, member_count=2),
                       clock, [START_MS, START_MS + 10])
        assert events[-2:] == [SimpleEvent(START_MS + 10, s) for s in range(1096 + member, 1100, 2)]


def test_a_late_item_stream_catches_up_in_chunks_of_the_limit():
    clock = FakeClock(START_MS)
    rate = 1000
    calls = [START_MS, START_MS + 10_000] + [START_MS + 10_000] * 5
    outbox = Outbox(1, 1 << 30)
    processor = ItemStreamP(rate, None, None, clock_ms=clock)
    processor.init(outbox, Context())
    sizes = []
    for now_ms in calls:
        clock.now_ms = now_ms
        processor.complete()
        sizes.append(len(outbox.buckets[0]))
        outbox.buckets[0] = []
    assert sizes == [1, ITEM_STREAM_CHUNK_LIMIT, ITEM_STREAM_CHUNK_LIMIT, ITEM_STREAM_CHUNK_LIMIT,
                     ITEM_STREAM_CHUNK_LIMIT, 10_000 - 4 * ITEM_STREAM_CHUNK_LIMIT, 0]


def test_an_item_stream_keeps_a_refused_chunk_and_emits_it_when_the_outbox_has_room():
    clock = FakeClock(START_MS)
    outbox = Outbox(1, 1)
    processor = ItemStreamP(100, None, None, clock_ms=clock)
    processor.init(outbox, Context())
    emitted = []
    for step in range(40):
        clock.now_ms = START_MS + step * 25
        processor.complete()
        if step % 3:  # the downstream queue is full two calls in three
            continue
        emitted.extend(outbox.buckets[0])
        outbox.buckets[0] = []
    for _ in range(3):
        processor.complete()
        emitted.extend(outbox.buckets[0])
        outbox.buckets[0] = []
    assert emitted == expected_events(100, 39 * 25)


def test_generator_fn_makes_the_items_of_an_item_stream():
    clock = FakeClock(START_MS)
    events = drive(ItemStreamP(500, lambda ts, seq: f"{seq}@{ts}", None, clock_ms=clock), Context(), clock,
                   range(START_MS, START_MS + 101, 10))
    assert events == [f"{s}@{START_MS + s * 2}" for s in range(51)]


@settings(max_examples=200, deadline=None)
@given(rate=st.integers(1, 5_000_000), step=st.integers(1, 8), first=st.integers(0, 10_000_000),
       count=st.integers(0, 3000))
def test_due_timestamps_equal_one_division_per_event(rate, step, first, count):
    sequences = range(first, first + count * step, step)
    assert due_timestamps(START_MS, rate, sequences) == [START_MS + s * 1000 // rate for s in sequences]


def test_item_stream_rejects_a_bad_rate_or_generator():
    with pytest.raises(ValueError, match="items_per_second must be an int >= 1, got 0"):
        Sources.item_stream(0)
    with pytest.raises(ValueError, match="items_per_second"):
        Sources.item_stream(2.5)
    with pytest.raises(TypeError, match="generator_fn must be callable"):
        Sources.item_stream(10, "not a function")


def test_item_stream_is_a_stream_source_with_native_timestamps_and_a_policy_supplier():
    source = Sources.item_stream(10)
    assert source.native_timestamps and callable(source.policy_supplier)
    assert isinstance(source.policy_supplier(None)(), ItemStreamP)


def test_an_item_stream_runs_in_the_engine_until_cancelled_and_every_processor_emits_a_prefix_of_its_share():
    received: list = []
    dag = source_to_list(Sources.item_stream(20_000).supplier, 2, received)
    job = start(dag, 1)
    deadline = time.monotonic() + DEADLINE_S
    while len(received) < 5000 and time.monotonic() < deadline:
        time.sleep(0.01)
    job.cancel()
    with pytest.raises(Exception, match="cancel"):
        job.join(DEADLINE_S)
    assert len(received) >= 5000
    for processor in (0, 1):
        share = [e.sequence for e in received if e.sequence % 2 == processor]
        assert share == list(range(processor, processor + 2 * len(share), 2))
    assert all(e.timestamp == received[0].timestamp - received[0].sequence * 1000 // 20_000
               + e.sequence * 1000 // 20_000 for e in received if e.sequence % 2 == received[0].sequence % 2)


class FakeEventTimeMapper:
    """The EventTimeMapper contract in its simplest form: pairs by the native timestamps (or the
    policy's function), then a watermark of the top timestamp minus the lag; IDLE when idle."""

    def __init__(self, policy) -> None:
        self.policy = policy

    def add_partitions(self, count: int) -> None:
        assert count == 1  # one partition per source processor

    def map_chunk(self, items, partition, now_ms, timestamps=None):
        if self.policy.timestamp_fn is not None:
            timestamps = list(map(self.policy.timestamp_fn, items))
        return list(zip(timestamps, items)), Watermark(max(timestamps) - self.policy.allowed_lag_ms)

    def on_idle(self, now_ms):
        return [IDLE_MESSAGE]


def test_with_an_event_time_policy_the_item_stream_emits_pairs_by_due_time_and_a_watermark_after_each_chunk(
        monkeypatch):
    monkeypatch.setattr(event_time, "EventTimeMapper", FakeEventTimeMapper, raising=False)
    source = Sources.item_stream(100)
    clock = FakeClock(START_MS)
    processor = source.policy_supplier(EventTimePolicy(allowed_lag_ms=5))()
    processor._clock_ms = clock
    emitted = drive(processor, Context(), clock, [START_MS, START_MS + 5, START_MS + 35, START_MS + 100])
    events = expected_events(100, 100)
    assert emitted == [(events[0].timestamp, events[0]), Watermark(events[0].timestamp - 5), IDLE_MESSAGE,
                       *[(e.timestamp, e) for e in events[1:4]], Watermark(events[3].timestamp - 5),
                       *[(e.timestamp, e) for e in events[4:]], Watermark(events[-1].timestamp - 5)]


# -- socket ------------------------------------------------------------------------------------
class LineServer:
    """A TCP server on loopback that sends ``chunks`` to its first client, then closes."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.accepted = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        connection, _ = self._server.accept()
        self.accepted += 1
        with connection:
            for chunk in self.chunks:
                connection.sendall(chunk)
                time.sleep(0.01)
        self._server.close()


def run_socket_source(port: int, parallelism: int, encoding: str = "utf-8") -> list:
    received: list = []
    dag = source_to_list(Sources.socket("127.0.0.1", port, encoding).supplier, parallelism, received)
    execute(dag, timeout=DEADLINE_S)
    return received


def test_the_socket_source_emits_the_lines_a_server_sends_and_ends_when_it_closes():
    text = "first line\r\nsecond, with ünïcödé\nthird\n\nlast without newline"
    data = text.encode("utf-8")
    chunks = [data[i:i + 5] for i in range(0, len(data), 5)]  # splits lines and characters
    server = LineServer(chunks)
    assert run_socket_source(server.port, 2) == ["first line", "second, with ünïcödé", "third", "",
                                                 "last without newline"]
    assert server.accepted == 1


def test_the_socket_source_names_the_address_it_cannot_connect_to():
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    with pytest.raises(Exception, match=f"cannot connect to 127.0.0.1:{port}"):
        run_socket_source(port, 1)


def test_the_socket_source_rejects_bad_arguments():
    with pytest.raises(ValueError, match="port must be an int in 1..65535"):
        Sources.socket("localhost", 70000)
    with pytest.raises(ValueError, match="unknown encoding 'klingon'"):
        Sources.socket("localhost", 5000, "klingon")


# -- file watcher -------------------------------------------------------------------------------
def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {DEADLINE_S} s: {what}")
        time.sleep(0.02)


def watchers_started(job) -> bool:
    """Whether every watcher has taken stock of the directory (its init is done)."""
    return all(hasattr(t.processor, "_emitter") for t in job.plan.tasklets if t.context.vertex_name == "source")


@pytest.mark.parametrize("parallelism", [1, 3])
def test_the_file_watcher_emits_lines_appended_or_created_after_the_start(tmp_path, parallelism):
    (tmp_path / "old.log").write_text("present before the start\n")
    (tmp_path / "ignored.tmp").write_text("")
    received: list = []
    dag = source_to_list(Sources.file_watcher(str(tmp_path), "*.log").supplier, parallelism, received)
    job = start(dag, 1)
    try:
        wait_for(lambda: watchers_started(job), "the start")
        with open(tmp_path / "old.log", "a") as old:
            old.write("appended 1\nappen")
            old.flush()
            time.sleep(0.3)
            old.write("ded 2\r\n")
        for index in range(5):
            (tmp_path / f"new-{index}.log").write_text(f"new {index} a\nnew {index} b\n")
        (tmp_path / "ignored.tmp").write_text("not a log\n")
        expected = ["appended 1", "appended 2"] + [f"new {i} {x}" for i in range(5) for x in "ab"]
        wait_for(lambda: len(received) >= len(expected), f"{len(expected)} lines")
        time.sleep(0.3)  # a duplicate would show up by now
    finally:
        job.cancel()
        with pytest.raises(Exception, match="cancel"):
            job.join(DEADLINE_S)
    assert sorted(received) == sorted(expected)
    assert received.index("appended 1") < received.index("appended 2")
    assert all(received.index(f"new {i} a") < received.index(f"new {i} b") for i in range(5))


def test_the_file_watcher_reads_a_truncated_file_again_from_its_start(tmp_path):
    log_file = tmp_path / "a.log"
    log_file.write_text("old old old old old\n")
    received: list = []
    dag = source_to_list(Sources.file_watcher(str(tmp_path)).supplier, 1, received)
    job = start(dag, 1)
    try:
        wait_for(lambda: watchers_started(job), "the start")
        log_file.write_text("fresh\n")
        wait_for(lambda: received, "a line")
    finally:
        job.cancel()
        with pytest.raises(Exception, match="cancel"):
            job.join(DEADLINE_S)
    assert received == ["fresh"]


def test_the_file_watcher_checks_its_directory_at_submission(tmp_path):
    source = Sources.file_watcher(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="missing.* is not a directory"):
        source.preflight()


def test_watermarks_from_the_emitter_follow_the_chunk_they_close():
    """The emitter hands a watermark over as its own element, after the items before it."""
    from jet.connectors.stream_emitter import StreamEmitter
    emitter = StreamEmitter()
    emitter._pending.extend([[1, 2], Watermark(5), [3]])
    outbox = Outbox(1, 10)
    assert emitter.flush(outbox) is False  # stops at the watermark: the outbox is closed until it is passed on
    assert outbox.buckets[0] == [1, 2] and outbox.pending_special == Watermark(5)
    outbox.special_taken()
    assert emitter.flush(outbox) is True and outbox.buckets[0] == [1, 2, 3]


def test_with_the_event_time_mapper_each_chunk_is_followed_by_its_throttled_watermark():
    lag_ms, frame_ms, rate = 15, 10, 400
    clock = FakeClock(START_MS)
    policy = EventTimePolicy(allowed_lag_ms=lag_ms, frame_size_ms=frame_ms)
    processor = Sources.item_stream(rate).policy_supplier(policy)()
    processor._clock_ms = clock
    times = [START_MS + t for t in (0, 1, 3, 30, 31, 90, 400, 401)]
    emitted = drive(processor, Context(), clock, times)
    expected, last_wm, sent = [], None, 0
    for now_ms in times:  # oracle: the due events, then floor(top - lag) to the frame if it rose
        due = [e for e in expected_events(rate, now_ms - START_MS) if e.sequence >= sent]
        if not due:
            continue
        sent += len(due)
        expected.extend((e.timestamp, e) for e in due)
        wm = (due[-1].timestamp - lag_ms) // frame_ms * frame_ms
        if last_wm is None or wm > last_wm:
            expected.append(Watermark(wm))
            last_wm = wm
    assert emitted == expected


def test_a_windowed_word_count_over_a_socket_counts_every_word_once_the_server_closes():
    from collections import Counter

    from jet import AggregateOperations, Pipeline, Sinks, WindowDefinition
    text = "".join(f"to be or not to be {i % 4}\n" for i in range(200))
    data = text.encode()
    server = LineServer([data[i:i + 500] for i in range(0, len(data), 500)])
    p = Pipeline.create()
    (p.read_from(Sources.socket("127.0.0.1", server.port)).with_ingestion_timestamps()
     .flat_map(str.split).grouping_key(lambda word: word).window(WindowDefinition.tumbling(50))
     .aggregate(AggregateOperations.counting()).write_to(Sinks.list("counts")))
    results = execute(p.to_dag(), timeout=DEADLINE_S)["counts"]
    totals: Counter = Counter()
    for result in results:
        totals[result.key] += result.result
    assert totals == Counter(text.split())
