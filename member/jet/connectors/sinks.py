"""Sinks: where a pipeline's results go."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from jet.connectors.file_sinks import FileSinkP, prepare_directory, to_json
from jet.connectors.observable import DEFAULT_OBSERVABLE_CAPACITY, ObservableSinkSupplier, check_observable_args
from jet.core.inbox import Inbox
from jet.core.processor import Processor
from jet.core.processors import logger_sink_p, noop_p
from jet.pipeline.source_sink import Sink


class ListResultSinkP(Processor):
    """Adds every item to the job's named result list, which goes back to the submitter."""

    def __init__(self, name: str) -> None:
        self._name = name

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self.context.results.setdefault(self._name, []).extend(inbox.take_chunk())

    def complete(self) -> bool:
        self.context.results.setdefault(self._name, [])
        return True


class Sinks:
    """Factories of sinks for ``stage.write_to``."""

    @staticmethod
    def list(name: str = "default") -> Sink:
        """Collect the items and return them to the caller: ``job.result(name)``."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"Sinks.list needs a non-empty name, got {name!r}")
        return Sink(f"list({name})", lambda: ListResultSinkP(name), 1)

    @staticmethod
    def files(directory: str, format_fn: Callable[[Any], str] = str, max_file_bytes: int | None = None) -> Sink:
        """One text file per sink processor in ``directory``, one ``format_fn(item)`` per line.

        On a stream the files are flushed every second; with ``max_file_bytes`` each processor
        rolls over to a new file (``part-<index>-<sequence>``) when the next line would not fit.

        Under an exactly-once job the sink is exactly-once: a processor writes
        ``.part-<index>-<sequence>.tmp`` (a dot-prefixed name that ``*``, ``part-*`` and Spark's
        file listing skip) and renames it to ``part-<index>-<sequence>`` once the snapshot that
        covers it has completed, so readers see whole files, each item exactly once, and a
        name is never used twice across restarts. Under at-least-once it writes directly,
        flushes at every snapshot and, after a restart, appends (items may repeat)."""
        _check_max_file_bytes(max_file_bytes, "Sinks.files")
        return Sink(f"files({directory})", lambda: FileSinkP(directory, format_fn, "", max_file_bytes), 1,
                    lambda: prepare_directory(directory, "Sinks.files"))

    @staticmethod
    def jsonl(directory: str, max_file_bytes: int | None = None) -> Sink:
        """One JSON-lines file per sink processor in ``directory`` (tuples as JSON arrays); flushed,
        rolled and exactly-once as :meth:`files` (in-progress files are ``.part-...jsonl.tmp``,
        which ``*.jsonl`` does not match)."""
        _check_max_file_bytes(max_file_bytes, "Sinks.jsonl")
        return Sink(f"jsonl({directory})", lambda: FileSinkP(directory, to_json, ".jsonl", max_file_bytes), 1,
                    lambda: prepare_directory(directory, "Sinks.jsonl"))

    @staticmethod
    def observable(name: str, capacity: int = DEFAULT_OBSERVABLE_CAPACITY) -> Sink:
        """Results a client follows as they come: ``for item in job.observable(name)``.

        Member 0 keeps the newest ``capacity`` items; a reader further behind loses the oldest
        (with a warning). Needs a cluster (``jet.local_cluster`` or ``jet.connect``). It cannot
        be exactly-once: a reader has seen what a restarted job emits again, so after a restart
        items may repeat (at-least-once at best)."""
        check_observable_args(name, capacity)
        return Sink(f"observable({name})", ObservableSinkSupplier(name, capacity), 1)

    @staticmethod
    def logger(format_fn: Callable[[Any], str] = str) -> Sink:
        """Log every item at INFO on the member where it arrives. A log line cannot be taken
        back, so after a restart items may be logged again: never exactly-once."""
        return Sink("logger", logger_sink_p(format_fn), 1)

    @staticmethod
    def noop() -> Sink:
        """Discard every item."""
        return Sink("noop", noop_p(), 1)

    @staticmethod
    def postgres(dsn: str, table: str, columns: Sequence[str] | None = None,
                 upsert_key: str | Sequence[str] | None = None, *, batch_rows: int = 1000,
                 exactly_once: bool = True, local_parallelism: int = 1, name: str | None = None) -> Sink:
        """Write items (dicts by column name, or tuples in column order) into a PostgreSQL table,
        ``batch_rows`` at a time: ``COPY`` for inserts, ``INSERT ... ON CONFLICT (upsert_key) DO
        UPDATE`` with an ``upsert_key``. ``columns`` defaults to all of the table's.

        Under an exactly-once job (unless ``exactly_once=False``) it is exactly-once through
        two-phase commit: each processor writes in a transaction that phase 1 of a snapshot
        ``PREPARE``s (the server needs ``max_prepared_transactions`` > 0) and phase 2 commits,
        so rows appear once per snapshot. Otherwise it commits at every snapshot and at the end
        (at-least-once: use an upsert to make repeats harmless). See docs/postgres.md."""
        from jet.connectors.postgres.factories import postgres_sink
        return postgres_sink(dsn, table, columns, upsert_key, batch_rows=batch_rows, exactly_once=exactly_once,
                             local_parallelism=local_parallelism, name=name)

    @staticmethod
    def spark(format: str, path: str | None, mode: str = "errorifexists",
              options: dict[str, str] | None = None, partition_by: Sequence[str] | None = None,
              schema: Any = None) -> Sink:
        """Spark writes the items (``df.write.format(format).mode(mode).save(path)``): tuples map
        to columns by position, dicts by name, under ``schema`` or one inferred from the first
        items. The Spark side runs in ``jet spark-sink``. See docs/spark.md."""
        from jet.connectors.spark.stages import spark_sink
        return spark_sink(format, path, mode, options, partition_by, schema)

    @staticmethod
    def spark_stream(format: str, path: str | None = None, checkpoint_location: str | None = None, *,
                     output_mode: str = "append", partition_by: Sequence[str] | None = None,
                     schema: Any = None, trigger_interval_ms: int | None = None, **options: Any) -> Sink:
        """Spark Structured Streaming reads the items as a stream and writes them with any Spark
        streaming sink (``writeStream.format(format).outputMode(output_mode)
        .option("checkpointLocation", checkpoint_location).start(path)``); rows as for
        :meth:`spark`. The Spark side runs in ``jet spark-sink``. See docs/spark.md."""
        from jet.connectors.spark.streaming_sink import spark_stream_sink
        return spark_stream_sink(format, path, checkpoint_location, output_mode=output_mode,
                                 partition_by=partition_by, schema=schema,
                                 trigger_interval_ms=trigger_interval_ms, **options)

    @staticmethod
    def kafka(topic: str, bootstrap_servers: str, key_fn: Callable[[Any], Any] | None = None,
              value_fn: Callable[[Any], Any] | None = None, exactly_once: bool | None = None, *,
              name: str | None = None, **client_config: Any) -> Sink:
        """Write each item as a record of ``topic`` (Jet's ``KafkaSinks.kafka``); see docs/kafka.md.

        ``value_fn(item)`` / ``key_fn(item)`` give bytes or str (default value: bytes and str as
        they are, anything else as JSON; default key: none). Under an exactly-once job the sink
        writes in Kafka transactions committed with the snapshots (``exactly_once=False`` makes
        it at-least-once); otherwise an idempotent producer flushed at every snapshot."""
        from jet.connectors.kafka.factories import kafka_sink
        return kafka_sink(topic, bootstrap_servers, key_fn, value_fn, exactly_once, name=name, **client_config)


def _check_max_file_bytes(value: int | None, what: str) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"{what}: max_file_bytes must be None (no rolling) or an int >= 1, got {value!r}")
