"""Sources: where a pipeline's items come from."""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from typing import Any, Callable

from jet.connectors.file_sources import CsvSourceP, LinesSourceP, matching_files, parse_json_lines
from jet.connectors.stream_sources import FileWatcherP, ItemStreamP, SocketSourceP, check_directory
from jet.core.event_time import EventTimePolicy
from jet.core.processor import Processor
from jet.core.processors import items_source_p
from jet.pipeline.source_sink import Source, StreamSource


class Sources:
    """Factories of sources for ``Pipeline.read_from``: batch sources and stream sources."""

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
    def postgres(dsn: str, query: str, partition_column: str | None = None, *, as_tuples: bool = False,
                 fetch_rows: int = 1024, statement_timeout_ms: int = 60_000, name: str | None = None) -> Source:
        """The rows of a PostgreSQL ``query`` as dicts (tuples with ``as_tuples=True``), read
        through a server-side cursor ``fetch_rows`` at a time. With ``partition_column`` (an
        integer, numeric, date or timestamp column of the query) every source processor of the
        cluster reads one range of its values; without it one processor reads everything.
        ``dsn`` is a libpq connection string or URL. See docs/postgres.md."""
        from jet.connectors.postgres.factories import postgres_source
        return postgres_source(dsn, query, partition_column, as_tuples=as_tuples, fetch_rows=fetch_rows,
                               statement_timeout_ms=statement_timeout_ms, name=name)

    # -- streams ------------------------------------------------------------------------------
    @staticmethod
    def item_stream(items_per_second: int, generator_fn: Callable[[int, int], Any] | None = None,
                    name: str = "item-stream") -> StreamSource:
        """Jet's test stream: ``items_per_second`` events in total, split over every source
        processor of the cluster, each ``SimpleEvent(timestamp, sequence)`` (or
        ``generator_fn(timestamp, sequence)``) stamped with the time it is due (epoch ms), so
        a source that falls behind shows as latency. Use ``with_native_timestamps(lag)``."""
        if not isinstance(items_per_second, int) or isinstance(items_per_second, bool) or items_per_second < 1:
            raise ValueError(f"Sources.item_stream: items_per_second must be an int >= 1, got {items_per_second!r}")
        if generator_fn is not None and not callable(generator_fn):
            raise TypeError(f"Sources.item_stream: generator_fn must be callable(timestamp, sequence), "
                            f"got {generator_fn!r}")

        def policy_supplier(policy: EventTimePolicy | None) -> Callable[[], Processor]:
            return lambda: ItemStreamP(items_per_second, generator_fn, policy)

        return StreamSource(name, policy_supplier(None), 1, policy_supplier=policy_supplier,
                            native_timestamps=True)

    @staticmethod
    def socket(host: str, port: int, encoding: str = "utf-8") -> StreamSource:
        """The text lines (without terminators) a TCP server at ``host:port`` sends; one
        processor in the cluster connects, and the source ends when the server closes."""
        if not isinstance(host, str) or not host:
            raise ValueError(f"Sources.socket: host must be a non-empty str, got {host!r}")
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise ValueError(f"Sources.socket: port must be an int in 1..65535, got {port!r}")
        _check_encoding(encoding, "Sources.socket")
        return StreamSource(f"socket({host}:{port})", lambda: SocketSourceP(host, port, encoding), 1)

    @staticmethod
    def file_watcher(directory: str, pattern: str = "*", encoding: str = "utf-8", *,
                     shared: bool = True) -> StreamSource:
        """Lines appended, after the job started, to the files of ``directory`` whose names match
        ``pattern``, and lines of files created there (content present at the start is skipped).

        ``shared=True`` (default): every member sees the same directory (one machine, a shared
        volume) and each file is read by one processor of the cluster. ``shared=False``: each
        member watches its own local directory and emits every line found there (Jet's way)."""
        if not isinstance(directory, str) or not directory:
            raise ValueError(f"Sources.file_watcher: directory must be a non-empty str, got {directory!r}")
        _check_encoding(encoding, "Sources.file_watcher")
        return StreamSource(f"file_watcher({directory})",
                            lambda: FileWatcherP(directory, pattern, encoding, shared), 1,
                            lambda: check_directory(directory, "Sources.file_watcher"))

    @staticmethod
    def postgres_cdc(dsn: str, slot: str, publication: str, tables: list[str] | None = None, *,
                     create: bool = False, poll_interval_ms: int = 100, name: str | None = None) -> StreamSource:
        """The row changes of PostgreSQL tables through the logical replication slot ``slot``
        (plugin ``pgoutput``) and ``publication``: one ``ChangeRecord(operation, schema, table,
        before, after, lsn, timestamp, xid)`` per changed row, in commit order, with the commit
        time as native timestamp. ``tables`` filters (and, with ``create=True``, makes the
        publication, created with the slot when missing). One processor in the cluster reads the
        slot; its position is saved in snapshots and the slot advanced only once a snapshot
        holding it completed, so a restored job resumes where that snapshot was. See docs/postgres.md."""
        from jet.connectors.postgres.factories import postgres_cdc_source
        return postgres_cdc_source(dsn, slot, publication, tables, create=create, poll_interval_ms=poll_interval_ms,
                                   name=name)

    @staticmethod
    def spark_stream(format: str, path: str | None = None, *, schema: Any = None, as_dicts: bool = False,
                     available_now: bool = False, checkpoint_location: str | None = None,
                     name: str | None = None, **options: Any) -> StreamSource:
        """A stream of the rows Spark Structured Streaming reads
        (``spark.readStream.format(format).options(**options)[.schema(schema)].load(path)``: files,
        ``rate``, Kafka where Spark has the connector), each micro-batch written into the job
        exactly once per row. Items have no native timestamps: follow with ``with_timestamps``
        or ``with_ingestion_timestamps``. The stream ends when its Spark query does
        (``available_now=True`` reads what is there, then ends). See docs/spark.md."""
        from jet.connectors.spark.streaming_source import spark_stream_source
        return spark_stream_source(format, path, schema=schema, as_dicts=as_dicts, available_now=available_now,
                                   checkpoint_location=checkpoint_location, name=name, **options)

    @staticmethod
    def kafka(topics: str | Iterable[str], bootstrap_servers: str, group_id: str | None = None, *,
              value_fn: Callable[[bytes | None], Any] | None = None, record_fn: Callable[[Any], Any] | None = None,
              metadata_poll_ms: int = 5_000, name: str | None = None, **client_config: Any) -> StreamSource:
        """The records of Kafka ``topics`` (Jet's ``KafkaSources.kafka``); see docs/kafka.md.

        The job decides which source processor reads which partition (not a consumer group),
        and new partitions are found every ``metadata_poll_ms``. Each item is the record's
        value (bytes), ``value_fn(value)``, or ``record_fn(KafkaRecord)`` (key, value, topic,
        partition, offset, timestamp, headers). ``with_native_timestamps(lag)`` uses the
        record timestamps, one watermark per partition. Under a processing guarantee offsets
        are saved in snapshots; otherwise a ``group_id``'s committed offsets are the start,
        else ``auto_offset_reset`` (default earliest). ``client_config``: librdkafka settings,
        ``auto_offset_reset="latest"`` or ``**{"security.protocol": "SASL_SSL", ...}``."""
        from jet.connectors.kafka.factories import kafka_source
        return kafka_source(topics, bootstrap_servers, group_id, value_fn=value_fn, record_fn=record_fn,
                            metadata_poll_ms=metadata_poll_ms, name=name, **client_config)


def _check_encoding(encoding: str, what: str) -> None:
    try:
        codecs.lookup(encoding)
    except (LookupError, TypeError) as error:
        raise ValueError(f"{what}: unknown encoding {encoding!r}") from error
