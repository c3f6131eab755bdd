"""A harness that runs one processor the way the engine would, but harder (Jet's TestSupport).

::

    TestSupport.verify_processor(map_p(str.upper)).input(["a", "b"]).expect_output(["A", "B"])

``expect_output`` runs the processor four times: feeding the input all at once and one item
at a time, each without and with snapshots. A ``Watermark`` in the input is given to
``try_process_watermark`` after the items before it (each run of items between watermarks is
one inbox fill), and the watermarks the processor forwards appear in the output of every
ordinal where it emitted them. Its outbox holds one item per bucket and refuses every offer on
every other call, so a processor that ignores a refused offer loses or duplicates items and
fails the check. Every call that could make progress must make some (consume input or emit
output), a cooperative call over 5 ms logs a warning and one over the cooperative time limit
fails.

With snapshots (Jet's default; :meth:`TestSupport.disable_snapshots` turns them off), after
every inbox the processor emptied, after every watermark and between ``complete()`` calls the
harness calls ``save_to_snapshot()`` until True (it may emit first: what it emits belongs
before the barrier), then ``snapshot_commit_prepare()`` and ``snapshot_commit_finish(True)``,
round-trips the saved entries through pickle, closes the processor and goes on with a fresh
one from the supplier that restored them (``restore_from_snapshot`` until its inbox is empty,
then ``finish_snapshot_restore()`` until True). :func:`restore_routing` routes the entries that
several processors saved to another number of processors, as the engine does.
"""

from __future__ import annotations

import logging
import pickle
import time
from typing import Any, Callable, Sequence

from jet.core.inbox import Inbox
from jet.core.outbox import MIN_SNAPSHOT_PORTION, SNAPSHOT_PORTION, Outbox
from jet.core.partitioner import murmur_partition
from jet.core.processor import Context, Processor
from jet.core.snapshot_keys import BroadcastKey
from jet.core.special_items import Watermark

log = logging.getLogger("jet.test_support")

COOPERATIVE_TIME_LIMIT_MS_WARN = 5
COOPERATIVE_TIME_LIMIT_MS_FAIL = 5000
_MAX_IDLE_CALLS = 10_000

OutputChecker = Callable[[list, list], bool]


def _same_items_any_order(expected: list, actual: list) -> bool:
    return sorted(map(repr, expected)) == sorted(map(repr, actual))


class _TestOutbox(Outbox):
    """An outbox that can be told to refuse everything."""

    blocked = False

    def offer(self, item: Any, ordinal: Any = None) -> bool:
        return not self.blocked and super().offer(item, ordinal)

    def offer_chunk(self, items: list, ordinal: Any = None) -> bool:
        return not self.blocked and super().offer_chunk(items, ordinal)

    def offer_watermark(self, watermark: Any) -> bool:
        return not self.blocked and super().offer_watermark(watermark)


def _feeds(items: list, one_by_one: bool) -> list:
    """The inbox fills of one ordinal's input: runs of items (or single items), and watermarks."""
    feeds: list = []
    for item in items:
        if type(item) is Watermark:
            feeds.append(item)
        elif one_by_one or not feeds or type(feeds[-1]) is Watermark:
            feeds.append([item])
        else:
            feeds[-1].append(item)
    return feeds


def restore_routing(saved: Sequence[Sequence[tuple[Any, Any]]], count: int) -> list[list[tuple[Any, Any]]]:
    """The snapshot entries each of ``count`` processors restores, from the entries that several
    processors saved (one list per processor), routed as the engine routes them: a
    :class:`BroadcastKey` entry to every processor, any other to processor
    ``murmur_partition(key) % count`` (the owner of the key's partition when partitions are
    dealt round-robin). Order is kept within each processor's list."""
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"restore_routing: count must be an int >= 1, got {count!r}")
    routed: list[list[tuple[Any, Any]]] = [[] for _ in range(count)]
    for entries in saved:
        for key, value in entries:
            if type(key) is BroadcastKey:
                for target in routed:
                    target.append((key, value))
            else:
                routed[murmur_partition(key) % count].append((key, value))
    return routed


class ProcessorVerificationError(AssertionError):
    """The processor broke the processor contract or produced the wrong output."""


class TestSupport:
    """Builder-style verifier of one processor's behaviour."""

    __test__ = False  # not a pytest test class
    SAME_ITEMS_ANY_ORDER: OutputChecker = staticmethod(_same_items_any_order)

    def __init__(self, supplier: Callable[[], Processor]) -> None:
        self._supplier = supplier
        self._inputs: list[list] = []
        self._priorities: list[int] = []
        self._expected: list[list] | None = None
        self._checker: OutputChecker = lambda expected, actual: expected == actual
        self._assert_progress = True
        self._time_limit_ms = COOPERATIVE_TIME_LIMIT_MS_FAIL
        self._context = Context(vertex_name="test-vertex")
        self._snapshots = True
        self._saving = False
        self._saved: list[tuple[Any, Any]] = []
        self.snapshots_taken = 0
        """Snapshots taken (and restored) in the last verify(), for tests of the harness."""
        self.warnings: list[str] = []
        """Every slow-call warning of the last verify(), for tests of the harness itself."""

    @classmethod
    def verify_processor(cls, supplier: Callable[[], Processor]) -> "TestSupport":
        return cls(supplier)

    # -- configuration ------------------------------------------------------------------------
    def input(self, items: Sequence[Any]) -> "TestSupport":
        """Input for ordinal 0."""
        return self.inputs([items])

    def inputs(self, inputs: Sequence[Sequence[Any]],
               priorities: Sequence[int] | None = None) -> "TestSupport":
        """One list of items per input ordinal; lower priority ordinals are fed first."""
        self._inputs = [list(i) for i in inputs]
        self._priorities = list(priorities) if priorities else [0] * len(self._inputs)
        if len(self._priorities) != len(self._inputs):
            raise ValueError("one priority per input ordinal is needed")
        return self

    def output_checker(self, checker: OutputChecker) -> "TestSupport":
        """How expected and actual outputs of an ordinal are compared (default: equality)."""
        self._checker = checker
        return self

    def disable_progress_assertion(self) -> "TestSupport":
        self._assert_progress = False
        return self

    def disable_snapshots(self) -> "TestSupport":
        """Run without snapshots only (for a processor that is not fault-tolerant)."""
        self._snapshots = False
        return self

    def cooperative_time_limit_ms(self, limit_ms: int) -> "TestSupport":
        """Fail when one cooperative call takes longer (default 5000 ms; 0 disables)."""
        self._time_limit_ms = limit_ms
        return self

    def context(self, **fields: Any) -> "TestSupport":
        """Set Context fields, e.g. ``local_index=1, local_parallelism=2, member_count=3``."""
        self._context = Context(**{"vertex_name": "test-vertex", **fields})
        return self

    def expect_output(self, expected: Sequence[Any]) -> None:
        """Run and check the output of ordinal 0."""
        self.expect_outputs([expected])

    def expect_outputs(self, expected: Sequence[Sequence[Any]]) -> None:
        """Run and check the output of each output ordinal."""
        self._expected = [list(e) for e in expected]
        self.verify()

    # -- running ----------------------------------------------------------------------------
    def verify(self) -> None:
        """Run all-at-once and one-by-one, without and with snapshots, checking the contract and
        the output each time."""
        self.warnings = []
        self.snapshots_taken = 0
        for snapshots in (False, True) if self._snapshots else (False,):
            for one_by_one in (False, True):
                actual = self._run(one_by_one, snapshots)
                if self._expected is None:
                    continue
                for ordinal, (expected, got) in enumerate(zip(self._expected, actual)):
                    if not self._checker(expected, got):
                        mode = "one item at a time" if one_by_one else "all input at once"
                        mode += ", with snapshot and restore" if snapshots else ""
                        raise ProcessorVerificationError(
                            f"output of ordinal {ordinal} with {mode}:\nexpected {expected!r}\n"
                            f"     got {got!r}")

    def _run(self, one_by_one: bool, snapshots: bool) -> list[list]:
        bucket_count = len(self._expected) if self._expected is not None else 1
        outbox = _TestOutbox(bucket_count, 1)
        output: list[list] = [[] for _ in range(bucket_count)]
        self._processor = self._supplier()
        self._processor.init(outbox, self._context)
        self._cooperative = bool(getattr(self._processor, "is_cooperative", True))
        self._calls = 0

        def snapshot_point() -> None:
            if snapshots:
                self._snapshot_and_restore(outbox, output)

        order = sorted(range(len(self._inputs)), key=lambda o: (self._priorities[o], o))
        inbox = Inbox()
        for ordinal in order:
            for feed in _feeds(self._inputs[ordinal], one_by_one):
                if type(feed) is Watermark:
                    self._until_true(lambda: self._processor.try_process_watermark(feed), outbox,
                                     output, f"try_process_watermark({feed!r})")
                else:
                    inbox.add_chunk(feed)
                    self._until(lambda: inbox.is_empty(), outbox, output,
                                lambda: self._processor.process(ordinal, inbox), inbox,
                                f"process({ordinal})")
                snapshot_point()
            self._until_true(lambda: self._processor.complete_edge(ordinal), outbox, output,
                             f"complete_edge({ordinal})")
        self._until_true(lambda: self._processor.complete(), outbox, output, "complete()",
                         between_calls=snapshot_point)
        self._processor.close()
        return output

    def _snapshot_and_restore(self, outbox: _TestOutbox, output: list[list]) -> None:
        """Save the processor's state, then continue with a fresh processor that restored it."""
        old = self._processor
        self._saving = True
        self._saved = []
        outbox.snapshot_capacity = SNAPSHOT_PORTION  # as the engine: a full portion first, ...
        def save() -> bool:
            done = old.save_to_snapshot()
            if done and outbox.pending_special is not None:
                raise ProcessorVerificationError(
                    f"save_to_snapshot() returned True with {outbox.pending_special!r} pending: the"
                    " barrier would have to go out before it; return False until it is handed over")
            return done

        self._until_true(save, outbox, output, "save_to_snapshot()")
        self._until_true(old.snapshot_commit_prepare, outbox, output, "snapshot_commit_prepare()")
        self._saving = False
        self._until_true(lambda: old.snapshot_commit_finish(True), outbox, output,
                         "snapshot_commit_finish(True)")
        try:
            entries = pickle.loads(pickle.dumps(self._saved))
        except Exception as error:
            raise ProcessorVerificationError(
                f"{type(old).__name__} saved a snapshot entry that does not pickle: {error}") from error
        old.close()
        self.snapshots_taken += 1
        restored = self._processor = self._supplier()
        restored.init(outbox, self._context)
        inbox = Inbox()
        inbox.add_chunk(entries)
        self._until(lambda: inbox.is_empty(), outbox, output,
                    lambda: restored.restore_from_snapshot(inbox), inbox, "restore_from_snapshot()")
        self._until_true(restored.finish_snapshot_restore, outbox, output, "finish_snapshot_restore()")

    def _until(self, finished: Callable[[], bool], outbox: _TestOutbox, output: list[list],
               step: Callable[[], Any], inbox: Inbox, what: str) -> None:
        idle = 0
        while not finished():
            before = len(inbox)
            made_progress = self._call(step, outbox, output, what)
            made_progress |= len(inbox) != before
            idle = self._check_progress(made_progress, outbox, idle, what)

    def _until_true(self, step: Callable[[], bool], outbox: _TestOutbox, output: list[list],
                    what: str, between_calls: Callable[[], None] | None = None) -> None:
        idle = 0
        result = {"done": False}

        def run() -> None:
            result["done"] = bool(step())

        while True:
            made_progress = self._call(run, outbox, output, what)
            if result["done"]:
                return
            idle = self._check_progress(made_progress, outbox, idle, what)
            if between_calls is not None:
                between_calls()

    def _call(self, step: Callable[[], Any], outbox: _TestOutbox, output: list[list],
              what: str) -> bool:
        """One call, with the outbox refusing on every other call; True if it emitted."""
        self._calls += 1
        outbox.blocked = self._calls % 2 == 0
        started = time.perf_counter()
        step()
        elapsed_ms = (time.perf_counter() - started) * 1000
        if self._cooperative:
            if self._time_limit_ms and elapsed_ms > self._time_limit_ms:
                raise ProcessorVerificationError(
                    f"a cooperative call to {what} took {elapsed_ms:.0f} ms, over the limit of"
                    f" {self._time_limit_ms} ms")
            if elapsed_ms > COOPERATIVE_TIME_LIMIT_MS_WARN:
                message = (f"a cooperative call to {what} took {elapsed_ms:.1f} ms; calls should"
                           f" return within about {COOPERATIVE_TIME_LIMIT_MS_WARN} ms")
                self.warnings.append(message)
                log.warning(message)
        emitted = False
        if outbox.snapshot_entries:
            if not self._saving:
                raise ProcessorVerificationError(
                    f"{what} offered to the snapshot outside save_to_snapshot() and"
                    " snapshot_commit_prepare()")
            self._saved.extend(outbox.snapshot_entries)
            outbox.snapshot_entries.clear()
            outbox.snapshot_capacity = MIN_SNAPSHOT_PORTION  # ... then the smallest the engine may choose
            emitted = True
        for ordinal, bucket in enumerate(outbox.buckets):
            if bucket:
                output[ordinal].extend(bucket)
                outbox.buckets[ordinal] = []
                emitted = True
        if outbox.pending_special is not None:
            for ordinal_output in output:
                ordinal_output.append(outbox.pending_special)
            outbox.special_taken()
            emitted = True
        return emitted

    def _check_progress(self, made_progress: bool, outbox: _TestOutbox, idle: int,
                        what: str) -> int:
        if made_progress:
            return 0
        if self._assert_progress and not outbox.blocked:
            raise ProcessorVerificationError(
                f"{what} made no progress: it neither consumed input nor emitted output,"
                " although the outbox had room")
        idle += 1
        if idle > _MAX_IDLE_CALLS:
            raise ProcessorVerificationError(f"{what} made no progress in {idle} calls")
        return idle
