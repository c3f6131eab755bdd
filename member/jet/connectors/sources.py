"""Sources: where a pipeline's items come from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jet.connectors.base import Source
from jet.connectors.file_sources import CsvSourceP, LinesSourceP, matching_files, parse_json_lines
from jet.core.processors import items_source_p


class Sources:
    """Factories of batch sources for ``Pipeline.read_from``."""

    @staticmethod
    def items(items: Iterable[Any], name: str = "items") -> Source:
        """The given items, split across every source processor of the cluster (each once)."""
        if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
            raise TypeError(f"Sources.items needs an iterable of items, got {type(items).__name__}")
        return Source(name, items_source_p(list(items)), 1)

    @staticmethod
    def files(pattern: str, encoding: str = "utf-8") -> Source:
        """The lines of the files matching the glob ``pattern`` (without line terminators).

        Files and their byte ranges are split across all source processors of the cluster, so
        every member reads a different slice. The files must be readable on every member.
        """
        return Source(f"files({pattern})", lambda: LinesSourceP(pattern, "Sources.files", None, encoding),
                      1, lambda: matching_files(pattern, "Sources.files") and None)

    @staticmethod
    def jsonl(pattern: str, encoding: str = "utf-8") -> Source:
        """One parsed JSON value per non-blank line of the matching files (split like files)."""
        return Source(f"jsonl({pattern})",
                      lambda: LinesSourceP(pattern, "Sources.jsonl", parse_json_lines, encoding),
                      1, lambda: matching_files(pattern, "Sources.jsonl") and None)

    @staticmethod
    def csv(pattern: str, encoding: str = "utf-8") -> Source:
        """One dict per row (keyed by the header row) of the matching CSV files, split by file."""
        return Source(f"csv({pattern})", lambda: CsvSourceP(pattern, encoding), 1,
                      lambda: matching_files(pattern, "Sources.csv") and None)

    @staticmethod
    def spark(format: str, path: str | None = None, options: dict[str, str] | None = None,
              schema: Any = None, *, as_dicts: bool = False) -> Source:
        """Rows Spark reads (``spark.read.format(format).options(options).load(path)``) as
        tuples, or dicts with ``as_dicts=True``; the Spark side runs in ``jet spark-source``
        (started for you by the local runner). See docs/spark.md."""
        from jet.connectors.spark.stages import spark_source
        return spark_source(format, path, options, schema, as_dicts=as_dicts)

    @staticmethod
    def spark_query(fn: Any, *, as_dicts: bool = False, name: str | None = None) -> Source:
        """The rows of the DataFrame ``fn(spark)`` builds from a SparkSession (filters, joins,
        SQL); ``fn`` must be picklable by cloudpickle. See docs/spark.md."""
        from jet.connectors.spark.stages import spark_query
        return spark_query(fn, as_dicts=as_dicts, name=name)

    @staticmethod
    def spark_stream(format: str, path: str | None = None, *, schema: Any = None, as_dicts: bool = False,
                     available_now: bool = False, checkpoint_location: str | None = None,
                     name: str | None = None, **options: Any) -> Any:
        """A stream of the rows Spark Structured Streaming reads
        (``spark.readStream.format(format).options(**options)[.schema(schema)].load(path)``: files,
        ``rate``, Kafka where Spark has the connector), each micro-batch written into the job
        exactly once per row. Items have no native timestamps: follow with ``with_timestamps``
        or ``with_ingestion_timestamps``. The stream ends when its Spark query does
        (``available_now=True`` reads what is there, then ends). See docs/spark.md."""
        from jet.connectors.spark.streaming_source import spark_stream_source
        return spark_stream_source(format, path, schema=schema, as_dicts=as_dicts, available_now=available_now,
                                   checkpoint_location=checkpoint_location, name=name, **options)
