"""Keyed aggregation of whole Arrow batches, when the key and every value is a column getter.

A grouped aggregation whose key and aggregated values are plain getters of a row
(``lambda row: row[0]``, ``lambda row: row["amount"]``, see :func:`jet.core.functions.getter_item`)
and whose operations are sums and counts can fold a ``pyarrow.RecordBatch`` with Arrow's C++ hash
aggregation, without a Python object per row. The planner then lets a Spark source send its
batches whole to the aggregation's first stage. The result is the row path's: the same keys
(the Python objects the rows would hold), the same counts and integer sums; a float sum differs
only by the order its values are added in, as it already does between the processors that fold
one key's rows.

A batch that Arrow cannot fold exactly as the rows would be folded goes to the row path, to the
user's own functions (so their errors are theirs): a column the getter does not find, a key type
Arrow groups differently from Python (floats, where NaN keys differ; nested and temporal types),
a value type Python adds differently (float32, decimals, booleans), nulls among the values (the
user's function sees None), or integers whose sum could leave int64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from jet.core.functions import getter_item

if TYPE_CHECKING:
    import pyarrow

    from jet.core.aggregate import AggregateOperation

_MISSING = object()
_INT64_MAX = 2 ** 63 - 1


@dataclass(frozen=True)
class BatchAggregation:
    """What an aggregate operation takes from Arrow to fold a batch.

    ``parts`` holds one (column, function) per figure: ``(column, "sum")`` sums a column,
    ``(None, "count")`` counts rows; a column is what a getter of the row reads (a position for
    tuple rows, a name for dict rows). ``update(acc, figures) -> acc`` adds one key's figures, in
    the order of ``parts``, to its accumulator (a new one or one that already holds rows).
    """

    parts: tuple[tuple[int | str | None, str], ...]
    update: Callable[[Any, Sequence[Any]], Any]


def summed_column(value_fn: Callable[[Any], Any]) -> BatchAggregation | None:
    """The batch aggregation of ``summing(value_fn)``: None unless ``value_fn`` is a getter."""
    column = getter_item(value_fn)
    if column is None:
        return None
    return BatchAggregation(((column, "sum"),), lambda acc, figures: acc + figures[0])


COUNTED_ROWS = BatchAggregation(((None, "count"),), lambda acc, figures: acc + figures[0])


def all_of_batches(aggregations: Sequence[BatchAggregation | None]) -> BatchAggregation | None:
    """``all_of``'s batch aggregation when each operation has one: the parts side by side, and
    an update of each operation's share of the (list) accumulator."""
    if not aggregations or any(aggregation is None for aggregation in aggregations):
        return None
    slices, parts, start = [], [], 0
    for aggregation in aggregations:
        parts += aggregation.parts
        slices.append((aggregation.update, start, start + len(aggregation.parts)))
        start += len(aggregation.parts)

    def update(acc: list, figures: Sequence[Any]) -> list:  # a new list: a snapshot may hold the old
        return [share_update(share, figures[begin:end])
                for share, (share_update, begin, end) in zip(acc, slices)]

    return BatchAggregation(tuple(parts), update)


class KeyedBatchFolder:
    """Folds RecordBatches into ``key -> accumulator`` for a key getter and a batch aggregation;
    :meth:`fold` returns False for a batch it cannot fold exactly (fold its rows instead)."""

    def __init__(self, key_column: int | str, aggregation: BatchAggregation,
                 create: Callable[[], Any]) -> None:
        self._key_column = key_column
        self._aggregation = aggregation
        self._create = create

    @staticmethod
    def for_operation(key_fn: Callable[[Any], Any], operation: "AggregateOperation",
                      row_type: str) -> "KeyedBatchFolder | None":
        """A folder when ``key_fn`` and the operation's ``batch_aggregation`` read columns the
        way rows of ``row_type`` ("tuple": by position, "dict": by name) are read; else None."""
        aggregation = operation.batch_aggregation
        if aggregation is None:
            return None
        wanted = int if row_type == "tuple" else str if row_type == "dict" else None
        columns = [getter_item(key_fn)] + [column for column, _ in aggregation.parts if column is not None]
        if wanted is None or any(type(column) is not wanted for column in columns):
            return None
        return KeyedBatchFolder(columns[0], aggregation, operation.create)

    def fold(self, accumulators: dict, batch: "pyarrow.RecordBatch") -> bool:
        """Fold ``batch`` into ``accumulators``; False (and nothing folded) when the batch has
        something Arrow does not fold as the rows would be folded."""
        import pyarrow as pa
        import pyarrow.compute as pc

        key = _column(batch, self._key_column)
        if key is None or not _groups_like_python(key.type):
            return False
        columns, names, aggregations, outputs = [key], ["k"], {}, []
        for column, function in self._aggregation.parts:
            if function == "count":
                aggregations["k_count"] = ("k", "count", pc.CountOptions(mode="all"))
                outputs.append("k_count")
                continue
            values = _column(batch, column)
            if values is None or not _sums_like_python(values, batch.num_rows):
                return False
            name = f"v{len(columns)}"
            columns.append(values)
            names.append(name)
            aggregations[f"{name}_sum"] = (name, "sum")
            outputs.append(f"{name}_sum")
        grouped = (pa.Table.from_arrays(columns, names=names).group_by("k", use_threads=False)
                   .aggregate(list(aggregations.values())))
        keys = grouped.column("k").to_pylist()
        figures = zip(*[grouped.column(output).to_pylist() for output in outputs])
        get, create, update = accumulators.get, self._create, self._aggregation.update
        for key_value, key_figures in zip(keys, figures):
            acc = get(key_value, _MISSING)
            accumulators[key_value] = update(create() if acc is _MISSING else acc, key_figures)
        return True


def _column(batch: "pyarrow.RecordBatch", column: int | str) -> "pyarrow.Array | None":
    """The column a row getter reads: by position (negative from the end, as a tuple does) or by
    a name that only one column has; None when there is no such column."""
    if isinstance(column, int):
        width = batch.num_columns
        if -width <= column < width:
            return batch.column(column % width)
        return None
    index = batch.schema.get_field_index(column)  # -1 for a missing or repeated name
    return batch.column(index) if index >= 0 else None


def _groups_like_python(kind: "pyarrow.DataType") -> bool:
    """Whether Arrow's groups of a key column are Python's groups of its values."""
    import pyarrow.types as t

    return (t.is_integer(kind) or t.is_string(kind) or t.is_large_string(kind)
            or t.is_binary(kind) or t.is_large_binary(kind))


def _sums_like_python(values: "pyarrow.Array", rows: int) -> bool:
    """Whether Arrow's sum of each group of ``values`` is Python's: no nulls (Python would add
    None), doubles, or integers whose sum stays within int64 whatever the grouping."""
    import pyarrow.compute as pc
    import pyarrow.types as t

    if values.null_count:
        return False
    if t.is_float64(values.type):
        return True
    if not t.is_integer(values.type):
        return False
    if rows == 0:
        return True
    extremes = pc.min_max(values)
    largest = max(abs(extremes["min"].as_py()), abs(extremes["max"].as_py()))
    return largest * rows <= _INT64_MAX
