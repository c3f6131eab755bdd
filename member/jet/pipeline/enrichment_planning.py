"""How the planner shapes the stages of ``enrichment_stages``: calls through a service and sort.

- ``*_using_service`` and ``*_using_service_async`` are one vertex of the stage's parallelism,
  taking and emitting the representation its upstream emits (pairs keep their timestamps); a
  keyed one is fed by a distributed edge partitioned by the key, so each key has one processor.
- ``sort`` is ``<name>-prepare`` (each processor sorts its share) then ``<name>``, one
  processor of the cluster over a distributed all-to-one edge, which merges the sorted runs.

Rolling aggregates and distinct are stateful mappings and windows, planned as those are.
"""

from __future__ import annotations

from jet.core.processors.async_service import async_transform_using_service_p
from jet.core.processors.sort import sort_p
from jet.core.processors.using_service import transform_using_service_p
from jet.pipeline.dag_builder import DagBuilder
from jet.pipeline.item_forms import key_of_pair
from jet.pipeline.transforms import Transform


def plan_using_service(builder: DagBuilder, transform: Transform) -> None:
    """One vertex calling the stage's service (see the module docstring)."""
    name, spec, key_fn = builder.names[transform], transform.spec, transform.key_fn
    kind = transform.kind.split("_using_service")[0]
    source = transform.inputs[0]
    pairs = builder.emits_pairs[source.transform]
    if spec.max_concurrent_ops:
        supplier = async_transform_using_service_p(kind, spec.factory, transform.fn, key_fn, pairs,
                                                   spec.max_concurrent_ops, spec.preserve_order)
    else:
        supplier = transform_using_service_p(kind, spec.factory, transform.fn, key_fn, pairs)
    vertex = builder.vertex(name, supplier, builder.effective_lp(transform))
    if key_fn is not None:
        by_key = key_of_pair(key_fn) if pairs else key_fn
        builder.connect_input(source, vertex, keyed=True,
                              setup=lambda e: e.partitioned(by_key).distributed())
    else:
        builder.connect_input(source, vertex)
    builder.emits_pairs[transform] = pairs
    builder.output_vertex[transform] = vertex


def plan_sort(builder: DagBuilder, transform: Transform) -> None:
    """A local sort on every processor, then one merging processor in the cluster."""
    name, key_fn, reverse = builder.names[transform], transform.key_fn, transform.spec.reverse
    prepare = builder.vertex(f"{name}-prepare", sort_p(key_fn, reverse), builder.effective_lp(transform))
    builder.connect_input(transform.inputs[0], prepare, pairs=False)
    vertex = builder.vertex(name, sort_p(key_fn, reverse), 1)
    builder.connect(prepare, vertex, lambda e: e.all_to_one(name).distributed())
    builder.emits_pairs[transform] = False
    builder.output_vertex[transform] = vertex
