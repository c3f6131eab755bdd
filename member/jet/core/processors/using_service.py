"""Jet's TransformUsingServiceP: map, filter or flat-map with a service from a ServiceFactory.

The service is leased in ``init`` (made there for the first processor of a member, or for each
processor when not shared) and released in ``close``; the function then runs over whole chunks
like the stateless transforms, as ``fn(service, item)`` or, keyed, ``fn(service, key, item)``.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.core.processors.base import Supplier
from jet.core.processors.transform import TransformP, compile_chain, compile_timestamped_chain
from jet.core.service_factory import ServiceFactory, ServiceLease

KINDS = ("map", "filter", "flat_map")


def bind_service(fn: Callable[..., Any], service: Any,
                 key_fn: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    """``fn`` as a function of the item alone: ``fn(service, item)`` or ``fn(service, key, item)``."""
    if key_fn is None:
        return partial(fn, service)
    return lambda item: fn(service, key_fn(item), item)


def check_service_arguments(where: str, kind: str, factory: Any, fn: Any) -> None:
    """Refuse an unknown kind, a factory not from ``ServiceFactories`` or a non-callable ``fn``."""
    if kind not in KINDS:
        raise ValueError(f"{where}: kind must be one of {KINDS}, got {kind!r}")
    if not isinstance(factory, ServiceFactory):
        raise TypeError(f"{where}: factory must be a ServiceFactory, got {factory!r}")
    if not callable(fn):
        raise TypeError(f"{where}: fn must be callable, got {fn!r}")


class TransformUsingServiceP(TransformP):
    """A map, filter or flat-map step whose function also gets the stage's service."""

    def __init__(self, kind: str, factory: ServiceFactory, fn: Callable[..., Any],
                 key_fn: Callable[[Any], Any] | None, pairs: bool) -> None:
        super().__init__(lambda chunk: chunk)
        self._kind, self._factory, self._fn, self._key_fn, self._pairs = kind, factory, fn, key_fn, pairs
        self._lease: ServiceLease | None = None

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._lease = self._factory.lease(context)
        steps = [(self._kind, bind_service(self._fn, self._lease.service, self._key_fn))]
        self._chunk_fn = compile_timestamped_chain(steps) if self._pairs else compile_chain(steps)

    def close(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None


def transform_using_service_p(kind: str, factory: ServiceFactory, fn: Callable[..., Any],
                              key_fn: Callable[[Any], Any] | None = None, pairs: bool = False) -> Supplier:
    """Jet's mapUsingService / filterUsingService / flatMapUsingService (keyed when ``key_fn``
    is given); ``pairs``: the items are ``(timestamp, item)`` pairs, the function sees the item."""
    check_service_arguments("transform_using_service_p", kind, factory, fn)
    return lambda: TransformUsingServiceP(kind, factory, fn, key_fn, pairs)
