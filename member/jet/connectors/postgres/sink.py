"""``Sinks.postgres``: batched writes into a table, exactly-once through PostgreSQL two-phase commit.

- **Exactly-once** (the job's guarantee is exactly-once, unless ``exactly_once=False``): the
  processor writes into a transaction whose id comes from the shared
  :class:`~jet.connectors.transaction_pool.TransactionPool`
  (``jet-postgres-<job>-<vertex>-<index>-<slot>``); phase 1 of a snapshot prepares it
  (``PREPARE TRANSACTION``) and records the id, phase 2 commits it (``COMMIT PREPARED``), a
  restore commits what the snapshot prepared and rolls back every other id of this processor
  found in ``pg_prepared_xacts``. Rows become visible once per snapshot.
  **A server that goes away** (a restart, a failover): the processor keeps the rows of its open
  transaction; when a statement fails because the connection is lost it reconnects (every
  ``RECONNECT_PAUSE_S`` for up to ``SERVER_OUTAGE_S``), begins the transaction again and writes
  those rows again, then repeats the step. Prepared transactions survive a restart, and
  ``COMMIT PREPARED`` is idempotent. A server away for longer fails the job naming it.
- **At-least-once** (or exactly-once asked off): plain transactions, committed in phase 1 of
  each snapshot, when a batch fills up without snapshots, and at completion. After a restart
  the replayed items are written again, which an upsert makes idempotent.

The processor is not cooperative: every statement waits for the server.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Sequence

from jet.connectors.postgres.connection import (RECONNECT_PAUSE_S, SERVER_OUTAGE_S, PostgresConnectionError,
                                               connect, describe)
from jet.connectors.postgres.prepared_transactions import PreparedTransactions
from jet.connectors.postgres.table_writer import TableWriter
from jet.connectors.transaction_pool import TransactionPool, default_prefix
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.special_items import Watermark
from jet.job_config import ProcessingGuarantee

DEFAULT_BATCH_ROWS = 1000
"""Rows buffered before they are written in one ``COPY`` or one pipelined ``executemany``."""
FLUSH_INTERVAL_S = 1.0
"""Without snapshots, rows older than this are written (and committed) with the next input."""
TXN_TAG = "postgres-txn"

log = logging.getLogger("jet.connectors.postgres")


class PostgresSinkP(Processor):
    """Writes the items it receives into a table (see the module docstring)."""

    is_cooperative = False

    def __init__(self, dsn: str, table: str, columns: Sequence[str] | None, upsert_key: Sequence[str] | None,
                 batch_rows: int, exactly_once: bool) -> None:
        self._dsn, self._table, self._columns, self._upsert_key = dsn, table, columns, upsert_key
        self._batch_rows, self._exactly_once = batch_rows, exactly_once
        self._buffer: list = []
        self._buffered_since = 0.0
        self._data: Any = None
        self._control: Any = None
        self._transactions: PreparedTransactions | None = None
        self._pool: TransactionPool | None = None
        self._restore_only = False  # a pool made only to commit what a restored snapshot prepared
        self._txn_rows: list = []  # rows written into the open two-phase transaction, for a reconnect
        self._closing = False  # no reconnecting: the job is ending

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        two_phase = context.processing_guarantee is ProcessingGuarantee.EXACTLY_ONCE and self._exactly_once
        self._data = self._connect(autocommit=two_phase)
        self._writer = TableWriter(self._data, self._dsn, self._table, self._columns, self._upsert_key)
        if two_phase:
            self._pool = self._new_pool()

    def _connect(self, autocommit: bool, role: str = "") -> Any:
        """A connection named for this processor (and its ``role``) in ``pg_stat_activity``."""
        name = f"jet {self.context.vertex_name}#{self.context.global_index}{role}"
        return connect(self._dsn, "Sinks.postgres", autocommit=autocommit, application_name=name)

    def _new_pool(self) -> TransactionPool:
        self._control = self._connect(autocommit=True, role=" 2pc")
        self._transactions = PreparedTransactions(self._data, self._control, self._dsn, "Sinks.postgres")
        return TransactionPool(_Reconnecting(self), self.context, default_prefix(self.context, "postgres"),
                               tag=TXN_TAG)

    # -- a lost connection -----------------------------------------------------------------------
    def _retried(self, step: str, action):
        """``action()``; after a lost connection, reconnect, restore the open transaction and
        repeat it, for at most ``SERVER_OUTAGE_S``."""
        deadline = time.monotonic() + SERVER_OUTAGE_S
        while True:
            try:
                return action()
            except PostgresConnectionError as error:
                if self._closing:
                    raise
                if time.monotonic() > deadline:  # reconnecting works, the step keeps failing
                    raise PostgresConnectionError(f"Sinks.postgres: {step} still failed on {describe(self._dsn)}"
                                                  f" after {SERVER_OUTAGE_S:g} s of reconnecting: {error}") from None
                log.warning("Sinks.postgres %s: %s lost its connection (%s); reconnecting",
                            self.context.vertex_name, step, error)
                self._reconnect(step, deadline)

    def _reconnect(self, step: str, deadline: float) -> None:
        """New connections, the open transaction begun again with its rows written again."""
        while True:
            time.sleep(RECONNECT_PAUSE_S)
            for connection in (self._data, self._control):
                connection.close()
            try:
                self._data = self._connect(autocommit=True)
                self._control = self._connect(autocommit=True, role=" 2pc")
                self._writer.use(self._data)
                self._transactions.use(self._data, self._control)
                active = self._transactions.active
                if active is not None:
                    self._transactions.abort([active])  # PREPARE may have gone through before the loss
                    self._transactions.begin(active)
                    if self._txn_rows:
                        self._writer.write(self._txn_rows)
                return
            except PostgresConnectionError as error:
                if time.monotonic() > deadline:
                    raise PostgresConnectionError(
                        f"Sinks.postgres: {step}: the server at {describe(self._dsn)} stayed unreachable for"
                        f" {SERVER_OUTAGE_S:g} s: {error}") from None

    # -- items -----------------------------------------------------------------------------------
    def process(self, ordinal: int, inbox: Inbox) -> None:
        if not self._buffer:
            self._buffered_since = time.monotonic()
        self._buffer.extend(inbox.take_chunk())
        if len(self._buffer) >= self._batch_rows:
            self._write()
        elif self._pool is None and not self.context.snapshots_enabled \
                and time.monotonic() - self._buffered_since >= FLUSH_INTERVAL_S:
            self._write()

    def _write(self) -> None:
        """Write the buffered rows: into the active two-phase transaction, or committed at once
        when there are no snapshots to commit at."""
        if not self._buffer:
            return
        if self._pool is not None:
            self._pool.active_id()
            buffer = self._buffer
            self._retried("writing rows", lambda: self._writer.write(buffer))
            self._txn_rows.extend(buffer)
        else:
            self._writer.write(self._buffer)
        self._buffer = []
        if self._pool is None and not self.context.snapshots_enabled:
            self._data.commit()

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete(self) -> bool:
        self._write()
        if self._pool is not None:
            self._pool.complete()
        else:
            self._data.commit()
        return True

    # -- snapshots -------------------------------------------------------------------------------
    def snapshot_commit_prepare(self) -> bool:
        self._write()
        if self._pool is not None:
            self._pool.snapshot_commit_prepare(self.outbox)
        else:
            self._data.commit()  # at-least-once: what came before the barrier is durable
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if self._pool is not None:
            self._pool.snapshot_commit_finish(success)
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        if self._pool is None:  # prepared under exactly-once, restored under another guarantee: never lose them
            self._pool = self._new_pool()
            self._restore_only = True
        while not inbox.is_empty():
            key, state = inbox.peek()
            if not self._pool.is_pool_key(key):
                raise ValueError(f"Sinks.postgres {self.context.vertex_name!r}: unexpected snapshot entry {key!r}")
            self._pool.restore_entry(key, state)
            inbox.remove()

    def finish_snapshot_restore(self) -> bool:
        if self._pool is not None:
            self._pool.finish_snapshot_restore()
            if self._restore_only:
                self._pool = None
        return True

    def close(self) -> None:
        """Roll back what no snapshot prepared (closing the connection would too, but this also
        covers a pooled connection); prepared transactions wait for the restore that decides."""
        self._closing = True
        try:
            if self._pool is not None:
                self._pool.close()
        except Exception as error:  # noqa: BLE001 - the connection may be what failed the job
            log.warning("Sinks.postgres %s: could not roll back on close (the server does when the "
                        "connection closes): %s", self.context.vertex_name, error)
        finally:
            for connection in (self._data, self._control):
                if connection is not None:
                    connection.close()


class _Reconnecting:
    """The sink's :class:`~jet.connectors.transaction_pool.TransactionalResource`: its
    :class:`PreparedTransactions`, each step repeated on new connections after a lost one."""

    def __init__(self, sink: PostgresSinkP) -> None:
        self._sink = sink

    def begin(self, txn_id: str) -> None:
        sink = self._sink
        sink._txn_rows = []
        sink._retried("BEGIN", lambda: sink._transactions.begin(txn_id))

    def prepare(self, txn_id: str) -> Any:
        sink = self._sink
        xid = sink._retried("PREPARE TRANSACTION", lambda: sink._transactions.prepare(txn_id))
        sink._txn_rows = []
        return xid

    def commit(self, txn_id: str, prepared_state: Any) -> None:
        sink = self._sink
        sink._retried("COMMIT PREPARED", lambda: sink._transactions.commit(txn_id, prepared_state))

    def abort(self, txn_ids: list[str]) -> None:
        sink = self._sink
        if sink._transactions.active in txn_ids:
            sink._txn_rows = []
        sink._retried("ROLLBACK PREPARED", lambda: sink._transactions.abort(txn_ids))
