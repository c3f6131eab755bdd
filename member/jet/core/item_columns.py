"""A list of items as the columns one pickle carries (a chunk between members, a snapshot portion).

Pickling a namedtuple calls its Python ``__reduce_ex__``/``__getnewargs__``, and unpickling it its
Python ``__new__``: about 4x the cost of a plain tuple of the same values each way (1.0 against
0.23 us an item to pickle a NEXMark bid). An (item, partition id) pair, and the
``(timestamp, item)`` pair a timestamped stream carries, are one more tuple per item to pickle
and unpickle. So a payload pickles one tuple of columns::

    (leading, values, classes, class_codes, partitions, list_lengths)

- ``leading``: ``None``; or, when every item is a tuple of one length ``n >= 2`` and the first
  one's last element a namedtuple or a list starting with one (tuples of scalars pickle faster
  as they are), the items' first ``n - 1`` elements as ``n - 1`` columns, each an
  ``array('q')``'s bytes when it holds only 64-bit ints (timestamps, window ends), else a list.
  ``values`` then holds the last elements, and the receiver zips the tuples again. That covers a
  timestamped stream's ``(timestamp, event)`` pairs and a window's ``(key, window end,
  accumulator)`` partials when the accumulator is an event (``max_by``) or a list of events
  (``top_n``, ``to_list``);
- ``values``: the items (or their last elements), each namedtuple as the plain tuple of its
  fields; when the last elements are lists, their elements one after the other;
- ``classes``: the namedtuple classes of ``values``, each pickled once (by reference, as before);
- ``class_codes``: ``None`` when every value is of ``classes[0]``, else one byte a value: 0 for
  a value sent as it is, ``k`` for a value of ``classes[k - 1]`` (at most 255 classes a chunk);
- ``partitions``: ``None``, or the partition id of each item as unsigned 16-bit ints;
- ``list_lengths``: ``None``, or when the last elements are lists, their lengths as unsigned
  32-bit ints, by which the receiver cuts ``values`` into lists again.

When the first value is plain data (a scalar or a tuple of scalars, no string over 256
characters), the columns are pickled without the pickler's memo (``Pickler.fast``): the memo
costs a dict entry for every tuple and string, and dropping it makes pickling a chunk of
NEXMark bids 2.4x faster. A value met twice is then written twice (short strings shared by many
items cost a few bytes each; long ones are why the first value is checked), and a cycle, which
fast mode refuses, is pickled again with the memo. Classes of other items would be written
per item without it, so those chunks keep the memo.

Arrays are in native byte order: the members of one cluster run one build on one architecture.
Only values whose first one is a namedtuple are searched for namedtuples. A namedtuple class is
flattened only when its plain tuple is its whole pickled state: the namedtuple's own
``__getnewargs__``, no ``__reduce__``/``__reduce_ex__``/``__getstate__``/``__getitem__`` of its
own and no instance ``__dict__``; any other value is pickled as it is.
"""

from __future__ import annotations

import array
import collections
import io
import itertools
import pickle
import weakref
from itertools import chain, islice
from operator import itemgetter
from typing import Any

PICKLE_PROTOCOL = 5
MAX_CLASSES = 255
#: Chunks this long or longer of plain values are pickled without the memo.
FAST_PICKLE_MIN_ITEMS = 16
_SCALARS = frozenset({int, str, float, bool, bytes, type(None)})
_SHORT = 256

_NAMEDTUPLE_GETNEWARGS = collections.namedtuple("_Probe", "field").__getnewargs__.__code__
# Weak: a job's own classes (unpickled by value) must not outlive the job on a member.
_FLATTENABLE: "weakref.WeakKeyDictionary[type, bool]" = weakref.WeakKeyDictionary()
_new_tuple = tuple.__new__
_repeat = itertools.repeat
# A namedtuple's fields as a plain tuple: slicing copies the item array directly, where tuple()
# iterates (120 against 170 ns a NEXMark event, freeing included)
_as_tuple = itemgetter(slice(None))
_TUPLE_ONLY, _INT_ONLY, _LIST_ONLY = {tuple}, {int}, {list}
_second = itemgetter(1)
_COLUMN_TYPES = (list, bytes)


def is_flattenable(kind: type) -> bool:
    """True when values of ``kind`` travel as a plain tuple and come back as ``kind`` unchanged."""
    known = _FLATTENABLE.get(kind)
    if known is None:
        known = _FLATTENABLE[kind] = (
            issubclass(kind, tuple) and kind is not tuple and kind.__dictoffset__ == 0
            and getattr(getattr(kind, "__getnewargs__", None), "__code__", None) is _NAMEDTUPLE_GETNEWARGS
            and kind.__reduce_ex__ is object.__reduce_ex__ and kind.__reduce__ is object.__reduce__
            and kind.__getstate__ is object.__getstate__ and kind.__getitem__ is tuple.__getitem__)
    return known


def pack_items(items: list, partitions: list[int] | None = None) -> bytes:
    """One pickle of ``items`` (and their partition ids) in the column form above."""
    head = items[0]
    if (type(head) is tuple and len(head) >= 2 and carries_events(head[-1])
            and set(map(type, items)) == _TUPLE_ONLY and set(map(len, items)) == {len(head)}):
        last = len(head) - 1
        lasts = list(map(_second if last == 1 else itemgetter(last), items))
        if type(head[-1]) is not list or set(map(type, lasts)) == _LIST_ONLY:
            return _pack([list(map(itemgetter(i), items)) for i in range(last)], lasts, partitions)
    return _pack(None, items, partitions)


def pack_columns(leading: list[list], lasts: list) -> bytes:
    """:func:`pack_items` of the tuples ``zip(*leading, lasts)``, without making them: for
    ``lasts`` whose first element carries events (:func:`carries_events`)."""
    if type(lasts[0]) is list and set(map(type, lasts)) != _LIST_ONLY:
        return pack_items(list(zip(*leading, lasts)))
    return _pack(leading, lasts, None)


def _pack(leading: list[list] | None, items: list, partitions: list[int] | None) -> bytes:
    """The pickle of the columns: ``leading`` columns (or None) and the items (their last
    elements when there are leading columns)."""
    parts = None if partitions is None else array.array("H", partitions).tobytes()
    lengths = None
    if leading is not None:
        leading = list(map(_column, leading))
        if type(items[0]) is list:
            lengths = array.array("I", map(len, items)).tobytes()
            items = list(chain.from_iterable(items))
    values, classes, codes = _flatten(items)
    columns = (leading, values, classes, codes, parts, lengths)
    if len(values) >= FAST_PICKLE_MIN_ITEMS and _is_plain(values[0]):
        return _dumps_without_memo(columns)
    return pickle.dumps(columns, PICKLE_PROTOCOL)


def carries_events(value: Any) -> bool:
    """A plain namedtuple, or a non-empty list whose first element is one (a top_n's or a
    to_list's accumulator of events)."""
    if type(value) is list:
        return bool(value) and is_flattenable(type(value[0]))
    return is_flattenable(type(value))


def _column(column: list) -> Any:
    """A column of leading elements: 64-bit ints as an array's bytes, anything else as it is."""
    if set(map(type, column)) == _INT_ONLY:  # an array would turn a bool or an IntEnum into an int
        try:
            return array.array("q", column).tobytes()
        except OverflowError:
            pass
    return column


def _is_plain(value: Any) -> bool:
    """A scalar, or a tuple of scalars, without long strings (see the module docstring)."""
    kind = type(value)
    if kind is tuple:
        return all(type(element) in _SCALARS and (type(element) is not str or len(element) <= _SHORT)
                   for element in value)
    return kind in _SCALARS and (kind is not str or len(value) <= _SHORT)


def _dumps_without_memo(columns: tuple) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, PICKLE_PROTOCOL)
    pickler.fast = True
    try:
        pickler.dump(columns)
    except ValueError:  # a cycle, which the memo would have handled
        return pickle.dumps(columns, PICKLE_PROTOCOL)
    return buffer.getvalue()


def _flatten(values: list) -> tuple[list, list[type], bytes | None]:
    """(values with namedtuples as plain tuples, their classes, the class codes or None)."""
    first = type(values[0])
    if first is tuple or not issubclass(first, tuple):
        return values, [], None  # not searched (see the module docstring)
    kinds = set(map(type, values))
    if len(kinds) == 1:
        if is_flattenable(first):
            return list(map(_as_tuple, values)), [first], None
        return values, [], None
    flat = [kind for kind in kinds if is_flattenable(kind)]
    if not flat or len(flat) > MAX_CLASSES:
        return values, [], None
    code_of = dict.fromkeys(kinds, 0)
    code_of.update((kind, code) for code, kind in enumerate(flat, 1))
    codes = bytes(map(code_of.__getitem__, map(type, values)))
    if len(flat) == len(kinds):  # all namedtuples (auctions and bids): no Python loop
        return list(map(_as_tuple, values)), flat, codes
    return [_as_tuple(value) if code else value for value, code in zip(values, codes)], flat, codes


def unpack_items(payload: Any) -> tuple[list, "array.array | None"]:
    """The items and partition ids (or None) of a payload of :func:`pack_items`.

    SECURITY: this unpickles; call it only on payloads from an authenticated peer.
    Raises ValueError for a payload not of that form.
    """
    columns = pickle.loads(payload)
    if type(columns) is not tuple or len(columns) != 6:
        raise ValueError("the payload is not a tuple of 6 columns")
    leading, values, classes, codes, parts, lengths = columns
    if type(values) is not list or type(classes) is not list:
        raise ValueError("the payload's values or classes are not lists")
    items = _restore(values, classes, codes)
    if lengths is not None:
        if leading is None or type(lengths) is not bytes:
            raise ValueError("the payload's list lengths come without leading columns")
        sizes = _array("I", lengths)
        if sum(sizes) != len(items):
            raise ValueError(f"list lengths adding up to {sum(sizes)} for {len(items)} values")
        flat = iter(items)
        items = [list(islice(flat, size)) for size in sizes]
    if leading is not None:
        if type(leading) is not list or not leading or not all(type(c) in _COLUMN_TYPES for c in leading):
            raise ValueError("the payload's leading columns are not a non-empty list of lists or arrays")
        columns = [_array("q", column) if type(column) is bytes else column for column in leading]
        for column in columns:
            if len(column) != len(items):
                raise ValueError(f"{len(column)} leading elements for {len(items)} items")
        items = list(zip(*columns, items))
    partitions = None
    if parts is not None:
        partitions = _array("H", parts)
        if len(partitions) != len(items):
            raise ValueError(f"{len(partitions)} partition ids for {len(items)} items")
    return items, partitions


def _restore(values: list, classes: list, codes: bytes | None) -> list:
    """The values with their namedtuples rebuilt (see :func:`_flatten`)."""
    if not classes:
        return values
    if not all(isinstance(kind, type) and is_flattenable(kind) for kind in classes):
        raise ValueError("the payload names a class that is not a plain namedtuple")
    if codes is None:
        if len(classes) != 1:
            raise ValueError("a payload of one class names several")
        return list(map(_new_tuple, _repeat(classes[0], len(values)), values))
    if len(codes) != len(values):
        raise ValueError(f"{len(codes)} class codes for {len(values)} values")
    table = [None, *classes]
    if 0 not in codes:
        return list(map(_new_tuple, map(table.__getitem__, codes), values))
    return [_new_tuple(table[code], value) if code else value for value, code in zip(values, codes)]


def _array(typecode: str, data: Any) -> array.array:
    column = array.array(typecode)
    column.frombytes(data)
    return column
