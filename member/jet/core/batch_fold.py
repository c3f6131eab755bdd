"""Keyed aggregation of whole Arrow batches, when the key is a column getter.

A grouped aggregation whose key is a plain getter of a row (``lambda row: row[0]``,
``lambda row: row["amount"]``, see :func:`jet.core.functions.getter_item`) and whose operations
are sums and counts can fold a ``pyarrow.RecordBatch`` with Arrow's C++ hash aggregation. The
planner then lets a Spark source send its batches whole to the aggregation's first stage.

- A summed value that is a getter too is read as a column: no Python object per row at all.
- A summed value computed by the user's function (``lambda row: row[1] * 1.2``) costs one call
  per row, on the batch's rows; Arrow then groups and sums what it returned, when that is all
  floats or all int64 integers, instead of a Python step per row per operation. Other values
  (booleans, decimals, None, numpy scalars, integers past int64) are added in Python, row by
  row, in the row path's order.

The result is the row path's: the same keys (the Python objects the rows would hold), the same
counts and integer sums; a float sum differs only by the order its values are added in, as it
already does between the processors that fold one key's rows.

A batch whose columns Arrow cannot fold exactly as the rows would be folded goes to the row path,
to the user's own functions (so their errors are theirs), before any of them is called: a column
the getter does not find, a key type Arrow groups differently from Python (floats, where NaN keys
differ; nested and temporal types), a column Python adds differently (float32, decimals,
booleans), nulls among a column's values (the user's function sees None), or integers whose sum
could leave int64.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol, Sequence

from jet.core.columnar import batch_to_rows
from jet.core.functions import getter_item

if TYPE_CHECKING:
    import pyarrow


_MISSING = object()
_INT64_MAX = 2 ** 63 - 1


@dataclass(frozen=True)
class BatchAggregation:
    """What an aggregate operation takes from Arrow to fold a batch.

    ``parts`` holds one (what, function) per figure: ``(column, "sum")`` sums a column,
    ``(value_fn, "sum_of")`` sums ``value_fn(row)`` over the rows, ``(None, "count")`` counts
    rows; a column is what a getter of the row reads (a position for tuple rows, a name for dict
    rows). ``update(acc, figures) -> acc`` adds one key's figures, in the order of ``parts``, to
    its accumulator (a new one or one that already holds rows); a key's figures may be those of
    a single row.
    """

    parts: tuple[tuple[Any, str], ...]
    update: Callable[[Any, Sequence[Any]], Any]


def _add_first(acc: Any, figures: Sequence[Any]) -> Any:
    return acc + figures[0]


def summed_values(value_fn: Callable[[Any], Any]) -> BatchAggregation:
    """The batch aggregation of ``summing(value_fn)``: a column when ``value_fn`` is a getter,
    else ``value_fn`` called on each row."""
    column = getter_item(value_fn)
    return BatchAggregation(((value_fn, "sum_of") if column is None else (column, "sum"),), _add_first)


COUNTED_ROWS = BatchAggregation(((None, "count"),), _add_first)


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


class FoldableOperation(Protocol):
    """What a folder needs of an aggregate operation (:class:`jet.core.aggregate.AggregateOperation`
    is one): how Arrow folds its parts, and a new accumulator."""

    batch_aggregation: BatchAggregation | None
    create: Callable[[], Any]


class KeyedBatchFolder:
    """Folds RecordBatches into ``key -> accumulator`` for a key getter and a batch aggregation;
    :meth:`fold` returns False for a batch it cannot fold exactly (fold its rows instead)."""

    def __init__(self, key_column: int | str, aggregation: BatchAggregation,
                 create: Callable[[], Any], row_type: str = "tuple") -> None:
        self._key_column = key_column
        self._aggregation = aggregation
        self._create = create
        self._row_type = row_type
        self._computed = [index for index, (_, function) in enumerate(aggregation.parts) if function == "sum_of"]
        """The parts whose values a function computes per row."""

    @staticmethod
    def for_operation(key_fn: Callable[[Any], Any], operation: "FoldableOperation",
                      row_type: str) -> "KeyedBatchFolder | None":
        """A folder when ``key_fn`` and the operation's ``batch_aggregation`` read columns the
        way rows of ``row_type`` ("tuple": by position, "dict": by name) are read; else None."""
        aggregation = operation.batch_aggregation
        if aggregation is None:
            return None
        wanted = int if row_type == "tuple" else str if row_type == "dict" else None
        columns = [getter_item(key_fn)] + [column for column, function in aggregation.parts if function == "sum"]
        if wanted is None or any(type(column) is not wanted for column in columns):
            return None
        return KeyedBatchFolder(columns[0], aggregation, operation.create, row_type)

    def fold(self, accumulators: dict, batch: "pyarrow.RecordBatch") -> bool:
        """Fold ``batch`` into ``accumulators``; False (nothing folded, no user function called)
        when the batch has a column Arrow does not fold as the rows would be folded."""
        key = _column(batch, self._key_column)
        if key is None or not _groups_like_python(key.type):
            return False
        parts = self._aggregation.parts
        arrays: list = []
        for column, function in parts:
            values = None
            if function == "sum":
                values = _column(batch, column)
                if values is None or not _sums_like_python(values, batch.num_rows):
                    return False
            arrays.append(values)
        if self._computed:  # from here on the batch is folded: each function is called once per row
            rows = batch_to_rows(batch, self._row_type)
            results = {index: list(map(parts[index][0], rows)) for index in self._computed}
            for index, values in results.items():
                arrays[index] = _exact_array(values)
                if arrays[index] is None:
                    self._fold_row_by_row(accumulators, key, arrays, results)
                    return True
        self._fold_grouped(accumulators, key, arrays)
        return True

    def _fold_grouped(self, accumulators: dict, key: "pyarrow.Array", arrays: list) -> None:
        """Each key's figures from Arrow's hash aggregation, added to its accumulator."""
        import pyarrow as pa
        import pyarrow.compute as pc

        columns, names, aggregations, outputs = [key], ["k"], {}, []
        for values in arrays:
            if values is None:
                aggregations["k_count"] = ("k", "count", pc.CountOptions(mode="all"))
                outputs.append("k_count")
                continue
            name = f"v{len(columns)}"
            columns.append(values)
            names.append(name)
            aggregations[f"{name}_sum"] = (name, "sum")
            outputs.append(f"{name}_sum")
        grouped = (pa.Table.from_arrays(columns, names=names).group_by("k", use_threads=False)
                   .aggregate(list(aggregations.values())))
        keys = grouped.column("k").to_pylist()
        figures = zip(*[grouped.column(output).to_pylist() for output in outputs])
        self._update_all(accumulators, keys, figures)

    def _fold_row_by_row(self, accumulators: dict, key: "pyarrow.Array", arrays: list, results: dict) -> None:
        """Each row's figures added to its key's accumulator in row order, as the row path adds
        them: for values Arrow would not add as Python does."""
        figures = [results[index] if index in results else repeat(1) if values is None else values.to_pylist()
                   for index, values in enumerate(arrays)]
        self._update_all(accumulators, key.to_pylist(), zip(*figures))

    def _update_all(self, accumulators: dict, keys: Iterable[Any], figures: Iterable[Sequence[Any]]) -> None:
        get, create, update = accumulators.get, self._create, self._aggregation.update
        for key_value, key_figures in zip(keys, figures):
            acc = get(key_value, _MISSING)
            accumulators[key_value] = update(create() if acc is _MISSING else acc, key_figures)


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


def _exact_array(values: list) -> "pyarrow.Array | None":
    """``values`` as an Arrow array Arrow sums as Python would: all floats (as float64), or all
    ints within int64 whose sum stays there; None for anything else."""
    import pyarrow as pa

    kinds = set(map(type, values))
    if kinds <= {float}:
        return pa.array(values, type=pa.float64())
    if kinds != {int}:
        return None
    try:
        array = pa.array(values, type=pa.int64())
    except (OverflowError, pa.ArrowInvalid):
        return None
    return array if _sums_like_python(array, len(values)) else None


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
