"""How the planner keeps batches intact around ``map_batches`` stages (functions ``Planner`` calls).

- A source whose supplier can emit ``pyarrow.RecordBatch``es (a ``columnar`` field, as the Spark
  source's has) gets ``columnar=True`` when its only consumer is a ``map_batches`` stage whose
  input is not rebalanced by key: the batches go into the stage whole.
- It does too when its only consumer is a grouped aggregation (two stages, not rebalanced) whose
  key and operation read columns of its rows (:mod:`jet.core.batch_fold`; the supplier's
  ``row_type`` says whether rows are read by position or by name): the batches go whole to the
  aggregation's first stage, which folds them in Arrow.
- ``map_batches`` fuses with the stateless stages around it into one vertex, like a chain of
  maps: consecutive ``map_batches`` pass batches to each other, and the rows the stages after
  them need are made in the same vertex.
- A chain ending in ``map_batches`` emits batches when every consumer takes them (another
  ``map_batches``, or a sink whose connector says ``takes_batches``, as the Spark sink does
  once its processor accepts batches); otherwise rows.
"""

from __future__ import annotations

from typing import Any

from jet.core.batch_fold import KeyedBatchFolder
from jet.core.processors.batches import BatchFunction, batch_chain_p
from jet.pipeline.item_forms import chain_output_pairs
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
    """Whether a source's only consumer can take its batches: a ``map_batches`` stage, or a
    grouped aggregation that folds them (:func:`batch_row_type`)."""
    if len(source.downstream) != 1:
        return False
    consumer = source.downstream[0]
    if consumer.kind == "map_batches":
        return takes_batches(consumer, source)
    return batch_row_type(consumer, source) is not None


def batch_row_type(consumer: Transform, source: Transform) -> str | None:
    """The row type of ``source``'s batches when ``consumer`` is a two-stage grouped aggregation
    whose first stage folds them in Arrow (key and operation read columns of such rows)."""
    row_type = getattr(getattr(source.connector, "supplier", None), "row_type", None)
    if (consumer.kind != "group_aggregate" or row_type is None or consumer.inputs[0].rebalance
            or consumer.operation.combine is None):
        return None
    folder = KeyedBatchFolder.for_operation(consumer.key_fn, consumer.operation, row_type)
    return None if folder is None else row_type


def batch_function(stage: Transform, name: str) -> BatchFunction:
    """The step of a ``map_batches`` stage."""
    return BatchFunction(stage.fn, name, stage.batch_format, stage.schema, stage.as_dicts)


def chain_emit(last: Transform) -> str:
    """What a fused chain with ``map_batches`` in it emits: batches, rows or pairs."""
    if chain_output_pairs(last, False):
        return "pairs"
    if (last.kind == "map_batches" and last.downstream
            and all(takes_batches(consumer, last) for consumer in last.downstream)):
        return "batches"
    return "rows"


def batch_chain_supplier(last: Transform, steps: list[tuple[str, Any]], names: list[str]) -> tuple[Any, bool]:
    """The supplier of a fused chain with ``map_batches`` in it, and whether it emits pairs
    (no timestamps: ``map_batches`` refuses a stream with them)."""
    emit = chain_emit(last)
    return batch_chain_p(steps, names, emit), emit == "pairs"
