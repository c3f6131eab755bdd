"""Jet's TransformStatefulP: map, filter or flat-map with a state object per key.

State lives in a dict from key to ``[timestamp, state]`` kept in access order (least recently
used first); the timestamp is the highest event time seen for the key. Time is event time
only. With a TTL (``ttl_ms > 0``) an event below the current watermark is late, dropped and
counted, and a watermark evicts, from the least recently used end, every key whose timestamp
is below ``wm - ttl``; the scan stops at the first key still alive (approximate when events
come out of order, as in Jet). ``on_evict_fn(state, key, wm)`` may emit, with event time
``wm``. Without a TTL nothing is ever dropped or evicted. ``complete()`` evicts everything
(``wm = MAX_TIMESTAMP``) without forwarding a watermark.

Snapshots: per key ``key -> (timestamp, state)`` in access order (the global state under the
vertex's name: that stage is one processor fed through ``all_to_one``, as Jet gives it
parallelism 1), and the watermark per processor, restored as the minimum over all. A key's state
lives in one processor, so a key restored twice is an error.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Iterator

from jet.core.inbox import Inbox
from jet.core.processors.base import Supplier
from jet.core.processors.snapshot_state import global_key, tagged, unexpected_entry
from jet.core.processors.streaming import StreamingProcessor
from jet.core.special_items import MAX_TIMESTAMP, MIN_TIMESTAMP, Watermark

KINDS = ("map", "filter", "flat_map")


class TransformStatefulP(StreamingProcessor):
    """Stateful map/filter/flat-map over ``(ts, item)`` pairs, emitting ``(ts, output)`` pairs.

    Keyed: ``fn(state, key, item)``. Global (``key_fn`` None): one state, ``fn(state, item)``;
    its ``on_evict_fn`` gets key None. For "map" a None output emits nothing; for "filter" the
    output says whether to keep the item; for "flat_map" it is an iterable of outputs.
    ``on_evict_fn`` outputs follow the same rule ("filter" emits a non-None one as it is).
    """

    def __init__(self, kind: str, key_fn: Callable[[Any], Any] | None, ttl_ms: int,
                 create_fn: Callable[[], Any], fn: Callable[..., Any],
                 on_evict_fn: Callable[[Any, Any, int], Any] | None = None) -> None:
        self._kind = kind
        self._key_fn = key_fn
        self._ttl_ms = ttl_ms if ttl_ms > 0 else 0
        self._create_fn = create_fn
        self._fn = fn
        self._on_evict_fn = on_evict_fn
        self.states: dict[Any, list] = OrderedDict() if self._ttl_ms else {}
        self.current_watermark = MIN_TIMESTAMP
        self.late_events_dropped = 0

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if self.emit_unfinished():
            self.start_emitting(self._transform(inbox.take_chunk()))

    def _transform(self, pairs: list) -> list:
        # One loop per chunk, every lookup hoisted out of it: it runs once per event.
        states, key_fn, create_fn, fn = self.states, self._key_fn, self._create_fn, self._fn
        ttl, watermark, kind = self._ttl_ms, self.current_watermark, self._kind
        keyed, get, touch = key_fn is not None, states.get, states.move_to_end if ttl else None
        is_map, is_filter = kind == "map", kind == "filter"
        output: list = []
        append = output.append
        late = 0
        key = None
        for pair in pairs:
            ts, item = pair
            if ttl and ts < watermark:
                late += 1
                continue
            if keyed:
                key = key_fn(item)
            entry = get(key)
            if entry is None:
                entry = states[key] = [ts, create_fn()]
            else:
                if ts > entry[0]:
                    entry[0] = ts
                if ttl:
                    touch(key)
            result = fn(entry[1], key, item) if keyed else fn(entry[1], item)
            if is_map:
                if result is not None:
                    append((ts, result))
            elif is_filter:
                if result:
                    append(pair)
            elif result is not None:
                for out in result:  # a loop here costs less than building a list to extend by
                    append((ts, out))
        if late:
            self.drop_late(late, watermark)
        return output

    def try_process(self) -> bool:
        return self.emit_unfinished()

    def save_to_snapshot(self) -> bool:
        return self.save_state(self._saved_entries, self.current_watermark)

    def _saved_entries(self) -> Iterator[tuple[Any, tuple]]:
        keyed = self._key_fn is not None
        # No copy of a state the next items change in place: the tasklet pickles what was
        # offered before this processor runs again.
        for key, (ts, state) in self.states.items():
            yield key if keyed else global_key(self.context), (ts, state)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        context, states = self.context, self.states
        for key, value in inbox.take_chunk():
            if tagged(key, "progress") is not None:
                self.merge_restored_progress(value)
                continue
            if self._key_fn is None:
                if key != global_key(context):
                    raise unexpected_entry(context.vertex_name, self, key)
                key = None
            if key in states:
                raise ValueError(f"vertex {context.vertex_name!r}: the snapshot holds the state of key"
                                 f" {key!r} twice")
            states[key] = list(value)

    def finish_snapshot_restore(self) -> bool:
        if self.restored_progress is not None:
            (self.current_watermark,) = self.restored_progress
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if not self.emit_unfinished():
            return False
        self.current_watermark = watermark.timestamp
        if not self._ttl_ms:
            return self.outbox.offer_watermark(watermark)
        return self.emit_then_forward(watermark, lambda: self._evict(watermark.timestamp))

    def complete(self) -> bool:
        return self.emit_final(lambda: self._evict(MAX_TIMESTAMP))

    def _evict(self, watermark: int) -> list:
        """Remove the expired keys (all of them for MAX) and collect their ``on_evict_fn`` output."""
        states = self.states
        if watermark == MAX_TIMESTAMP:
            expired = list(states)
        else:
            threshold = watermark - self._ttl_ms
            expired = []
            for key, (ts, _state) in states.items():
                if ts >= threshold:
                    break
                expired.append(key)
        output: list = []
        on_evict = self._on_evict_fn
        for key in expired:
            _ts, state = states.pop(key)
            if on_evict is None:
                continue
            result = on_evict(state, key, watermark)
            if self._kind == "flat_map":
                if result is not None:
                    output.extend([(watermark, out) for out in result])
            elif result is not None:
                output.append((watermark, result))
        return output


def transform_stateful_p(kind: str, key_fn: Callable[[Any], Any] | None, ttl_ms: int,
                         create_fn: Callable[[], Any], fn: Callable[..., Any],
                         on_evict_fn: Callable[[Any, Any, int], Any] | None = None) -> Supplier:
    """Stateful mapping (Jet's mapStateful / filterStateful / flatMapStateful), keyed by
    ``key_fn`` or global (None); ``ttl_ms`` <= 0 keeps state forever."""
    where = "transform_stateful_p"
    if kind not in KINDS:
        raise ValueError(f"{where}: kind must be one of {KINDS}, got {kind!r}")
    if not isinstance(ttl_ms, int) or isinstance(ttl_ms, bool):
        raise TypeError(f"{where}: ttl_ms must be an int (ms), got {ttl_ms!r}")
    for name, value in (("create_fn", create_fn), ("fn", fn)):
        if not callable(value):
            raise TypeError(f"{where}: {name} must be callable, got {value!r}")
    for name, value in (("key_fn", key_fn), ("on_evict_fn", on_evict_fn)):
        if value is not None and not callable(value):
            raise TypeError(f"{where}: {name} must be callable or None, got {value!r}")
    return lambda: TransformStatefulP(kind, key_fn, ttl_ms, create_fn, fn, on_evict_fn)
