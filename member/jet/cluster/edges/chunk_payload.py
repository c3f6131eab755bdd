"""A chunk's items as the columns one pickle carries between members.

Pickling a namedtuple calls its Python ``__reduce_ex__``/``__getnewargs__``, and unpickling it its
Python ``__new__``: about 4x the cost of a plain tuple of the same values each way (1.0 against
0.23 us an item to pickle a NEXMark bid). And an (item, partition id) pair is one more tuple per
item to build, pickle and unpickle. So a payload pickles one tuple of columns::

    (values, classes, class_codes, partitions)

- ``values``: the items, each namedtuple as the plain tuple of its fields;
- ``classes``: the namedtuple classes of the chunk, each pickled once (by reference, as before);
- ``class_codes``: ``None`` when every item is of ``classes[0]``, else one byte an item: 0 for an
  item sent as it is, ``k`` for an item of ``classes[k - 1]`` (at most 255 classes a chunk);
- ``partitions``: ``None``, or the partition id of each item as unsigned 16-bit ints, native
  order (the members of one cluster run the same build on the same architecture).

Only a chunk whose first item is a namedtuple is searched for namedtuples. A namedtuple class is
flattened only when its plain tuple is its whole pickled state: the
namedtuple's own ``__getnewargs__``, no ``__reduce__``/``__reduce_ex__``/``__getstate__`` of its
own and no instance ``__dict__``; any other item is pickled as it is.
"""

from __future__ import annotations

import array
import collections
import itertools
import pickle
import weakref
from typing import Any

PICKLE_PROTOCOL = 5
MAX_CLASSES = 255

_NAMEDTUPLE_GETNEWARGS = collections.namedtuple("_Probe", "field").__getnewargs__.__code__
# Weak: a job's own classes (unpickled by value) must not outlive the job on a member.
_FLATTENABLE: "weakref.WeakKeyDictionary[type, bool]" = weakref.WeakKeyDictionary()
_new_tuple = tuple.__new__
_repeat = itertools.repeat


def is_flattenable(kind: type) -> bool:
    """True when items of ``kind`` travel as a plain tuple and come back as ``kind`` unchanged."""
    known = _FLATTENABLE.get(kind)
    if known is None:
        known = _FLATTENABLE[kind] = (
            issubclass(kind, tuple) and kind is not tuple and kind.__dictoffset__ == 0
            and getattr(getattr(kind, "__getnewargs__", None), "__code__", None) is _NAMEDTUPLE_GETNEWARGS
            and kind.__reduce_ex__ is object.__reduce_ex__ and kind.__reduce__ is object.__reduce__
            and kind.__getstate__ is object.__getstate__)
    return known


def pack_items(items: list, partitions: list[int] | None = None) -> bytes:
    """One pickle of ``items`` (and their partition ids) in the column form above."""
    parts = None if partitions is None else array.array("H", partitions).tobytes()
    first = type(items[0])
    if first is tuple or not issubclass(first, tuple):
        # Most chunks are of one type: a chunk that starts with something other than a
        # namedtuple is not searched for one (nor would it be a gain).
        return pickle.dumps((items, [], None, parts), PICKLE_PROTOCOL)
    kinds = set(map(type, items))
    if len(kinds) == 1:
        (kind,) = kinds
        if is_flattenable(kind):
            return pickle.dumps((list(map(tuple, items)), [kind], None, parts), PICKLE_PROTOCOL)
        return pickle.dumps((items, [], None, parts), PICKLE_PROTOCOL)
    flat = [kind for kind in kinds if is_flattenable(kind)]
    if not flat or len(flat) > MAX_CLASSES:
        return pickle.dumps((items, [], None, parts), PICKLE_PROTOCOL)
    code_of = dict.fromkeys(kinds, 0)
    code_of.update((kind, code) for code, kind in enumerate(flat, 1))
    codes = bytes(map(code_of.__getitem__, map(type, items)))
    values = [tuple(item) if code else item for item, code in zip(items, codes)]
    return pickle.dumps((values, flat, codes, parts), PICKLE_PROTOCOL)


def unpack_items(payload: Any) -> tuple[list, list[int] | None]:
    """The items and partition ids (or None) of a payload of :func:`pack_items`.

    SECURITY: this unpickles; call it only on payloads from an authenticated peer.
    Raises ValueError for a payload not of that form.
    """
    columns = pickle.loads(payload)
    if type(columns) is not tuple or len(columns) != 4:
        raise ValueError("the payload is not a tuple of 4 columns")
    values, classes, codes, parts = columns
    if type(values) is not list or type(classes) is not list:
        raise ValueError("the payload's values or classes are not lists")
    partitions = None
    if parts is not None:
        partitions = array.array("H")
        partitions.frombytes(parts)
        if len(partitions) != len(values):
            raise ValueError(f"{len(partitions)} partition ids for {len(values)} items")
    if not classes:
        return values, partitions
    if not all(isinstance(kind, type) and is_flattenable(kind) for kind in classes):
        raise ValueError("the payload names a class that is not a plain namedtuple")
    if codes is None:
        if len(classes) != 1:
            raise ValueError("a payload of one class names several")
        return list(map(_new_tuple, _repeat(classes[0], len(values)), values)), partitions
    if len(codes) != len(values):
        raise ValueError(f"{len(codes)} class codes for {len(values)} items")
    table = [None, *classes]
    items = [_new_tuple(table[code], value) if code else value for value, code in zip(values, codes)]
    return items, partitions
