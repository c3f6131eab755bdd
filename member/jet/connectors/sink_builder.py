"""Jet's SinkBuilder: a sink from a few functions (a database client, an HTTP endpoint, ...).

::

    sink = (SinkBuilder.sink("db", lambda ctx: connect_db())
            .receive_fn(lambda db, item: db.stage(item))
            .flush_fn(lambda db: db.commit())
            .destroy_fn(lambda db: db.close())
            .build())

``create_fn(context)`` makes the state on each sink processor, ``receive_fn(state, item)`` takes
each item, ``flush_fn(state)`` runs after each batch of items the processor received, and
``destroy_fn(state)`` when the job ends. The processor runs on a thread of its own, so the
functions may block. It ignores watermarks. Without transaction functions it keeps no snapshot
state: at-least-once after a restart, exactly-once only if the writes are idempotent.

With ``transaction_fns(prepare_fn, commit_fn, abort_fn)`` the sink takes part in the two
snapshot phases and is exactly-once under an exactly-once job (Jet's two-phase commit)::

    sink = (SinkBuilder.sink("db", lambda ctx: Staging(ctx.global_index))
            .receive_fn(lambda db, item: db.stage(item))
            .transaction_fns(prepare_fn=lambda db: db.seal_staged_batch(),   # -> its id, or None
                             commit_fn=lambda db, batch_id: db.publish(batch_id),  # idempotent
                             abort_fn=lambda db: db.drop_unsealed())
            .build())
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from jet.connectors.source_builder import require_callable, require_parallelism
from jet.connectors.transactions import UnboundedTransactions, has_tag
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.special_items import Watermark
from jet.job_config import ProcessingGuarantee
from jet.pipeline.source_sink import Sink

TXN_TAG = "sink-txn"


class _SinkSpec:
    """The functions and options a sink builder collected (picklable)."""

    def __init__(self, name: str, create_fn: Callable[[Context], Any]) -> None:
        self.name, self.create_fn = name, create_fn
        self.receive_fn: Callable[[Any, Any], None] | None = None
        self.flush_fn: Callable[[Any], None] | None = None
        self.destroy_fn: Callable[[Any], None] | None = None
        self.prepare_fn: Callable[[Any], Any] | None = None
        self.commit_fn: Callable[[Any, Any], None] | None = None
        self.abort_fn: Callable[[Any], None] | None = None
        self.local_parallelism = 1


class WriteBufferedP(Processor):
    """Jet's WriteBufferedP: drains the whole inbox into ``receive_fn``, then calls ``flush_fn``.

    With transaction functions under an exactly-once job, phase 1 of each snapshot calls
    ``prepare_fn`` and records the transaction it returns; phase 2 commits it (see
    :mod:`jet.connectors.transactions`). Under any other guarantee each batch is prepared and
    committed right after its flush."""

    is_cooperative = False

    def __init__(self, spec: _SinkSpec) -> None:
        self._spec = spec
        self._state: Any = None
        self._created = False
        self._txns: UnboundedTransactions | None = None
        self._txn_number = 0
        self._unprepared = False  # items received since the last prepare_fn

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._state = self._spec.create_fn(context)
        self._created = True
        if self._spec.prepare_fn is not None and context.processing_guarantee is ProcessingGuarantee.EXACTLY_ONCE:
            self._txns = UnboundedTransactions(TXN_TAG, self._commit)

    def _commit(self, txn: Any) -> None:
        self._spec.commit_fn(self._state, txn)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        spec, state, receive = self._spec, self._state, self._spec.receive_fn
        for item in inbox.take_chunk():
            receive(state, item)
        if spec.flush_fn is not None:
            spec.flush_fn(state)
        if spec.prepare_fn is None:
            return
        if self._txns is None:  # not exactly-once: each batch is a transaction of its own
            txn = spec.prepare_fn(state)
            if txn is not None:
                spec.commit_fn(state, txn)
        else:
            self._unprepared = True

    def _prepare(self) -> None:
        self._unprepared = False
        txn = self._spec.prepare_fn(self._state)
        if txn is not None:
            self._txns.finished(self.context.global_index, self._txn_number, txn)
            self._txn_number += 1

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete(self) -> bool:
        if self._txns is not None:  # no snapshot follows: commit what remains
            self._prepare()
            self._txns.commit_all()
        return True

    def snapshot_commit_prepare(self) -> bool:
        if self._txns is None:
            return True
        if not self._txns.recording:  # once a snapshot: a refused prepare goes on below
            self._prepare()
        return self._txns.prepare(self.outbox)

    def snapshot_commit_finish(self, success: bool) -> bool:
        if self._txns is not None:
            self._txns.finish(success)
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        context = self.context
        while not inbox.is_empty():
            key, txn = inbox.peek()
            if not has_tag(key, TXN_TAG):
                raise ValueError(f"sink {context.vertex_name!r}: unexpected snapshot entry {key!r}")
            if self._txns is not None:
                self._txns.restore(key, txn, context.global_index, context.total_parallelism)
            elif key.key[1] % context.total_parallelism == context.global_index:
                self._commit(txn)  # the job is no longer exactly-once: still, never lose a prepared one
            inbox.remove()

    def close(self) -> None:
        if self._created:
            self._created = False
            if self._unprepared and self._spec.abort_fn is not None:
                self._spec.abort_fn(self._state)  # no snapshot covers it: the source replays it
            if self._spec.destroy_fn is not None:
                self._spec.destroy_fn(self._state)


class SinkBuilder:
    """``SinkBuilder.sink(name, create_fn)`` then ``receive_fn`` (required), ``flush_fn``,
    ``destroy_fn``, ``transaction_fns``, ``preferred_local_parallelism`` and ``build()``."""

    def __init__(self, name: str, create_fn: Callable[[Context], Any]) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"SinkBuilder.sink needs a non-empty name, got {name!r}")
        self._where = f"SinkBuilder.sink({name!r})"
        self._spec = _SinkSpec(name, require_callable(create_fn, f"{self._where}: create_fn"))

    @staticmethod
    def sink(name: str, create_fn: Callable[[Context], Any]) -> "SinkBuilder":
        """Start building a sink whose processors each hold ``create_fn(context)``."""
        return SinkBuilder(name, create_fn)

    def receive_fn(self, fn: Callable[[Any, Any], None]) -> "SinkBuilder":
        """``fn(state, item)``: take one item."""
        self._spec.receive_fn = require_callable(fn, f"{self._where}.receive_fn")
        return self

    def flush_fn(self, fn: Callable[[Any], None]) -> "SinkBuilder":
        """``fn(state)``: make what was received durable or visible (after every batch)."""
        self._spec.flush_fn = require_callable(fn, f"{self._where}.flush_fn")
        return self

    def destroy_fn(self, fn: Callable[[Any], None]) -> "SinkBuilder":
        """``fn(state)``: release the state when the job ends, however it ends."""
        self._spec.destroy_fn = require_callable(fn, f"{self._where}.destroy_fn")
        return self

    def transaction_fns(self, prepare_fn: Callable[[Any], Any], commit_fn: Callable[[Any, Any], None],
                        abort_fn: Callable[[Any], None] | None = None) -> "SinkBuilder":
        """Make the sink exactly-once under an exactly-once job (two-phase commit).

        - ``prepare_fn(state) -> txn``: phase 1 of a snapshot. Make what was received since the
          last call durable but not yet visible, and return a picklable value identifying it
          (None: nothing to commit). The value is saved in the snapshot.
        - ``commit_fn(state, txn)``: make ``txn`` visible. Called in phase 2 once the snapshot
          that holds ``txn`` has completed everywhere, when the processor completes, and after a
          restart for every ``txn`` the restored snapshot holds (on the processor whose global
          index is the owner's modulo the new parallelism). It must be idempotent: committing
          an already committed ``txn`` does nothing.
        - ``abort_fn(state)`` (optional): the job ends without completing (failure, cancel,
          restart): discard what was received since the last ``prepare_fn``; the restarted
          job's sources replay it. A process that crashed never calls it, so ``create_fn``
          should discard unprepared work an earlier run of the same processor left behind.

        Under an at-least-once job or without snapshots, each batch is prepared and committed
        right after ``flush_fn``. Without these functions the sink is at-least-once."""
        self._spec.prepare_fn = require_callable(prepare_fn, f"{self._where}.transaction_fns: prepare_fn")
        self._spec.commit_fn = require_callable(commit_fn, f"{self._where}.transaction_fns: commit_fn")
        self._spec.abort_fn = None if abort_fn is None else require_callable(
            abort_fn, f"{self._where}.transaction_fns: abort_fn")
        return self

    def preferred_local_parallelism(self, local_parallelism: int) -> "SinkBuilder":
        """Sink processors per member (default 1)."""
        self._spec.local_parallelism = require_parallelism(local_parallelism,
                                                           f"{self._where}.preferred_local_parallelism")
        return self

    def build(self) -> Sink:
        spec = copy.copy(self._spec)  # later builder steps do not change a built sink
        if spec.receive_fn is None:
            raise ValueError(f"{self._where}.build(): receive_fn(fn) was not set; a sink needs it to take items")
        return Sink(spec.name, lambda: WriteBufferedP(spec), spec.local_parallelism)
