"""Columnar items: a ``pyarrow.RecordBatch`` travelling as one item through queues and edges.

A columnar item stands for its rows. Stages that work on whole batches (``map_batches``, the
Spark source and sink) pass batches on as they are; row stages see the rows, converted here
with C-level column conversions rather than a Python call per cell.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import pyarrow

ROW_TYPES = ("tuple", "dict")
_prefetching = threading.Lock()
_prefetched = False


def prefetch_arrow() -> None:
    """Load what building Arrow arrays needs, in the background, once per process.

    pyarrow's first ``pyarrow.array`` imports pandas when it is installed (to tell pandas objects
    apart), 0.17-0.19 s that a Spark sink's member paid building its first batch, at the very
    end of its first job. A Spark vertex calls this as it starts, while Spark plans its tasks."""
    global _prefetched
    with _prefetching:
        if _prefetched:
            return
        _prefetched = True
    threading.Thread(target=_first_arrow_array, name="jet-arrow-prefetch", daemon=True).start()


def _first_arrow_array() -> None:
    try:
        import pyarrow

        pyarrow.array([0])
    except Exception:  # noqa: BLE001 - a head start only: the job's own first call reports any error
        pass


def is_batch_type(kind: type) -> bool:
    """True for ``pyarrow.RecordBatch``; cheap, and imports nothing."""
    return kind.__name__ == "RecordBatch" and kind.__module__.startswith("pyarrow")


def is_batch(item: Any) -> bool:
    """True when ``item`` is a ``pyarrow.RecordBatch``; cheap, and imports nothing."""
    return is_batch_type(type(item))


def batch_to_rows(batch: "pyarrow.RecordBatch", row_type: str = "tuple") -> list:
    """The rows of ``batch`` as a list of tuples (``row_type="tuple"``) or of dicts keyed by
    column name (``row_type="dict"``), in row order."""
    if row_type == "tuple":
        if batch.num_columns == 0:
            return [()] * batch.num_rows
        return list(zip(*[column.to_pylist() for column in batch.columns]))
    if row_type == "dict":
        return batch.to_pylist()
    raise ValueError(f"row_type must be one of {ROW_TYPES}, got {row_type!r}")


def tuple_column_names(width: int) -> list[str]:
    """The column names given to tuple rows without a schema: ``_1`` .. ``_n`` as in Spark."""
    return [f"_{position}" for position in range(1, width + 1)]


def rows_to_batch(rows: Sequence[Any], schema: "pyarrow.Schema | None" = None) -> "pyarrow.RecordBatch":
    """One ``RecordBatch`` holding ``rows``: dicts (columns by key) or tuples/lists (columns
    by position, named by ``schema`` or else ``_1`` .. ``_n``).

    With ``schema`` the columns are converted to its types; without it pyarrow infers them.
    All rows must be of one kind and tuple rows of one width.
    """
    import pyarrow as pa

    if not rows:
        if schema is None:
            return pa.RecordBatch.from_pylist([])
        return pa.RecordBatch.from_arrays([pa.array([], type=field.type) for field in schema],
                                          schema=schema)
    first = rows[0]
    if isinstance(first, dict):
        return pa.RecordBatch.from_pylist(list(rows), schema=schema)
    if not isinstance(first, (tuple, list)):
        raise TypeError(f"rows_to_batch takes dict or tuple rows, got a row of type "
                        f"{type(first).__name__}: {first!r}")
    width = len(first)
    if width == 0:
        raise ValueError("rows_to_batch needs rows with at least one value; got empty tuples")
    for row in rows:
        if not isinstance(row, (tuple, list)) or len(row) != width:
            raise TypeError(f"rows_to_batch needs tuple rows of one width ({width}, like the first "
                            f"row), got {row!r}")
    columns = [list(column) for column in zip(*rows)]
    if schema is not None:
        if len(schema) != width:
            raise ValueError(f"the schema has {len(schema)} fields ({schema.names}) but the rows "
                             f"have {width} values")
        arrays = [pa.array(column, type=field.type) for column, field in zip(columns, schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
    return pa.RecordBatch.from_arrays([pa.array(column) for column in columns],
                                      names=tuple_column_names(width))
