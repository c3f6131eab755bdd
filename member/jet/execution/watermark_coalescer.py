"""Watermark coalescing: the watermark of several inputs is the minimum over the active ones.

Jet's ``WatermarkCoalescer`` with its three implementations, chosen by :func:`create_coalescer`:
no input (a source: nothing to coalesce), one input (pass-through) and several inputs. A
coalescer is used at two levels: per conveyor across its queues (``InboundEdgeStream``) and
per processor across its input ordinals (``ProcessorTasklet``).

Every ``observe_*`` / ``queue_done`` / ``check_wm_history`` answers the watermark to forward
now: ``None`` (:data:`NO_NEW_WM`, nothing to forward), a :class:`Watermark`, or
:data:`IDLE_MESSAGE` ("every input is idle, leave me out of the minimum downstream").
"""

from __future__ import annotations

from typing import Sequence

from jet.core.special_items import IDLE_MESSAGE, MAX_TIMESTAMP, MIN_TIMESTAMP, Watermark

#: "Nothing to forward".
NO_NEW_WM = None

__all__ = ["NO_NEW_WM", "IDLE_MESSAGE", "WatermarkCoalescer", "WatermarkOrderError",
           "create_coalescer"]


class WatermarkOrderError(ValueError):
    """A queue delivered a watermark not above the one it delivered before."""


class WatermarkCoalescer:
    """The coalescing contract; see :func:`create_coalescer`.

    ``coalesced_wm`` is the last watermark forwarded and ``top_observed_wm`` the highest one
    received from any input (both ``MIN_TIMESTAMP`` until there is one; IDLE never counts).
    """

    __slots__ = ("top_observed_wm", "coalesced_wm", "_names")

    idle_message_pending = False
    """True when :meth:`check_wm_history` has an IDLE to give (read on every drain: no call)."""

    def __init__(self, names: Sequence[str] | None = None) -> None:
        self.top_observed_wm = MIN_TIMESTAMP
        self.coalesced_wm = MIN_TIMESTAMP
        self._names = list(names) if names is not None else None

    def observe_wm(self, queue: int, watermark: Watermark) -> Watermark | None:
        """Queue ``queue`` delivered ``watermark`` (IDLE_MESSAGE included)."""
        raise NotImplementedError

    def observe_event(self, queue: int) -> None:
        """Queue ``queue`` delivered an ordinary item: it is no longer idle."""
        raise NotImplementedError

    def queue_done(self, queue: int) -> Watermark | None:
        """Queue ``queue`` delivered DONE: it can no longer hold the minimum back."""
        raise NotImplementedError

    def check_wm_history(self) -> Watermark | None:
        """A watermark due without new input (the IDLE that follows an all-idle top wm)."""
        return NO_NEW_WM

    def _order_error(self, queue: int, last: int, new: int) -> WatermarkOrderError:
        name = self._names[queue] if self._names is not None else f"queue {queue}"
        last_text = "DONE" if last == MAX_TIMESTAMP else str(last)
        return WatermarkOrderError(
            f"watermarks not monotonically increasing on {name}: last one={last_text},"
            f" new one={new}; a watermark must be above every earlier one of its input")


class ZeroInputCoalescer(WatermarkCoalescer):
    """A source: it has no input to observe; it never produces a watermark itself."""

    __slots__ = ()

    def observe_wm(self, queue: int, watermark: Watermark) -> Watermark | None:
        raise TypeError("a processor without inputs observes no watermark")

    def observe_event(self, queue: int) -> None:
        raise TypeError("a processor without inputs observes no item")

    def queue_done(self, queue: int) -> Watermark | None:
        raise TypeError("a processor without inputs has no queue to finish")


class SingleInputCoalescer(WatermarkCoalescer):
    """One input: every watermark passes as it is (IDLE too, though it is not stored)."""

    __slots__ = ("_queue_wm",)

    def __init__(self, names: Sequence[str] | None = None) -> None:
        super().__init__(names)
        self._queue_wm = MIN_TIMESTAMP

    def observe_wm(self, queue: int, watermark: Watermark) -> Watermark | None:
        value = watermark.timestamp
        if self._queue_wm >= value:
            raise self._order_error(queue, self._queue_wm, value)
        if value != MAX_TIMESTAMP:
            self._queue_wm = self.top_observed_wm = self.coalesced_wm = value
        return watermark

    def observe_event(self, queue: int) -> None:
        pass

    def queue_done(self, queue: int) -> Watermark | None:
        self._queue_wm = MAX_TIMESTAMP
        return NO_NEW_WM


class StandardCoalescer(WatermarkCoalescer):
    """Several inputs: forward the minimum over the queues that are not idle, never going back.

    When every queue is idle or done, the highest watermark ever observed is forwarded first
    (if not yet) and IDLE after it (through :meth:`check_wm_history`), so the result does not
    depend on which queue went idle first. A queue that becomes active before that IDLE was
    asked for cancels it (Jet would still send it, marking an active input idle downstream).
    """

    __slots__ = ("queue_wms", "is_idle", "all_inputs_idle", "idle_message_pending", "_unset")

    def __init__(self, queue_count: int, names: Sequence[str] | None = None) -> None:
        super().__init__(names)
        self.queue_wms = [MIN_TIMESTAMP] * queue_count
        self.is_idle = [False] * queue_count
        self.all_inputs_idle = False
        self.idle_message_pending = False
        self._unset = queue_count
        """Queues neither idle nor done that have no watermark yet: while there is one, the
        minimum is MIN_TIMESTAMP and nothing is forwarded (a batch job's DONEs then cost O(1),
        not a pass over every queue each)."""

    def _is_unset(self, queue: int) -> bool:
        return not self.is_idle[queue] and self.queue_wms[queue] == MIN_TIMESTAMP

    def observe_wm(self, queue: int, watermark: Watermark) -> Watermark | None:
        value = watermark.timestamp
        if self.queue_wms[queue] >= value:
            raise self._order_error(queue, self.queue_wms[queue], value)
        was_unset = self._is_unset(queue)
        if value == MAX_TIMESTAMP:
            self.is_idle[queue] = True
        else:
            self.is_idle[queue] = False
            self.all_inputs_idle = self.idle_message_pending = False
            self.queue_wms[queue] = value
            if value > self.top_observed_wm:
                self.top_observed_wm = value
        self._unset -= was_unset
        return self._check_observed_wms()

    def observe_event(self, queue: int) -> None:
        if self.is_idle[queue]:
            self.is_idle[queue] = False
            self.all_inputs_idle = self.idle_message_pending = False
            self._unset += self._is_unset(queue)

    def queue_done(self, queue: int) -> Watermark | None:
        self._unset -= self._is_unset(queue)
        self.queue_wms[queue] = MAX_TIMESTAMP
        return self._check_observed_wms()

    def check_wm_history(self) -> Watermark | None:
        if self.idle_message_pending:
            self.idle_message_pending = False
            return IDLE_MESSAGE
        return NO_NEW_WM

    def _check_observed_wms(self) -> Watermark | None:
        if self.all_inputs_idle or self._unset:
            return NO_NEW_WM  # the all-idle answer was already given, or the minimum is MIN_TIMESTAMP
        wms, idle = self.queue_wms, self.is_idle
        minimum = min((wm for wm, is_idle in zip(wms, idle) if not is_idle), default=MAX_TIMESTAMP)
        if minimum < MAX_TIMESTAMP:
            if minimum > self.coalesced_wm:
                self.coalesced_wm = minimum
                return Watermark(minimum)
            return NO_NEW_WM
        # Every queue is idle or done: forward the top wm first, whichever queue went idle last.
        self.all_inputs_idle = True
        some_not_done = any(wm < MAX_TIMESTAMP for wm in wms)
        if self.top_observed_wm > self.coalesced_wm:
            self.idle_message_pending = some_not_done
            self.coalesced_wm = self.top_observed_wm
            return Watermark(self.top_observed_wm)
        return IDLE_MESSAGE if some_not_done else NO_NEW_WM


def create_coalescer(queue_count: int, names: Sequence[str] | None = None) -> WatermarkCoalescer:
    """The coalescer for ``queue_count`` inputs; ``names`` (one per queue) go into errors."""
    if queue_count < 0:
        raise ValueError(f"queue_count must be >= 0, got {queue_count}")
    if names is not None and len(names) != queue_count:
        raise ValueError(f"{len(names)} queue names given for {queue_count} queues")
    if queue_count == 0:
        return ZeroInputCoalescer(names)
    if queue_count == 1:
        return SingleInputCoalescer(names)
    return StandardCoalescer(queue_count, names)
