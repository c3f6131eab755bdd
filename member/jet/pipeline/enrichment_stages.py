"""Stage operations of enrichment and ordering: calls through a service (sync or async), rolling
aggregates, distinct and sort, on batch and stream stages and their keyed and windowed forms.

They are methods of the stage classes through the three mixins here (``stages.py`` lists them
as bases), so this module adds operations without importing the stage classes. Every operation
checks its arguments at definition and names the stage in the error.

- ``*_using_service``: Jet's TransformUsingServiceP, fused into no chain (the service's vertex
  is its own); keyed forms route each key to one processor and call ``fn(service, key, item)``.
- ``*_using_service_async``: Jet's ordered and unordered async transforms, at most
  ``max_concurrent_ops`` unfinished items per processor.
- ``rolling_aggregate``: a stateful map whose state is the accumulator: ``(key, result so far)``
  per item (the result alone without a key); saved in snapshots like any stateful mapping.
- ``distinct``: keyed, a stateful filter passing the first item of each key; windowed, each
  window's first item per distinct key; ``sort``: Jet 4.3's two-stage global sort.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from jet.core.aggregate import AggregateOperation
from jet.core.functions import whole_item
from jet.core.service_factory import ServiceFactory
from jet.core.window_results import WindowResult
from jet.pipeline.errors import PipelineDefinitionError, require_callable, require_operation

#: The transform kinds planned by ``enrichment_planning``.
SERVICE_KINDS = tuple(f"{kind}_using_service{mode}" for kind in ("map", "filter", "flat_map")
                      for mode in ("", "_async"))
DEFAULT_MAX_CONCURRENT_OPS = 4


@dataclass(frozen=True)
class ServiceSpec:
    """The service of a ``*_using_service*`` stage; ``max_concurrent_ops`` 0 means synchronous."""

    factory: ServiceFactory
    max_concurrent_ops: int = 0
    preserve_order: bool = True


@dataclass(frozen=True)
class SortSpec:
    """The direction of a sort stage (its key is the transform's ``key_fn``)."""

    reverse: bool = False


def _service_stage(stage: Any, kind: str, factory: Any, fn: Any, key_fn: Any, asynchronous: bool,
                   max_concurrent_ops: Any, preserve_order: Any) -> Any:
    mode = "-async" if asynchronous else ""
    name = f"{kind.replace('_', '-')}-using-service{mode}{'-keyed' if key_fn is not None else ''}"
    if not isinstance(factory, ServiceFactory):
        raise PipelineDefinitionError(
            f"stage {name!r}: the service factory must come from jet.ServiceFactories"
            f" (shared_service or non_shared_service), got {type(factory).__name__} {factory!r}")
    require_callable(fn, name, "the function")
    if asynchronous:
        if (not isinstance(max_concurrent_ops, int) or isinstance(max_concurrent_ops, bool)
                or max_concurrent_ops < 1):
            raise PipelineDefinitionError(
                f"stage {name!r}: max_concurrent_ops must be an int >= 1, got {max_concurrent_ops!r}")
        if not isinstance(preserve_order, bool):
            raise PipelineDefinitionError(f"stage {name!r}: preserve_order must be a bool, got {preserve_order!r}")
    spec = ServiceSpec(factory, max_concurrent_ops if asynchronous else 0, preserve_order)
    transform_kind = f"{kind}_using_service{'_async' if asynchronous else ''}"
    return stage._add(transform_kind, [stage._input()], name=name, fn=fn, key_fn=key_fn, spec=spec)


def rolling_operation(operation: AggregateOperation, keyed: bool) -> tuple[Callable, Callable]:
    """``(create_fn, map_fn)`` of a stateful map whose one-element state is the accumulator."""
    accumulate, export = operation.accumulate, operation.export_fn
    create = lambda: [operation.create()]  # noqa: E731

    if keyed:
        def rolling(state: list, key: Any, item: Any) -> Any:
            state[0] = accumulate(state[0], item)
            return key, export(state[0])
    else:
        def rolling(state: list, item: Any) -> Any:  # type: ignore[misc]
            state[0] = accumulate(state[0], item)
            return export(state[0])
    return create, rolling


def _rolling(stage: Any, key_fn: Any, operation: Any) -> Any:
    name = "rolling-aggregate" + ("-keyed" if key_fn is not None else "")
    require_operation(operation, name)
    create, rolling = rolling_operation(operation, key_fn is not None)
    return stage._add("map_stateful", [stage._input()], name=name, key_fn=key_fn, ttl_ms=0,
                      create_fn=create, fn=rolling)


def _unseen() -> list:
    return [False]


def _first_time(seen: list, _item: Any) -> bool:
    if seen[0]:
        return False
    seen[0] = True
    return True


def _distinct(stage: Any, key_fn: Callable[[Any], Any]) -> Any:
    if stage._transform.stream:
        raise PipelineDefinitionError(
            f"stage {stage.name!r}: distinct() without a window is a batch operation (its state"
            " would grow forever on a stream): use window(...).distinct()")
    return stage._add("filter_stateful", [stage._input()], name="distinct", key_fn=key_fn, ttl_ms=0,
                      create_fn=_unseen, fn=_first_time)


def _first_item(acc: list, item: Any) -> list:
    return acc if acc else [item]


def _either(acc: list, other: list) -> list:
    return acc if acc else other


def _the_item(acc: list) -> Any:
    return acc[0]


#: Each key's first item (any item, across members): what a window's distinct keeps.
PICK_FIRST = AggregateOperation(create=list, accumulate=_first_item, combine=_either, finish=_the_item,
                                name="pick_first")


def _window_result(result: Any) -> WindowResult:
    return WindowResult(result.start, result.end, result.result, result.is_early)


class ServiceStageMethods:
    """Operations of every batch and stream stage (mixed into ``GeneralStage``)."""

    _transform: Any
    _add: Callable[..., Any]
    _input: Callable[[], Any]
    name: str

    def map_using_service(self, service_factory: ServiceFactory, fn: Callable[[Any, Any], Any]) -> Any:
        """Emit ``fn(service, item)`` (unless None); the service comes from ``service_factory``."""
        return _service_stage(self, "map", service_factory, fn, None, False, 0, True)

    def filter_using_service(self, service_factory: ServiceFactory, fn: Callable[[Any, Any], Any]) -> Any:
        """Keep the items for which ``fn(service, item)`` is truthy."""
        return _service_stage(self, "filter", service_factory, fn, None, False, 0, True)

    def flat_map_using_service(self, service_factory: ServiceFactory,
                               fn: Callable[[Any, Any], Iterable[Any]]) -> Any:
        """Emit every item of ``fn(service, item)``."""
        return _service_stage(self, "flat_map", service_factory, fn, None, False, 0, True)

    def map_using_service_async(self, service_factory: ServiceFactory, fn: Callable[[Any, Any], Any],
                                max_concurrent_ops: int = DEFAULT_MAX_CONCURRENT_OPS,
                                preserve_order: bool = True) -> Any:
        """Emit the result (unless None) of the future or awaitable ``fn(service, item)``.

        At most ``max_concurrent_ops`` items per processor are unfinished (called and not yet
        emitted); further input waits upstream. ``preserve_order`` emits in input order, else
        as calls finish; either way a watermark follows every item received before it."""
        return _service_stage(self, "map", service_factory, fn, None, True, max_concurrent_ops, preserve_order)

    def filter_using_service_async(self, service_factory: ServiceFactory, fn: Callable[[Any, Any], Any],
                                   max_concurrent_ops: int = DEFAULT_MAX_CONCURRENT_OPS,
                                   preserve_order: bool = True) -> Any:
        """Keep the items whose future or awaitable ``fn(service, item)`` gives a truthy result."""
        return _service_stage(self, "filter", service_factory, fn, None, True, max_concurrent_ops, preserve_order)

    def flat_map_using_service_async(self, service_factory: ServiceFactory,
                                     fn: Callable[[Any, Any], Any],
                                     max_concurrent_ops: int = DEFAULT_MAX_CONCURRENT_OPS,
                                     preserve_order: bool = True) -> Any:
        """Emit every item of the iterable the future or awaitable ``fn(service, item)`` gives."""
        return _service_stage(self, "flat_map", service_factory, fn, None, True, max_concurrent_ops,
                              preserve_order)

    def rolling_aggregate(self, operation: AggregateOperation) -> Any:
        """Emit, for every item, the result of ``operation`` over all items so far (one state for
        the stage, on one processor of the cluster)."""
        return _rolling(self, None, operation)

    def distinct(self) -> Any:
        """The distinct items of a batch stage (the first of equal ones)."""
        return _distinct(self, whole_item)

    def sort(self, key_fn: Callable[[Any], Any] | None = None, reverse: bool = False) -> Any:
        """The items of a batch stage in the order of ``key_fn(item)`` (the items' own order by
        default), largest first with ``reverse``: a global order, emitted by one processor of
        the cluster (a next stage keeps it with local parallelism 1, as ``Sinks.list`` has)."""
        name = "sort"
        if key_fn is not None:
            require_callable(key_fn, name, "the key function")
        if not isinstance(reverse, bool):
            raise PipelineDefinitionError(f"stage {name!r}: reverse must be a bool, got {reverse!r}")
        if self._transform.stream:
            raise PipelineDefinitionError(
                f"stage {self.name!r}: sort() is a batch operation: a stream never ends to be sorted")
        return self._add("sort", [self._input()], name=name, key_fn=key_fn, spec=SortSpec(reverse))


class KeyedServiceStageMethods:
    """Operations of a stage grouped by key (mixed into ``StageWithKey``); the key routes each
    item to the processor that owns it, across members."""

    _stage: Any
    _key_fn: Callable[[Any], Any]

    def map_using_service(self, service_factory: ServiceFactory, fn: Callable[[Any, Any, Any], Any]) -> Any:
        """Emit ``fn(service, key, item)`` (unless None)."""
        return _service_stage(self._stage, "map", service_factory, fn, self._key_fn, False, 0, True)

    def filter_using_service(self, service_factory: ServiceFactory, fn: Callable[[Any, Any, Any], Any]) -> Any:
        """Keep the items for which ``fn(service, key, item)`` is truthy."""
        return _service_stage(self._stage, "filter", service_factory, fn, self._key_fn, False, 0, True)

    def flat_map_using_service(self, service_factory: ServiceFactory,
                               fn: Callable[[Any, Any, Any], Iterable[Any]]) -> Any:
        """Emit every item of ``fn(service, key, item)``."""
        return _service_stage(self._stage, "flat_map", service_factory, fn, self._key_fn, False, 0, True)

    def map_using_service_async(self, service_factory: ServiceFactory, fn: Callable[[Any, Any, Any], Any],
                                max_concurrent_ops: int = DEFAULT_MAX_CONCURRENT_OPS,
                                preserve_order: bool = True) -> Any:
        """The async map with ``fn(service, key, item)`` (see the unkeyed form)."""
        return _service_stage(self._stage, "map", service_factory, fn, self._key_fn, True,
                              max_concurrent_ops, preserve_order)

    def filter_using_service_async(self, service_factory: ServiceFactory, fn: Callable[[Any, Any, Any], Any],
                                   max_concurrent_ops: int = DEFAULT_MAX_CONCURRENT_OPS,
                                   preserve_order: bool = True) -> Any:
        """The async filter with ``fn(service, key, item)``."""
        return _service_stage(self._stage, "filter", service_factory, fn, self._key_fn, True,
                              max_concurrent_ops, preserve_order)

    def flat_map_using_service_async(self, service_factory: ServiceFactory,
                                     fn: Callable[[Any, Any, Any], Any],
                                     max_concurrent_ops: int = DEFAULT_MAX_CONCURRENT_OPS,
                                     preserve_order: bool = True) -> Any:
        """The async flat-map with ``fn(service, key, item)``."""
        return _service_stage(self._stage, "flat_map", service_factory, fn, self._key_fn, True,
                              max_concurrent_ops, preserve_order)

    def rolling_aggregate(self, operation: AggregateOperation) -> Any:
        """Emit ``(key, result so far)`` for every item: ``operation`` over the key's items."""
        return _rolling(self._stage, self._key_fn, operation)

    def distinct(self) -> Any:
        """The first item of each key (a batch stage)."""
        return _distinct(self._stage, self._key_fn)


class WindowDistinctMethods:
    """``distinct`` of a windowed stage (mixed into ``StageWithWindow``)."""

    _stage: Any
    _key_fn: Callable[[Any], Any] | None

    def distinct(self) -> Any:
        """One item per distinct item (keyed: per key) of each window: ``WindowResult(start, end,
        item)``, or keyed ``KeyedWindowResult(start, end, key, item)``; which of equal items is
        kept is not defined (Jet's pickAny)."""
        key_fn = self._key_fn
        windowed = self._stage.grouping_key(whole_item if key_fn is None else key_fn).window(
            self.window_definition)  # type: ignore[attr-defined]
        results = windowed.aggregate(PICK_FIRST)
        results._transform.name = "window-distinct"
        return results if key_fn is not None else results.map(_window_result)


__all__ = ["KeyedServiceStageMethods", "PICK_FIRST", "SERVICE_KINDS", "ServiceSpec", "ServiceStageMethods",
           "SortSpec", "WindowDistinctMethods", "rolling_operation"]
