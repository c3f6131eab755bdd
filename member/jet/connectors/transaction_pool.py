"""Jet's ``TransactionPoolSnapshotUtility``: a sink's external transactions through the two
snapshot phases, under ids that survive restarts.

A transactional sink (Kafka transactions, PostgreSQL ``PREPARE TRANSACTION``) writes into one
*active* transaction at a time. Its id is deterministic: ``<prefix>-<processor index>-<slot>``,
the prefix naming the job and the vertex, so after a restart, on any member, a processor knows
the ids its predecessors used and can commit or abort them. The lifecycle::

    begin(id) -> writes -> prepare(id) [phase 1] -> commit(id, state) [phase 2]

- **Phase 1** (``snapshot_commit_prepare``): ``prepare(id)`` makes the active transaction's work
  durable but invisible and returns a picklable *prepared state* (None if the resource needs
  nothing beyond the id); it is saved under ``BroadcastKey((tag, processor index, slot))``.
  The next write begins a transaction in another slot.
- **Phase 2** (``snapshot_commit_finish(True)``): ``commit(id, state)`` for what that snapshot
  prepared. A failed snapshot (``False``) keeps the prepared transactions: the next snapshot
  records them again and its phase 2 commits them. Each needs a slot of its own, so after
  ``probe_slots - 1`` failed snapshots in a row the processor fails (clearly) rather than use
  ids a restore would not probe.
- **Restore**: every entry reaches every processor (broadcast keys); each commits the ones whose
  processor index maps to it (``index % total parallelism == own index``, so a smaller cluster
  still commits them all), then aborts every other id it could own: indices ``own + k * total``
  below ``probing_factor * total`` (Jet's ``TXN_PROBING_FACTOR`` = 5, covering a cluster that
  shrank), slots below ``probe_slots``. A fresh start (no snapshot) aborts the same ids, so
  transactions a crashed earlier execution left open never linger.
- **Completion** (a batch job, or a stream whose sources ended): prepare and commit the active
  transaction at once; no snapshot follows.

``commit`` must be idempotent (phase 2 may have run before the job was lost) and ``abort`` must
accept ids that never existed or were committed. A slot is begun again as soon as its phase 2
committed it, so after a restore an id may hold a newer transaction than the one the snapshot
recorded (the snapshot after it prepared it, and never completed): ``commit`` must tell them
apart by the prepared state and leave the newer one alone. The PostgreSQL sink checks the
prepared transaction's xid, the Kafka sink its marker's number, unique per transaction. Neither is called on the cooperative thread
of a cooperative processor unless it is quick: a sink using the pool should be non-cooperative.

The pool does not know what a transaction is; the resource does (:class:`TransactionalResource`).
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol

from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.core.snapshot_keys import BroadcastKey

#: Jet's TXN_PROBING_FACTOR: a restored processor aborts ids of indices up to this many times
#: the total parallelism, so the ids of a bigger earlier cluster are covered.
TXN_PROBING_FACTOR = 5
#: Transactions in use by one processor in the steady state: one prepared, one active.
DEFAULT_POOL_SIZE = 2
#: Slots probed (and so usable) per processor index; more than the pool size leaves room for
#: transactions kept by failed snapshots.
DEFAULT_PROBE_SLOTS = 4


class TransactionalResource(Protocol):
    """What a transactional sink tells the pool how to do (ids are the pool's strings)."""

    def begin(self, txn_id: str) -> None:
        """Start a transaction under ``txn_id``; the sink's writes go into it until ``prepare``."""

    def prepare(self, txn_id: str) -> Any:
        """Phase 1: make ``txn_id``'s work durable, not visible. Returns a picklable state that
        ``commit`` gets back, also after a restore on another member (None: the id is enough)."""

    def commit(self, txn_id: str, prepared_state: Any) -> None:
        """Make a prepared transaction visible. Idempotent."""

    def abort(self, txn_ids: list[str]) -> None:
        """Roll back anything open or prepared under these ids; unknown or committed ids are no-ops.
        Given all at once so a resource can do them in parallel."""


def transaction_id(prefix: str, processor_index: int, slot: int) -> str:
    """The deterministic id of slot ``slot`` of processor ``processor_index``."""
    return f"{prefix}-{processor_index}-{slot}"


def default_prefix(context: Context, sink_kind: str) -> str:
    """``jet-<sink kind>-<job id>-<vertex>``: unique per job and sink vertex, stable across restarts."""
    return f"jet-{sink_kind}-{context.job_id}-{context.vertex_name}"


class TransactionPool:
    """The transactions of one sink processor (see the module docstring).

    Call :meth:`active_id` before each write (it begins a transaction when none is active),
    and delegate the processor's ``snapshot_commit_prepare``, ``snapshot_commit_finish``,
    ``restore_from_snapshot`` (:meth:`restore_entry`), ``finish_snapshot_restore``,
    ``complete`` and ``close`` to the methods of the same idea here.
    """

    def __init__(self, resource: TransactionalResource, context: Context, prefix: str, *,
                 tag: str = "txn-pool", pool_size: int = DEFAULT_POOL_SIZE,
                 probe_slots: int = DEFAULT_PROBE_SLOTS, probing_factor: int = TXN_PROBING_FACTOR) -> None:
        if not 1 <= pool_size <= probe_slots:
            raise ValueError(f"TransactionPool: need 1 <= pool_size <= probe_slots, got {pool_size}, {probe_slots}")
        self._resource = resource
        self._context = context
        self.prefix = prefix
        self.tag = tag
        self._pool_size = pool_size
        self._probe_slots = probe_slots
        self._probing_factor = probing_factor
        self._started = False
        self._active_slot: int | None = None
        self._prepared: dict[int, Any] = {}  # slot -> prepared state, waiting for a phase 2
        self._recorded: set[int] = set()  # slots the snapshot in progress recorded
        self._restored: list[tuple[str, Any]] = []  # (id, prepared state) this processor commits

    # -- ids -------------------------------------------------------------------------------------
    def id_of(self, slot: int, processor_index: int | None = None) -> str:
        index = self._context.global_index if processor_index is None else processor_index
        return transaction_id(self.prefix, index, slot)

    def probed_ids(self) -> list[str]:
        """Every id this processor may own after a restore: its indices modulo the parallelism,
        below ``probing_factor * total``, each slot below ``probe_slots``."""
        total, own = self._context.total_parallelism, self._context.global_index
        return [self.id_of(slot, index) for index in range(own, self._probing_factor * total, total)
                for slot in range(self._probe_slots)]

    # -- writing ---------------------------------------------------------------------------------
    def active_id(self) -> str:
        """The id of the transaction to write into now, begun if needed."""
        if self._active_slot is None:
            self._start()
            slot = next((s for s in range(self._pool_size) if s not in self._prepared), None)
            if slot is None:
                slot = next((s for s in range(self._probe_slots) if s not in self._prepared), None)
            if slot is None:
                raise RuntimeError(
                    f"sink {self._context.vertex_name!r}: {len(self._prepared)} transactions are prepared and"
                    f" wait for a snapshot to complete; the snapshots keep failing, so this sink stops"
                    f" rather than open a transaction under an id a restore would not find")
            self._resource.begin(self.id_of(slot))
            self._active_slot = slot
        return self.id_of(self._active_slot)

    @property
    def has_active(self) -> bool:
        return self._active_slot is not None

    # -- the snapshot phases ---------------------------------------------------------------------
    def snapshot_commit_prepare(self, outbox: Outbox) -> None:
        """Phase 1: prepare the active transaction; record every prepared one in the snapshot."""
        self._start()
        if self._active_slot is not None:
            slot, self._active_slot = self._active_slot, None
            self._prepared[slot] = self._resource.prepare(self.id_of(slot))
        index = self._context.global_index
        for slot, state in self._prepared.items():
            outbox.offer_to_snapshot(BroadcastKey((self.tag, index, slot)), state)
        self._recorded = set(self._prepared)

    def snapshot_commit_finish(self, success: bool) -> None:
        """Phase 2: commit what the snapshot recorded (``success``), or keep it for the next one."""
        if success:
            for slot in sorted(self._recorded):
                self._resource.commit(self.id_of(slot), self._prepared.pop(slot))
        self._recorded = set()

    def complete(self) -> None:
        """No snapshot follows: prepare and commit the active transaction and every prepared one."""
        self._start()
        if self._active_slot is not None:
            slot, self._active_slot = self._active_slot, None
            self._prepared[slot] = self._resource.prepare(self.id_of(slot))
        for slot in sorted(self._prepared):
            self._resource.commit(self.id_of(slot), self._prepared.pop(slot))
        self._recorded = set()

    # -- restore ---------------------------------------------------------------------------------
    def is_pool_key(self, key: Any) -> bool:
        """Whether a snapshot key is one of this pool's entries."""
        return type(key) is BroadcastKey and type(key.key) is tuple and len(key.key) == 3 \
            and key.key[0] == self.tag

    def restore_entry(self, key: BroadcastKey, prepared_state: Any) -> None:
        """A prepared transaction from the restored snapshot; kept if this processor owns it."""
        _, index, slot = key.key
        if index % self._context.total_parallelism == self._context.global_index:
            self._restored.append((self.id_of(slot, index), prepared_state))

    def finish_snapshot_restore(self) -> None:
        """Commit the owned prepared transactions of the snapshot, abort every other probed id."""
        restored, self._restored = self._restored, []
        for txn_id, state in restored:
            self._resource.commit(txn_id, state)
        committed = {txn_id for txn_id, _ in restored}
        self._abort([txn_id for txn_id in self.probed_ids() if txn_id not in committed])
        self._started = True

    def _start(self) -> None:
        if not self._started:  # a fresh start: whatever an earlier execution left open goes
            self._started = True
            self._abort(self.probed_ids())

    def _abort(self, txn_ids: Iterable[str]) -> None:
        txn_ids = list(txn_ids)
        if txn_ids:
            self._resource.abort(txn_ids)

    # -- the end ---------------------------------------------------------------------------------
    def close(self) -> None:
        """The job ends without completing: abort the active (unprepared) transaction; prepared
        ones are left to the restore that commits or aborts them (Jet never rolls them back)."""
        if self._active_slot is not None:
            slot, self._active_slot = self._active_slot, None
            self._abort([self.id_of(slot)])
