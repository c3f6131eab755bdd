"""How snapshot state is pickled: the standard library's pickle first, cloudpickle for what it refuses.

Snapshot state is mostly data (keys, accumulators, window frames, offsets), which the C pickler
writes several times faster than cloudpickle, whose ``reducer_override`` runs in Python for every
object. State that holds a lambda, a local function or a class shipped by value with the job (a
class of the user's pipeline file) makes pickle raise, and those chunks go through cloudpickle.
Either way the bytes load with ``pickle.loads``.
"""

from __future__ import annotations

import pickle
from operator import itemgetter
from typing import IO, Any

import cloudpickle

from jet.core.item_columns import carries_events, pack_columns, unpack_items

_REFUSED = (pickle.PicklingError, AttributeError, TypeError)
"""What pickle raises for an object it cannot write by reference (a lambda, a local or shipped class)."""


def dumps_state(state: Any) -> bytes:
    """``state`` pickled at the highest protocol, by pickle where it can and cloudpickle where not."""
    try:
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    except _REFUSED:
        return cloudpickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)


_COLUMNS_MIN_ENTRIES = 16
_ONE_FRAME = {dict}
_first, _second = itemgetter(0), itemgetter(1)


def dumps_entries(vertex: str, entries: list) -> bytes:
    """One pickle of a vertex's snapshot entries ``[(key, value)]``; :func:`load_entries` reads it.

    Where every value is a key's single window frame, ``{frame end: accumulator}``, and the
    accumulator an event (a plain namedtuple) or a list of them (a tumbling window's ``max_by``,
    ``top_n``, ``to_list``), the entries are pickled as ``(vertex, None, columns)``: the
    ``(key, end, accumulator)`` triples in :mod:`jet.core.item_columns`' column form. Pickling a
    namedtuple runs its Python ``__reduce_ex__``; as columns a portion of NEXMark q18 entries
    pickles about 2x faster and loads as fast (``bench/README.md``). Any other portion is the
    plain ``(vertex, entries)``.
    """
    columns = _one_frame_columns(entries)
    if columns is not None:
        keys, ends, accumulators = columns
        try:
            return pickle.dumps((vertex, None, pack_columns([keys, ends], accumulators)),
                                protocol=pickle.HIGHEST_PROTOCOL)
        except _REFUSED:  # a class shipped with the job: cloudpickle below
            pass
    return dumps_state((vertex, entries))


def _one_frame_columns(entries: list) -> tuple[list, list, list] | None:
    """(keys, frame ends, accumulators) of entries that are all single frames of events."""
    if len(entries) < _COLUMNS_MIN_ENTRIES:
        return None
    first = entries[0][1]
    if type(first) is not dict or len(first) != 1 or not carries_events(next(iter(first.values()))):
        return None  # the first entry decides for most portions, before any pass over them all
    frames = list(map(_second, entries))
    if set(map(type, frames)) != _ONE_FRAME or set(map(len, frames)) != {1}:
        return None
    ends = list(map(next, map(iter, frames)))
    return list(map(_first, entries)), ends, list(map(dict.__getitem__, frames, ends))


def load_entries(stream: IO[bytes]) -> tuple[str, list]:
    """The next ``(vertex, entries)`` pickled by :func:`dumps_entries` (or :func:`dumps_state`) in
    ``stream``.

    SECURITY: this unpickles; read only snapshot chunks this cluster wrote.
    """
    loaded = pickle.load(stream)
    if type(loaded) is tuple and len(loaded) == 3 and loaded[1] is None:
        vertex, _, columns = loaded
        triples, _ = unpack_items(columns)
        return vertex, [(key, {end: acc}) for key, end, acc in triples]
    return loaded
