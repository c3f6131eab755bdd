"""map_batches on local clusters, each result against plain Python over the same rows."""

from collections import Counter, defaultdict

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from jet import AggregateOperations as A
from jet import Pipeline, Sinks, Sources
from jet.execution import JobFailedError, execute
from jet.pipeline.source_sink import Sink

from tests.pipeline.support import run_pipeline

MEMBERS = pytest.mark.parametrize("members", [1, 3])
ROWS = [(f"k{i % 7}", i) for i in range(3000)]
HERE = __file__


def _run(build, members=1, threads=2):
    p = Pipeline.create()
    build(p)
    return run_pipeline(p, members, threads)


def times_ten(batch):
    """Tuple rows arrive as columns _1, _2."""
    return pa.RecordBatch.from_arrays([batch.column("_1"), pc.multiply(batch.column("_2"), 10)],
                                      names=["key", "value"])


@MEMBERS
def test_rows_from_items_become_batches_and_come_back_as_tuples(members):
    results = _run(lambda p: p.read_from(Sources.items(ROWS)).map_batches(times_ten)
                   .write_to(Sinks.list()), members)
    assert Counter(results["default"]) == Counter((key, value * 10) for key, value in ROWS)


@MEMBERS
def test_dict_rows_by_key_and_dict_rows_out(members):
    rows = [{"name": f"n{i}", "size": i % 11} for i in range(1500)]

    def big_ones(batch):
        return batch.filter(pc.greater(batch.column("size"), 5))

    results = _run(lambda p: p.read_from(Sources.items(rows)).map_batches(big_ones, as_dicts=True)
                   .write_to(Sinks.list()), members)
    expected = [row for row in rows if row["size"] > 5]
    assert sorted(results["default"], key=lambda r: r["name"]) == sorted(expected, key=lambda r: r["name"])


def test_a_schema_names_and_types_the_columns_of_tuple_rows():
    schema = pa.schema([("word", pa.string()), ("count", pa.int16())])
    seen_schemas = []

    def describe(batch):
        seen_schemas.append(batch.schema)
        return pa.RecordBatch.from_pydict({"word": batch.column("word"),
                                           "type": [str(batch.schema.field("count").type)] * batch.num_rows})

    results = _run(lambda p: p.read_from(Sources.items([("a", 1), ("b", 2)]))
                   .map_batches(describe, schema=schema).write_to(Sinks.list()), threads=1)
    assert sorted(results["default"]) == [("a", "int16"), ("b", "int16")]
    assert seen_schemas and all(seen == schema for seen in seen_schemas)


@MEMBERS
def test_pandas_format(members):
    def per_key_mean(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.rename(columns={"_1": "key", "_2": "value"})
        return frame.assign(value=frame["value"] * 2 + 1)

    results = _run(lambda p: p.read_from(Sources.items(ROWS)).map_batches(per_key_mean, format="pandas")
                   .write_to(Sinks.list()), members)
    assert Counter(results["default"]) == Counter((key, value * 2 + 1) for key, value in ROWS)


@MEMBERS
def test_chained_map_batches_fuse_and_keep_batches_between_them(members):
    def keep_two_keys(batch):  # sees times_ten's column names: a batch, not rows made again
        return batch.filter(pc.is_in(batch.column("key"), pa.array(["k1", "k2"])))

    def build(p):
        (p.read_from(Sources.items(ROWS)).map_batches(times_ten).map_batches(keep_two_keys)
         .map(lambda row: (row[0], row[1] + 1)).write_to(Sinks.list()))

    p = Pipeline.create()
    build(p)
    assert [v.name for v in p.to_dag(2).vertices] == [
        "items", "fused(map-batches, map-batches-2, map)", "list(default)"]
    results = _run(build, members)
    expected = [(key, value * 10 + 1) for key, value in ROWS if key in ("k1", "k2")]
    assert Counter(results["default"]) == Counter(expected)


@MEMBERS
def test_map_batches_then_grouping_and_aggregation(members):
    def partial_sums(batch):
        table = pa.Table.from_batches([batch]).group_by("_1").aggregate([("_2", "sum"), ("_2", "count")])
        return table  # a Table: its batches go on

    def build(p):
        (p.read_from(Sources.items(ROWS)).map_batches(partial_sums)
         .grouping_key(lambda row: row[0])
         .aggregate(A.summing(lambda row: row[1]))
         .write_to(Sinks.list()))

    results = _run(build, members)
    expected = defaultdict(int)
    for key, value in ROWS:
        expected[key] += value
    assert dict(results["default"]) == expected


def test_none_table_and_data_frame_results():
    def only_first_key(batch):
        kept = batch.filter(pc.equal(batch.column("_1"), "k0"))
        if kept.num_rows == 0:
            return None
        return kept.to_pandas()

    results = _run(lambda p: p.read_from(Sources.items(ROWS)).map_batches(only_first_key)
                   .map_batches(lambda batch: pa.Table.from_batches([batch, batch]))
                   .write_to(Sinks.list()))
    expected = [row for row in ROWS if row[0] == "k0"] * 2
    assert Counter(results["default"]) == Counter(expected)


def test_nothing_returned_for_every_batch_gives_no_rows():
    results = _run(lambda p: p.read_from(Sources.items(ROWS)).map_batches(lambda batch: None)
                   .write_to(Sinks.list()))
    assert results["default"] == []


def returns_a_list(batch):
    return batch.to_pylist()


def test_a_wrong_return_type_fails_the_job_naming_the_stage_and_the_type():
    p = Pipeline.create()
    (p.read_from(Sources.items(ROWS)).map_batches(returns_a_list).set_name("to-lists")
     .write_to(Sinks.list()))
    with pytest.raises(JobFailedError) as failure:
        execute(p.to_dag(1), timeout=30)
    text = failure.value.traceback_text
    assert "StageContractError: stage 'to-lists' (map_batches): its function returns_a_list" in text
    assert ("must return a pyarrow.RecordBatch, a pyarrow.Table, a pandas DataFrame or None; it returned"
            " builtins.list") in text


def test_the_users_own_error_shows_the_users_frames_first():
    def explode(batch):
        raise KeyError("no such column")

    p = Pipeline.create()
    p.read_from(Sources.items(ROWS)).map_batches(explode).write_to(Sinks.list())
    with pytest.raises(JobFailedError) as failure:
        execute(p.to_dag(1), timeout=30)
    assert failure.value.traceback_text.startswith(
        f'Traceback (most recent call last):\n  File "{HERE}"')
    assert "KeyError: 'no such column'" in failure.value.traceback_text


def test_a_broken_row_contract_after_map_batches_is_still_named():
    p = Pipeline.create()
    p.read_from(Sources.items(ROWS)).map_batches(times_ten).flat_map(len).write_to(Sinks.list())
    with pytest.raises(JobFailedError) as failure:
        execute(p.to_dag(1), timeout=30)
    assert "stage 'flat-map' (flat_map): its function len" in failure.value.traceback_text


class _BatchListSink(Sink):
    """A list sink that says it takes RecordBatch items as they are."""

    takes_batches = True


def test_a_sink_that_takes_batches_gets_them_whole_and_others_get_rows():
    def build(p):
        batches = p.read_from(Sources.items(ROWS)).map_batches(times_ten)
        batches.write_to(_BatchListSink("batches", Sinks.list("batches").supplier, 1))

    results = _run(build)
    assert all(isinstance(item, pa.RecordBatch) for item in results["batches"])
    rows = [row for batch in results["batches"] for row in zip(*batch.to_pydict().values())]
    assert Counter(rows) == Counter((key, value * 10) for key, value in ROWS)


def test_each_map_batches_in_a_chain_gives_its_own_row_type():
    results = _run(lambda p: p.read_from(Sources.items(ROWS)).map_batches(times_ten, as_dicts=True)
                   .map(lambda row: {"key": row["key"], "next": row["value"] + 1})
                   .map_batches(lambda batch: batch.select(["next"]))
                   .write_to(Sinks.list()))
    assert Counter(results["default"]) == Counter((value * 10 + 1,) for _, value in ROWS)


def test_rows_that_make_no_batch_fail_the_job_naming_the_stage():
    p = Pipeline.create()
    p.read_from(Sources.items([(1, "a"), (2, "b", "extra")])).map_batches(times_ten).write_to(Sinks.list())
    with pytest.raises(JobFailedError) as failure:
        execute(p.to_dag(1), timeout=30)
    assert ("stage 'map-batches' (map_batches): its input rows could not be made into a RecordBatch"
            in failure.value.traceback_text)
    assert "(2, 'b', 'extra')" in failure.value.traceback_text
