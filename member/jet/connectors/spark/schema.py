"""A Spark schema inferred from a sink's first items (rows become Arrow batches in ``arrow_items``)."""

from __future__ import annotations

import datetime
import decimal
from typing import Any, Callable, Iterable

from pyspark.sql import types as T


class SchemaInferenceError(ValueError):
    """No schema can be inferred from the items (none, or a value of an unsupported type)."""


_TYPES: list[tuple[type, Callable[[], T.DataType]]] = [
    (bool, T.BooleanType), (int, T.LongType), (float, T.DoubleType), (str, T.StringType),
    (bytes, T.BinaryType), (decimal.Decimal, lambda: T.DecimalType(38, 18)),
    (datetime.datetime, T.TimestampType), (datetime.date, T.DateType),
]


def _spark_type(value: Any, where: str) -> T.DataType:
    for python_type, spark_type in _TYPES:
        if isinstance(value, python_type):
            return spark_type()
    if isinstance(value, (list, tuple)) and value:
        return T.ArrayType(_spark_type(value[0], where))
    raise SchemaInferenceError(f"cannot infer a Spark type for {where} = {value!r} "
                               f"({type(value).__name__}); give the sink an explicit schema")


def infer_schema(items: Iterable[Any]) -> T.StructType:
    """A StructType from sample items: a dict's keys name the columns, a named tuple's fields
    (``KeyedWindowResult``: start, end, key, result, is_early) too, a tuple's columns are
    ``_1, _2, ...`` (as Spark names them), anything else is one column ``value``. A column's
    type is that of its first non-None value (StringType when all are None)."""
    items = list(items)
    if not items:
        raise SchemaInferenceError("the job's Spark sink produced no items to infer a schema from; "
                                   "give Sinks.spark(..., schema=...) or spark.read.schema(...)")
    first = items[0]
    if isinstance(first, dict):
        names = list(first)
        columns = [[item.get(name) for item in items if isinstance(item, dict)] for name in names]
    elif isinstance(first, tuple):
        names = list(getattr(first, "_fields", ())) or [f"_{i + 1}" for i in range(len(first))]
        columns = [[item[i] for item in items if isinstance(item, tuple) and len(item) > i]
                   for i in range(len(first))]
    else:
        names, columns = ["value"], [items]
    fields = []
    for name, values in zip(names, columns):
        value = next((v for v in values if v is not None), None)
        data_type = T.StringType() if value is None else _spark_type(value, f"column {name!r}")
        fields.append(T.StructField(str(name), data_type, True))
    return T.StructType(fields)

