"""Job items -> Arrow record batches, for the ``jet`` Spark format's Arrow wire format.

A Spark sink turns the job's items into batches of the schema the Spark reader asked for
(:func:`items_to_batches`), in one C pass over the rows where it can (``pa.array`` of a struct
type); a column of zoned timestamps takes a Python step per value, as PySpark's does. (A Spark
source turns batches into items with ``jet.core.columnar.batch_to_rows``.) Imports pyarrow
only when called, never PySpark (members need not have it loaded).
"""

from __future__ import annotations

import datetime
from typing import Any, Callable

from jet.core.columnar import is_batch, is_batch_type


class ItemSchemaError(ValueError):
    """An item of a Spark sink does not fit the schema the Spark reader asked for."""


def count_rows(items: list) -> int:
    """How many rows ``items`` holds: a record batch counts its rows, anything else one."""
    if not any(map(is_batch_type, set(map(type, items)))):
        return len(items)
    return sum(item.num_rows if is_batch(item) else 1 for item in items)


def item_to_row_fn(names: list[str]) -> Callable[[Any], tuple]:
    """Item -> row tuple for a schema with these column names (tuple/list by position, dict by
    name, a scalar as a one-column row)."""
    width = len(names)

    def to_row(item: Any) -> tuple:
        if type(item) is tuple and len(item) == width:
            return item
        if isinstance(item, dict):
            return tuple(item.get(name) for name in names)
        if isinstance(item, (tuple, list)):
            return tuple(item)
        return (item,)

    return to_row


def describe_arrow_schema(schema: Any) -> str:
    """``name: type, ...`` of an Arrow schema, on one line."""
    return ", ".join(f"{field.name}: {field.type}" for field in schema)


def items_to_batches(items: list, schema: Any) -> list:
    """The job's items as ``pyarrow.RecordBatch``es of ``schema``, in order: record batch items
    as they are (cast if need be), the others (tuples by position, dicts by name, scalars as
    one column) into one batch per run. :class:`ItemSchemaError` names the column, its type
    and the first value that does not fit."""
    if not any(map(is_batch_type, set(map(type, items)))):
        return [_rows_to_batch(items, schema)]
    batches, run = [], []
    for item in items:
        if is_batch(item):
            if run:
                batches.append(_rows_to_batch(run, schema))
                run = []
            batches.append(fit_batch(item, schema))
        else:
            run.append(item)
    if run:
        batches.append(_rows_to_batch(run, schema))
    return batches


def _rows_to_batch(items: list, schema: Any) -> Any:
    import pyarrow as pa

    width = len(schema)
    kinds = set(map(type, items))
    if (kinds == {dict} or (kinds == {tuple} and set(map(len, items)) == {width})) and not _has_zoned_timestamps(schema):
        try:  # one C-level pass over the rows (much faster than transposing them in Python)
            return pa.RecordBatch.from_struct_array(pa.array(items, type=pa.struct(list(schema))))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            pass  # the column-wise conversion below names the value that does not fit
    to_row = item_to_row_fn(schema.names)
    rows = [item if type(item) is tuple and len(item) == width else to_row(item) for item in items]
    for row in rows:
        if len(row) != width:
            raise ItemSchemaError(f"item {row!r} has {len(row)} values but the Spark schema has {width} "
                                  f"columns ({describe_arrow_schema(schema)})")
    columns = list(zip(*rows)) if rows else [() for _ in range(width)]
    arrays = [_column(list(values), field) for values, field in zip(columns, schema)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _has_zoned_timestamps(schema: Any) -> bool:
    """Whether a column is a timestamp with a zone (whose naive values need a Python step)."""
    import pyarrow as pa

    return any(pa.types.is_timestamp(field.type) and field.type.tz is not None for field in schema)


def fit_batch(batch: Any, schema: Any) -> Any:
    """``batch`` as ``schema`` says (columns by name, cast when the types differ)."""
    if batch.schema.equals(schema):
        return batch
    import pyarrow as pa

    missing = [name for name in schema.names if name not in batch.schema.names]
    if missing:
        raise ItemSchemaError(f"a record batch of the job ({describe_arrow_schema(batch.schema)}) has no "
                              f"column {missing[0]!r} of the Spark schema ({describe_arrow_schema(schema)})")
    arrays = []
    for field in schema:
        column = batch.column(field.name)
        try:
            arrays.append(column if column.type == field.type else column.cast(field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
            raise ItemSchemaError(f"column {field.name!r} of a record batch of the job is "
                                  f"{column.type}, which does not cast to the Spark type {field.type}: "
                                  f"{error}") from None
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _column(values: list, field: Any) -> Any:
    import pyarrow as pa

    if pa.types.is_timestamp(field.type) and field.type.tz is not None:
        # as PySpark does: a naive datetime is local time
        values = [v.astimezone(datetime.timezone.utc) if isinstance(v, datetime.datetime) and v.tzinfo is None
                  else v for v in values]
    try:
        return pa.array(values, type=field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        pass
    for value in values:  # find the first value that does not fit, for the message
        try:
            pa.array([value], type=field.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as error:
            raise ItemSchemaError(f"column {field.name!r} of the Spark schema is {field.type}, but an item has "
                                  f"{value!r} ({type(value).__name__}) there: {error}") from None
    raise ItemSchemaError(f"column {field.name!r} ({field.type}): the job's values do not convert")
