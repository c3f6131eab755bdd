"""Pipeline stages backed by Spark: what ``Sources.spark``, ``Sources.spark_query`` and
``Sinks.spark`` return.

The descriptors carry, besides the processor supplier of their vertex, the Spark side's recipe
(:class:`SparkReadSpec`, :class:`SparkWriteSpec`), which ``jet spark-source``/``jet spark-sink``
(or the local runner) execute in a SparkSession. Nothing here imports PySpark, so members
without it can run the job's vertices.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlparse

from jet.connectors.spark.processors import DEFAULT_SINK_BUFFER_ITEMS, SparkSinkP, SparkSourceP
from jet.pipeline.source_sink import Sink, Source

SAVE_MODES = ("errorifexists", "error", "append", "overwrite", "ignore")
#: Spark formats whose path names files; other formats' paths may name tables or topics.
FILE_FORMATS = ("text", "csv", "json", "parquet", "orc", "avro", "binaryfile", "xml")


@dataclass(frozen=True)
class SparkReadSpec:
    """How the Spark side builds the DataFrame of a Spark source."""

    format: str | None = None
    path: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    schema: Any = None
    query: Callable[[Any], Any] | None = None
    row_type: str = "tuple"

    def build(self, spark: Any) -> Any:
        """The DataFrame to write into the job."""
        if self.query is not None:
            frame = self.query(spark)
            if not hasattr(frame, "write"):
                raise TypeError(f"Sources.spark_query: the function returned {type(frame).__name__}, "
                                f"expected a pyspark DataFrame")
            return frame
        reader = spark.read.format(self.format).options(**self.options)
        if self.schema is not None:
            reader = reader.schema(self.schema)
        return reader.load(self.path) if self.path is not None else reader.load()


@dataclass(frozen=True)
class SparkWriteSpec:
    """How the Spark side writes what the job's Spark sink produces."""

    format: str
    path: str | None
    mode: str = "errorifexists"
    options: dict[str, str] = field(default_factory=dict)
    partition_by: tuple[str, ...] = ()
    schema: Any = None

    def write(self, frame: Any) -> None:
        writer = frame.write.format(self.format).mode(self.mode).options(**self.options)
        if self.partition_by:
            writer = writer.partitionBy(*self.partition_by)
        if self.path is not None:
            writer.save(self.path)
        else:
            writer.save()


@dataclass(frozen=True)
class SparkSourceSupplier:
    """The processor supplier of a Spark source vertex; carries the Spark side's recipe, so the
    drivers find it in a DAG as well as in a Pipeline. With ``columnar`` (set by the planner when
    the source's only consumer takes whole batches: a ``map_batches`` stage, or a grouped
    aggregation that folds them in Arrow) the processors emit RecordBatches."""

    spec: SparkReadSpec
    columnar: bool = False

    @property
    def row_type(self) -> str:
        """What a row is when the batches become rows: "tuple" or "dict" (by column name)."""
        return self.spec.row_type

    def __call__(self) -> SparkSourceP:
        return SparkSourceP(columnar=self.columnar)


@dataclass(frozen=True)
class SparkSinkSupplier:
    """The processor supplier of a Spark sink vertex, with the Spark side's recipe."""

    spec: SparkWriteSpec
    buffer_items: int = DEFAULT_SINK_BUFFER_ITEMS

    def __call__(self) -> SparkSinkP:
        return SparkSinkP(self.buffer_items)


@dataclass(frozen=True)
class SparkSource(Source):
    """A source whose items Spark writes into the job (see :func:`spark_source`)."""

    spec: SparkReadSpec = field(default_factory=SparkReadSpec, compare=False)


@dataclass(frozen=True)
class SparkSink(Sink):
    """A sink whose items Spark reads out of the job (see :func:`spark_sink`)."""

    spec: SparkWriteSpec | None = field(default=None, compare=False)

    #: A ``map_batches`` stage may send its RecordBatch items as they are.
    takes_batches = True


def check_format(format: Any, what: str) -> None:
    if not isinstance(format, str) or not format.strip():
        raise ValueError(f"{what}: format must be a Spark format name such as 'parquet', got {format!r}")


def _options(options: Any, what: str) -> dict[str, str]:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"{what}: options must be a dict of str -> str, got {type(options).__name__}")
    return {str(k): str(v) for k, v in options.items()}


def _row_type(as_dicts: bool) -> str:
    return "dict" if as_dicts else "tuple"


def local_input_path(format: str, path: str | None) -> str | None:
    """The local path a file-format source reads (``file:`` URLs too); None for a remote URL
    (``s3a://``, ``hdfs://``), a non-file format, or a Hadoop glob with braces Python cannot
    expand: Spark alone can check those."""
    if path is None or format.lower() not in FILE_FORMATS or "{" in path:
        return None
    url = urlparse(path)
    if url.scheme == "file":
        return url.path
    return None if len(url.scheme) > 1 else path  # one letter: a Windows drive


def check_local_input(format: str, path: str | None, what: str = "Sources.spark") -> None:
    """Refuse a source whose local input does not exist, as ``Sources.files`` does, before the
    job and its Spark side start."""
    local = local_input_path(format, path)
    if local is None:
        return
    found = glob.glob(local) if glob.has_magic(local) else os.path.exists(local)
    if not found:
        raise FileNotFoundError(f"{what}: no file or directory matches {path!r}"
                                f" (the {format} input; relative to {os.getcwd()})")


def spark_source(format: str, path: str | None = None, options: dict[str, str] | None = None,
                 schema: Any = None, *, as_dicts: bool = False) -> SparkSource:
    """Rows Spark reads with ``spark.read.format(format).options(options).load(path)``; a local
    input of a file format that does not exist is refused when the job is submitted."""
    check_format(format, "Sources.spark")
    spec = SparkReadSpec(format, path, _options(options, "Sources.spark"), schema, None, _row_type(as_dicts))
    name = f"spark-{format}({path})" if path else f"spark-{format}"
    return SparkSource(name, SparkSourceSupplier(spec), 1, spec=spec,
                       preflight=lambda: check_local_input(format, path))


def spark_query(fn: Callable[[Any], Any], *, as_dicts: bool = False, name: str | None = None) -> SparkSource:
    """The rows of the DataFrame ``fn(spark)`` builds (filters, joins, SQL...)."""
    if not callable(fn):
        raise TypeError(f"Sources.spark_query needs a function SparkSession -> DataFrame, got {fn!r}")
    stage_name = name or f"spark-query({getattr(fn, '__name__', 'fn')})"
    spec = SparkReadSpec(query=fn, row_type=_row_type(as_dicts))
    return SparkSource(stage_name, SparkSourceSupplier(spec), 1, spec=spec)


def spark_sink(format: str, path: str | None, mode: str = "errorifexists",
               options: dict[str, str] | None = None, partition_by: list[str] | tuple[str, ...] | None = None,
               schema: Any = None, buffer_items: int = DEFAULT_SINK_BUFFER_ITEMS) -> SparkSink:
    """Items Spark writes with ``df.write.format(format).mode(mode).save(path)``."""
    check_format(format, "Sinks.spark")
    if mode not in SAVE_MODES:
        raise ValueError(f"Sinks.spark: mode must be one of {', '.join(SAVE_MODES)}, got {mode!r}")
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    if buffer_items < 1:
        raise ValueError(f"Sinks.spark: buffer_items must be >= 1, got {buffer_items!r}")
    spec = SparkWriteSpec(format, path, mode, _options(options, "Sinks.spark"), tuple(partition_by or ()), schema)
    name = f"spark-{format}({path})" if path else f"spark-{format}"
    return SparkSink(name, SparkSinkSupplier(spec, buffer_items), 1, spec=spec)
