"""Services a stage calls per item (Jet's ``ServiceFactory``): made once per member or per
processor, handed to the user's function with each item, and destroyed when the job ends.

``ServiceFactories.shared_service(create_fn)`` gives one service per member and job, shared by
every processor of the stage on that member (a connection pool, an HTTP session);
``non_shared_service(create_fn)`` gives each processor its own (anything not thread-safe).
``create_fn`` and ``destroy_fn`` may be coroutine functions: they then run on the member's event
loop (:func:`member_event_loop`), where an asyncio client such as an ``aiohttp.ClientSession``
must be made to be used by the async stages.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["ServiceFactories", "ServiceFactory", "ServiceLease", "member_event_loop"]

_loop_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_shared_lock = threading.Lock()
_shared: dict[tuple, list] = {}  # (job, execution, member, vertex, factory) -> [service, releases to come]


@dataclass(frozen=True)
class ServiceFactory:
    """How to make and destroy a stage's service; build one with :class:`ServiceFactories`."""

    create_fn: Callable[[], Any]
    destroy_fn: Callable[[Any], Any] | None = None
    shared: bool = True
    """One service per member (True) or one per processor (False)."""
    factory_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Identifies the factory across the pickling that ships a job to its members."""

    def __post_init__(self) -> None:
        if not callable(self.create_fn):
            raise TypeError(f"a service factory's create_fn must be callable, got {self.create_fn!r}")
        if self.destroy_fn is not None and not callable(self.destroy_fn):
            raise TypeError(f"a service factory's destroy_fn must be callable or None, got {self.destroy_fn!r}")

    def lease(self, context: Any) -> "ServiceLease":
        """The service for the processor of ``context`` (a ``jet.core.Context``), made now if it
        has to be. A shared one lives until every processor of the vertex on this member has
        released it: processors close when they finish, not all at the end of the job."""
        if not self.shared:
            return ServiceLease(self, None, _call(self.create_fn))
        # ``results`` is one dict per execution: a restarted job's processors get a new service,
        # never one that the processors of its cancelled execution are still releasing.
        key = (context.job_id, id(context.results), context.member_index, context.vertex_name,
               self.factory_id)
        with _shared_lock:
            entry = _shared.get(key)
            if entry is None:
                entry = _shared[key] = [_call(self.create_fn), context.local_parallelism]
        return ServiceLease(self, key, entry[0])


class ServiceLease:
    """One processor's hold on a service; :meth:`release` destroys it with the last release."""

    def __init__(self, factory: ServiceFactory, shared_key: tuple | None, service: Any) -> None:
        self.factory = factory
        self.service = service
        self._shared_key = shared_key
        self._released = False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        if self._shared_key is not None:
            with _shared_lock:
                entry = _shared.get(self._shared_key)
                if entry is None:
                    return
                entry[1] -= 1
                if entry[1] > 0:
                    return
                del _shared[self._shared_key]
        if self.factory.destroy_fn is not None:
            _call(self.factory.destroy_fn, self.service)


class ServiceFactories:
    """Jet's ``ServiceFactories``: the two ways to make a stage's service."""

    @staticmethod
    def shared_service(create_fn: Callable[[], Any],
                       destroy_fn: Callable[[Any], Any] | None = None) -> ServiceFactory:
        """One service per member, shared by the stage's processors there (it must be
        thread-safe: with several cooperative threads they call it at the same time)."""
        return ServiceFactory(create_fn, destroy_fn, shared=True)

    @staticmethod
    def non_shared_service(create_fn: Callable[[], Any],
                           destroy_fn: Callable[[Any], Any] | None = None) -> ServiceFactory:
        """One service per processor of the stage."""
        return ServiceFactory(create_fn, destroy_fn, shared=False)


def member_event_loop() -> asyncio.AbstractEventLoop:
    """The event loop every async stage of this member runs its awaitables on (one daemon
    thread, started on first use). One per member, not per processor: a shared asyncio service
    is bound to the loop it was made on, and the thread count stays one whatever the
    parallelism; the loop only waits on I/O, so one thread keeps up with many processors."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="jet-async-services", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def as_future(result: Any) -> Future | None:
    """``result`` as a ``concurrent.futures.Future``: itself, or an awaitable scheduled on the
    member's event loop; None when it is neither."""
    if isinstance(result, Future):
        return result
    if inspect.iscoroutine(result):
        return asyncio.run_coroutine_threadsafe(result, member_event_loop())
    if inspect.isawaitable(result):
        return asyncio.run_coroutine_threadsafe(_awaited(result), member_event_loop())
    return None


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``; a coroutine function runs to its end on the member's event loop."""
    result = fn(*args)
    if inspect.iscoroutine(result):
        return asyncio.run_coroutine_threadsafe(result, member_event_loop()).result()
    return result
