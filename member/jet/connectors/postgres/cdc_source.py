"""``Sources.postgres_cdc``: the row changes of a logical replication slot, as change records.

One processor in the cluster (global index 0) polls the slot (:mod:`.replication_slot`) and
emits one :class:`ChangeRecord` per changed row, whole transactions in commit order, each
stamped with its commit time (the native timestamp).

Position: the end LSN of the last transaction emitted. It is saved in every snapshot, and the
slot's confirmed position is advanced to the position a snapshot saved only when that snapshot
has completed (phase 2), so the server keeps every change a restored job may need: a job
restored from a snapshot peeks from the confirmed position again and skips the transactions
that end at or before the saved position. Without snapshots the slot is advanced as soon as
changes are emitted (at-most-once if the job then fails).
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple, Sequence

from jet.connectors.postgres.connection import connect
from jet.connectors.postgres.pgoutput import Begin, Change, Commit, PgOutputDecoder, Truncate
from jet.connectors.postgres.replication_slot import advance, check_slot, ensure_publication, ensure_slot, peek
from jet.connectors.stream_emitter import StreamEmitter, wall_clock_ms
from jet.connectors.stream_sources import _EmitterSourceP, is_single_instance
from jet.core.event_time import EventTimePolicy
from jet.core.outbox import Outbox
from jet.core.processor import Context

DEFAULT_POLL_INTERVAL_MS = 100
"""Pause between two peeks that found nothing new."""
PEEK_MESSAGES = 5_000
"""New messages asked for per peek (whole transactions: a peek may return more)."""
_ROW_CHANGES = (b"I", b"U", b"D", b"T")
"""pgoutput's message types of row changes (insert, update, delete, truncate)."""


class ChangeRecord(NamedTuple):
    """One changed row. ``before`` is the old row for updates and deletes (only the replica
    identity's columns unless the table has ``REPLICA IDENTITY FULL``; None for an update that
    changed no key then); ``after`` the new row of inserts and updates. ``lsn`` is the commit
    LSN of the transaction, ``timestamp`` its commit time (epoch ms)."""

    operation: str
    schema: str
    table: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    lsn: int
    timestamp: int
    xid: int


class PostgresCdcP(_EmitterSourceP):
    """Polls a replication slot and emits its changes (see the module docstring)."""

    is_cooperative = False

    def __init__(self, dsn: str, slot: str, publication: str, tables: Sequence[str] | None, create: bool,
                 policy: EventTimePolicy | None, poll_interval_ms: int) -> None:
        self._dsn, self._slot, self._publication = dsn, slot, publication
        self._tables, self._create = tables, create
        self._policy, self._poll_interval_s = policy, poll_interval_ms / 1000
        self._connection: Any = None
        self._position = 0
        """End LSN of the last transaction emitted: transactions ending at or before it are skipped."""
        self._snapshot_position: int | None = None
        """The position the snapshot in progress saved, advanced to in its phase 2."""
        self._known_messages = 0
        """Messages of the last peek up to the position: the next peek asks for this many more."""
        self._next_poll = 0.0
        self._more_pending = False
        self._active = False

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._active = is_single_instance(context)
        # The others have no source partition, so their event-time mapper reports them idle at once.
        self._emitter = StreamEmitter(self._policy, partitions=1 if self._active else 0)
        if not self._active:
            return
        self._connection = connect(self._dsn, "Sources.postgres_cdc", autocommit=True,
                                   application_name=f"jet {context.vertex_name} cdc")
        if self._create:
            ensure_publication(self._connection, self._dsn, self._publication, self._tables)
            ensure_slot(self._connection, self._dsn, self._slot)
        self._position = check_slot(self._connection, self._dsn, self._slot, self._publication)
        self._decoder = PgOutputDecoder(_loader(self._connection))
        self._wanted = None if self._tables is None else {_qualified(t) for t in self._tables}

    def complete(self) -> bool:
        emitter = self._emitter
        if not emitter.flush(self.outbox):
            return False
        if not self._active:
            # Not the reading processor: idle (so it holds no watermark back) but alive until the
            # job ends, since a member whose processors all completed could take no more snapshots.
            emitter.idle(wall_clock_ms())
            emitter.flush(self.outbox)
            time.sleep(self._poll_interval_s)
            return False
        wait_s = self._next_poll - time.monotonic()
        if wait_s > 0:
            time.sleep(wait_s)
        records = self._poll()
        now_ms = wall_clock_ms() if emitter.timestamped else 0
        if records:
            emitter.add(records, 0, now_ms, [record.timestamp for record in records] if emitter.timestamped else None)
            if not self.context.snapshots_enabled:
                advance(self._connection, self._dsn, self._slot, self._position)
        else:
            if not self._more_pending:
                self._next_poll = time.monotonic() + self._poll_interval_s
            emitter.idle(now_ms)
        emitter.flush(self.outbox)
        return False

    def _poll(self) -> list[ChangeRecord]:
        """The changes of the transactions after the position that the next peek returns."""
        limit = self._known_messages + PEEK_MESSAGES
        messages = peek(self._connection, self._dsn, self._slot, self._publication, limit)
        self._more_pending = len(messages) >= limit  # a backlog: peek again at once
        records: list[ChangeRecord] = []
        pending: list[ChangeRecord] = []
        begin: Begin | None = None
        known = 0
        for number, message in enumerate(messages, 1):
            if begin is not None and begin.final_lsn < self._position and message[:1] in _ROW_CHANGES:
                continue  # a transaction emitted before: its relations are still decoded, its rows not
            event = self._decoder.decode(message)
            if type(event) is Begin:
                begin, pending = event, []
            elif type(event) is Commit:
                if event.end_lsn > self._position:
                    records.extend(pending)
                    self._position = event.end_lsn
                known, begin, pending = number, None, []
            elif begin is not None and type(event) in (Change, Truncate):
                pending.extend(self._records(event, begin))
        self._known_messages = known
        return records

    def _records(self, event: Change | Truncate, begin: Begin) -> list[ChangeRecord]:
        relations = event.relations if type(event) is Truncate else [event.relation]
        records = []
        for relation in relations:
            if self._wanted is not None and (relation.schema, relation.name) not in self._wanted:
                continue
            operation, before, after = ("truncate", None, None) if type(event) is Truncate else \
                (event.operation, event.before, event.after)
            records.append(ChangeRecord(operation, relation.schema, relation.name, before, after,
                                        begin.final_lsn, begin.commit_time_ms, begin.xid))
        return records

    # -- snapshots: the position, and the slot advanced after the snapshot completes ------------
    def position(self) -> int:
        self._snapshot_position = self._position
        return self._position

    def restore_positions(self, positions: list[int]) -> None:
        if positions and self._active:
            self._position = max(self._position, max(positions))

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success and self._active and self._snapshot_position is not None:
            advance(self._connection, self._dsn, self._slot, self._snapshot_position)
            self._known_messages = 0  # the next peek starts later: count again
        self._snapshot_position = None
        return True

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _qualified(table: str) -> tuple[str, str]:
    schema, _, name = table.rpartition(".")
    return schema or "public", name


def _loader(connection: Any):
    """``load(type_oid, text)``: psycopg's text loader of each type, made once per type."""
    from psycopg.pq import Format
    loaders: dict[int, Any] = {}
    adapters = connection.adapters

    def load(type_oid: int, data: bytes) -> Any:
        loader = loaders.get(type_oid)
        if loader is None:
            loader_class = adapters.get_loader(type_oid, Format.TEXT)
            loader = loaders[type_oid] = loader_class(type_oid, connection) if loader_class else None
        return loader.load(data) if loader is not None else data.decode("utf-8")

    return load
