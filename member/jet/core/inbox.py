"""The inbox a processor reads its input from."""

from __future__ import annotations

from typing import Any, Callable, Iterator

_EMPTY: tuple = ()
"""What an empty inbox holds: immutable, so no caller can fill every empty inbox through it."""


class Inbox:
    """Items of one input ordinal waiting to be processed, in arrival order.

    The engine refills it only when it is empty. Removing items is what tells the engine a
    processor made progress; items left in it are offered again on the next ``process`` call.
    Besides Jet's item methods it hands out whole chunks (:meth:`take_chunk`), which is how
    the ready-made processors avoid a Python call per item.
    """

    __slots__ = ("_items", "_head")

    def __init__(self) -> None:
        self._items: list | tuple = _EMPTY
        self._head = 0

    def is_empty(self) -> bool:
        return self._head >= len(self._items)

    def __len__(self) -> int:
        return len(self._items) - self._head

    def __bool__(self) -> bool:
        return self._head < len(self._items)

    def peek(self) -> Any:
        """The first item without removing it, or None when empty."""
        return self._items[self._head] if self._head < len(self._items) else None

    def poll(self) -> Any:
        """Remove and return the first item, or None when empty."""
        head = self._head
        if head >= len(self._items):
            return None
        self._head = head + 1
        return self._items[head]

    def remove(self) -> Any:
        """Remove and return the first item; raise IndexError when empty."""
        head = self._head
        if head >= len(self._items):
            raise IndexError("remove() from an empty inbox")
        self._head = head + 1
        return self._items[head]

    def drain(self, consumer: Callable[[Any], Any]) -> int:
        """Pass every item to ``consumer``, removing each first; return how many."""
        count = 0
        items = self._items
        while self._head < len(items):
            item = items[self._head]
            self._head += 1
            consumer(item)
            count += 1
        return count

    def take_chunk(self, max_items: int | None = None) -> list:
        """Remove and return up to ``max_items`` items (all by default) as a list.

        The list is the caller's to keep and change (an empty inbox gives a new empty list).
        """
        head, items = self._head, self._items
        end = len(items) if max_items is None else min(len(items), head + max_items)
        if head == 0 and end == len(items):
            if items is _EMPTY:
                return []
            chunk = items
        else:
            chunk = items[head:end]
        self._head = end
        if end >= len(items):
            self._items, self._head = _EMPTY, 0
        return chunk

    def peek_chunk(self, max_items: int) -> list:
        """The first ``max_items`` items as a new list, without removing them."""
        items = self._items
        return [] if items is _EMPTY else items[self._head:self._head + max_items]

    def clear(self) -> None:
        self._items, self._head = _EMPTY, 0

    def __iter__(self) -> Iterator[Any]:
        """Iterate the items without removing them."""
        return iter(self._items[self._head:])

    def add_chunk(self, chunk: list) -> None:
        """Engine side: append a chunk the caller hands over (it must not use it again).

        An empty inbox adopts the list itself; later chunks extend it in place, which is safe
        because every chunk in a queue has exactly one owner.
        """
        if not chunk:
            return
        if self._head >= len(self._items):
            self._items, self._head = chunk, 0
        elif self._head == 0:
            self._items.extend(chunk)
        else:
            self._items = self._items[self._head:] + chunk
            self._head = 0

    def __repr__(self) -> str:
        return f"Inbox({list(self._items[self._head:])!r})"
