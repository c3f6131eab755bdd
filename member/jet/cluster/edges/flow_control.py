"""Jet's adaptive receive window for distributed edges (reference section 8).

The receiver of a distributed edge tells its sender, every flow-control period (100 ms), an
*absolute* limit for the sender's sequence: ``acked + window`` in compressed units of 64 KiB of item
footprint. The window follows the receiver's processing speed: it moves halfway towards
``multiplier x data acked per period`` each period, so about 300 ms of data are in flight in the
steady state; a stalled receiver halves it each period, and an idle receiver (nothing waiting in its
buffer) never shrinks it.

Sequences are counted in bytes of *footprint* (``serialized size + 56``); sender and receiver must
use the same formula, :func:`jet.cluster.edges.chunk_packets.chunk_footprint`. Time is always passed in (nanoseconds from
``time.monotonic_ns()`` in production, a fake clock in tests): nothing here reads a clock.
"""

from __future__ import annotations

import math

COMPRESSED_SEQ_UNIT_LOG2 = 16
"""One compressed sequence unit is ``2**16`` = 65,536 bytes of footprint."""

INITIAL_RECEIVE_WINDOW_COMPRESSED = 800
"""The window before the first adjustment: 800 units, about 50 MiB of footprint."""

ITEM_FOOTPRINT_OVERHEAD_BYTES = 56
"""Added to an item's serialized size to estimate its memory footprint at the receiver."""

DEFAULT_RECEIVE_WINDOW_MULTIPLIER = 3
DEFAULT_FLOW_CONTROL_PERIOD_NS = 100_000_000

_INT32_RANGE = 1 << 32
_INT32_MAX = (1 << 31) - 1


def to_int32(value: int) -> int:
    """Wrap ``value`` to a signed 32-bit integer, as a Java ``int`` cast does."""
    value &= _INT32_RANGE - 1
    return value - _INT32_RANGE if value > _INT32_MAX else value


def compress_seq(seq_bytes: int) -> int:
    """A byte sequence in compressed units (``seq_bytes >> 16``), wrapped to a signed int32."""
    return to_int32(seq_bytes >> COMPRESSED_SEQ_UNIT_LOG2)


class ReceiveWindow:
    """Receiver side of one (sender member, destination vertex, ordinal) flow-control channel.

    The receiver tasklet calls :meth:`on_item_acked` for every item it has handed downstream; the
    flow-control timer calls :meth:`update_and_get_send_seq_limit_compressed` once per period and
    sends the result to the sender in an ack packet.
    """

    def __init__(self, multiplier: int = DEFAULT_RECEIVE_WINDOW_MULTIPLIER,
                 period_ns: int = DEFAULT_FLOW_CONTROL_PERIOD_NS) -> None:
        if multiplier < 1:
            raise ValueError(f"receive window multiplier must be >= 1, got {multiplier!r}")
        if period_ns <= 0:
            raise ValueError(f"flow-control period must be > 0 ns, got {period_ns!r}")
        self.multiplier = multiplier
        self.period_ns = period_ns
        self.acked_seq_bytes = 0
        self.window_compressed = INITIAL_RECEIVE_WINDOW_COMPRESSED
        self._prev_acked_compressed = 0
        self._prev_time_ns: int | None = None

    def on_item_acked(self, footprint_bytes: int) -> int:
        """Count an item handed downstream; returns the new acked sequence in bytes."""
        self.acked_seq_bytes += footprint_bytes
        return self.acked_seq_bytes

    def update_and_get_send_seq_limit_compressed(self, now_ns: int, receiver_buffer_empty: bool) -> int:
        """Adjust the window to the data acked since the last call and return the sender's limit.

        The first call makes no adjustment. Later calls move the window halfway (Java's truncating
        division) towards ``multiplier x ceil(acked units per period)``; when the receiver's buffer
        is empty the window never shrinks, since then the sender, not the receiver, is slow.
        Returns ``acked_compressed + window`` as a signed int32 (wrap-safe, as Jet compares it).
        """
        acked_compressed = self.acked_seq_bytes >> COMPRESSED_SEQ_UNIT_LOG2
        delta = acked_compressed - self._prev_acked_compressed
        self._prev_acked_compressed = acked_compressed
        prev_time_ns, self._prev_time_ns = self._prev_time_ns, now_ns
        if prev_time_ns is not None and now_ns > prev_time_ns:
            per_period = delta * self.period_ns / (now_ns - prev_time_ns)
            target = self.multiplier * math.ceil(per_period)
            diff = target - self.window_compressed
            if receiver_buffer_empty and diff < 0:
                diff = 0
            self.window_compressed += int(diff / 2)
        return to_int32(acked_compressed + self.window_compressed)


class SendLimit:
    """Sender side: the latest absolute limit received in an ack packet.

    Before the first ack the limit is 0, so the sender may send while its sequence is under 64 KiB
    (plus one overshooting item) and then waits for the receiver's first ack.
    """

    __slots__ = ("limit_compressed",)

    def __init__(self) -> None:
        self.limit_compressed = 0

    def on_ack(self, limit_compressed: int) -> None:
        """Take the limit of an ack packet. It is absolute and may be lower than the previous one
        (a shrinking window), so it replaces the old value; it is stored as a signed int32."""
        self.limit_compressed = to_int32(limit_compressed)

    def may_send(self, sent_seq_bytes: int) -> bool:
        """Whether another item may be written: ``compress(sent_seq) <= limit``, compared by signed
        32-bit difference so that it stays right when the compressed sequence wraps."""
        return to_int32((sent_seq_bytes >> COMPRESSED_SEQ_UNIT_LOG2) - self.limit_compressed) <= 0
