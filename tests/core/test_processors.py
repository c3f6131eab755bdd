import logging
import time

import pytest

from jet.core import AbstractProcessor, Processor
from jet.core.aggregate import AggregateOperation, counting, summing
from jet.core.processors import (accumulate_by_key_p, accumulate_p, aggregate_by_key_p, aggregate_p,
                                 combine_by_key_p, combine_p, filter_p, flat_map_p, fused_p,
                                 items_source_p, list_sink_p, logger_sink_p, map_p, noop_p)
from jet.core.test_support import ProcessorVerificationError, TestSupport

ANY_ORDER = TestSupport.SAME_ITEMS_ANY_ORDER


def test_map_filter_flat_map():
    TestSupport.verify_processor(map_p(str.upper)).input(["a", "b"]).expect_output(["A", "B"])
    TestSupport.verify_processor(filter_p(lambda x: x % 2)).input(range(6)).expect_output([1, 3, 5])
    TestSupport.verify_processor(flat_map_p(str.split)).input(["a b", "", "c"]).expect_output(["a", "b", "c"])


def test_fused_chain_applies_steps_in_order():
    steps = [("flat_map", str.split), ("filter", lambda w: len(w) > 1), ("map", str.upper)]
    TestSupport.verify_processor(fused_p(steps)).input(["a bb ccc", "dd e"]) \
        .expect_output(["BB", "CCC", "DD"])


def test_fused_chain_rejects_unknown_steps():
    with pytest.raises(ValueError, match="unknown step kind 'reduce'"):
        fused_p([("reduce", sum)])


def test_accumulate_then_combine_by_key():
    words = ["a", "b", "a", "c", "a"]
    TestSupport.verify_processor(accumulate_by_key_p(lambda w: w, counting())).input(words) \
        .output_checker(ANY_ORDER).expect_output([("a", 3), ("b", 1), ("c", 1)])
    TestSupport.verify_processor(combine_by_key_p(counting())) \
        .inputs([[("a", 3), ("b", 1)], [("a", 2)]]).output_checker(ANY_ORDER) \
        .expect_output([("a", 5), ("b", 1)])


def test_aggregate_by_key_applies_finish():
    average = AggregateOperation(create=lambda: (0, 0), accumulate=lambda a, x: (a[0] + x, a[1] + 1),
                                 combine=lambda a, b: (a[0] + b[0], a[1] + b[1]),
                                 finish=lambda a: a[0] / a[1])
    TestSupport.verify_processor(aggregate_by_key_p(lambda x: x % 2, average)).input([1, 2, 3, 4]) \
        .output_checker(ANY_ORDER).expect_output([(1, 2.0), (0, 3.0)])


def test_global_two_stage_and_single_stage_aggregation():
    TestSupport.verify_processor(accumulate_p(summing())).input([1, 2, 3]).expect_output([6])
    TestSupport.verify_processor(combine_p(summing())).input([6, 4]).expect_output([10])
    TestSupport.verify_processor(combine_p(summing())).input([]).expect_output([])
    TestSupport.verify_processor(aggregate_p(counting())).input("abc").expect_output([3])


def test_items_source_splits_items_by_global_index():
    items = list(range(10))
    TestSupport.verify_processor(items_source_p(items)) \
        .context(local_index=1, local_parallelism=2, member_index=1, member_count=2) \
        .expect_output([3, 7])


def test_sinks():
    target = []
    TestSupport.verify_processor(list_sink_p(target)).input([1, 2]).expect_outputs([])
    assert target == [1, 2] * 4, "every run (all at once, one by one; without, with snapshots) appends"
    TestSupport.verify_processor(noop_p()).input([1, 2]).expect_outputs([])


def test_logger_sink_logs_each_item(caplog):
    with caplog.at_level(logging.INFO, logger="jet.processor"):
        TestSupport.verify_processor(logger_sink_p(lambda x: f"item={x}")).input([7]).expect_outputs([])
    assert [r.getMessage() for r in caplog.records].count("item=7") == 4  # the harness runs 4 times


def test_abstract_processor_emit_from_retries_the_refused_item():
    class Repeat(AbstractProcessor):
        def try_process_item(self, ordinal, item):
            if not hasattr(self, "_gen") or self._gen is None:
                self._gen = (item for _ in range(3))
            if self.emit_from(self._gen):
                self._gen = None
                return True
            return False

    TestSupport.verify_processor(Repeat).input(["x", "y"]).expect_output(["x"] * 3 + ["y"] * 3)


def test_flat_mapper_helper():
    class Explode(AbstractProcessor):
        def init(self, outbox, context):
            super().init(outbox, context)
            self._mapper = self.flat_mapper(lambda s: iter(s))

        def try_process_item(self, ordinal, item):
            return self._mapper(item)

    TestSupport.verify_processor(Explode).input(["ab", "c"]).expect_output(["a", "b", "c"])


def test_harness_catches_a_processor_that_ignores_a_refused_offer():
    class Careless(Processor):
        def process(self, ordinal, inbox):
            for item in inbox.take_chunk():
                self.outbox.offer(item)

    with pytest.raises(ProcessorVerificationError, match="output of ordinal 0"):
        TestSupport.verify_processor(Careless).input([1, 2, 3]).expect_output([1, 2, 3])


def test_harness_catches_a_processor_that_makes_no_progress():
    class Stuck(Processor):
        def process(self, ordinal, inbox):
            pass

    with pytest.raises(ProcessorVerificationError, match="made no progress"):
        TestSupport.verify_processor(Stuck).input([1]).expect_output([])


def test_harness_warns_on_a_slow_cooperative_call_and_fails_over_the_limit():
    class Slow(Processor):
        def process(self, ordinal, inbox):
            time.sleep(0.01)
            inbox.clear()

    support = TestSupport.verify_processor(Slow).input([1])
    support.expect_outputs([])
    assert support.warnings and "took" in support.warnings[0]
    with pytest.raises(ProcessorVerificationError, match="over the limit of 5 ms"):
        TestSupport.verify_processor(Slow).input([1]).cooperative_time_limit_ms(5).expect_outputs([])


def test_counting_and_summing_fast_paths_equal_the_generic_path():
    items = ["a", "b", "a", "c"] * 10
    for op in (counting(), summing(len)):
        generic = AggregateOperation(op.create, op.accumulate, op.combine, op.finish)
        fast_accs, slow_accs = {}, {}
        op.fold_keyed_chunk(fast_accs, str.upper, items)
        generic.fold_keyed_chunk(slow_accs, str.upper, items)
        assert fast_accs == slow_accs
        assert op.fold_chunk(op.create(), items) == generic.fold_chunk(generic.create(), items)
