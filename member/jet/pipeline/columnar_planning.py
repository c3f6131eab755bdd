"""How the planner keeps batches intact around ``map_batches`` stages (mixed into ``Planner``).

- A source whose supplier can emit ``pyarrow.RecordBatch``es (a ``columnar`` field, as the Spark
  source's has) gets ``columnar=True`` when its only consumer is a ``map_batches`` stage whose
  input is not rebalanced by key: the batches go into the stage whole.
- ``map_batches`` fuses with the stateless stages around it into one vertex, like a chain of
  maps: consecutive ``map_batches`` pass batches to each other, and the rows the stages after
  them need are made in the same vertex.
- A chain ending in ``map_batches`` emits batches when every consumer takes them (another
  ``map_batches``, or a sink whose connector says ``takes_batches``, as the Spark sink does
  once its processor accepts batches); otherwise rows.
"""

from __future__ import annotations

from typing import Any, Callable

from jet.core.dag import Vertex
from jet.core.processors.batches import BatchFunction, batch_chain_p
from jet.pipeline.transforms import Transform


def _keyed_rebalance(consumer: Transform, upstream: Transform) -> bool:
    return any(source.transform is upstream and source.rebalance_key is not None
               for source in consumer.inputs)


def takes_batches(consumer: Transform, upstream: Transform) -> bool:
    """Whether ``consumer`` can take ``upstream``'s output as RecordBatch items."""
    if _keyed_rebalance(consumer, upstream):
        return False  # the key function would see batches, not rows
    if consumer.kind == "map_batches":
        return True
    return consumer.kind == "sink" and bool(getattr(consumer.connector, "takes_batches", False))


def takes_columnar_input(source: Transform) -> bool:
    """Whether a source's only consumer is a ``map_batches`` stage that can take its batches."""
    return (len(source.downstream) == 1 and source.downstream[0].kind == "map_batches"
            and takes_batches(source.downstream[0], source))


class BatchChainPlanning:
    """The ``map_batches`` half of the planner; ``Planner`` provides the vertices and edges."""

    names: dict[Transform, str]
    output_vertex: dict[Transform, Vertex]
    emits_pairs: dict[Transform, bool]

    def _chain_emit(self, last: Transform) -> str:
        """What a fused chain with ``map_batches`` in it emits: batches, rows or pairs."""
        if self.chain_output_pairs(last, False):
            return "pairs"
        if (last.kind == "map_batches" and last.downstream
                and all(takes_batches(consumer, last) for consumer in last.downstream)):
            return "batches"
        return "rows"

    def _plan_batch_chain(self, chain: list[Transform]) -> None:
        """One vertex for a fused chain of stateless and ``map_batches`` stages (no timestamps:
        ``map_batches`` refuses a stream with them)."""
        from jet.pipeline.planner import _peek_step
        steps: list[tuple[str, Any]] = []
        names = [self.names[stage] for stage in chain]
        for stage, name in zip(chain, names):
            if stage.kind == "map_batches":
                steps.append(("map_batches", BatchFunction(stage.fn, name, stage.batch_format,
                                                           stage.schema, stage.as_dicts)))
            elif stage.kind == "peek":
                steps.append(("map", _peek_step(stage.fn, name)))
            else:
                steps.append((stage.kind, stage.fn))
        emit = self._chain_emit(chain[-1])
        vertex_name = names[0] if len(chain) == 1 else "fused(" + ", ".join(names) + ")"
        vertex = self._vertex(vertex_name, batch_chain_p(steps, names, emit),
                              self._effective_lp(chain[0]))
        self._connect_input(chain[0].inputs[0], vertex)
        for stage in chain:
            self.output_vertex[stage] = vertex
            self.emits_pairs[stage] = emit == "pairs"

    # provided by Planner and StreamPlanning
    _vertex: Callable[..., Vertex]
    _connect_input: Callable[..., Any]
    _effective_lp: Callable[[Transform], int]
    chain_output_pairs: Callable[[Transform, bool], bool]
