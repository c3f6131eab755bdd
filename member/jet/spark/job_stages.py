"""Which stages of a job (a Pipeline or a DAG) Spark runs, and how many tasks they need.

The vertex names are the planner's stage names, so the Spark side and the job agree without
talking.
"""

from __future__ import annotations

import os
import runpy
from typing import Any, Sequence

from jet.connectors.spark.stages import (
    SparkReadSpec,
    SparkSink,
    SparkSinkSupplier,
    SparkSource,
    SparkSourceSupplier,
    SparkWriteSpec,
)
from jet.connectors.spark.streaming_sink import SparkStreamSink, SparkStreamSinkSupplier, SparkStreamWriteSpec
from jet.connectors.spark.streaming_source import SparkStreamReadSpec, SparkStreamSource, SparkStreamSourceSupplier
from jet.core.dag import DAG
from jet.pipeline.columnar_planning import takes_columnar_input
from jet.pipeline.pipeline import Pipeline
from jet.pipeline.dag_builder import unique_names


def load_pipeline(path: str, entrypoint: str = "pipeline", args: Sequence[str] = ()) -> Any:
    """Run a pipeline file and return the Pipeline it defines as ``entrypoint`` (a Pipeline or
    a function of the file's extra arguments returning one)."""

    if not os.path.isfile(path):
        raise FileNotFoundError(f"pipeline file {path!r} does not exist")
    namespace = runpy.run_path(path, run_name="__jet_pipeline__")
    definition = namespace.get(entrypoint)
    if definition is None:
        raise ValueError(f"{path} defines no {entrypoint!r} (a Pipeline, or a function returning one)")
    pipeline = definition(*args) if callable(definition) and not isinstance(definition, Pipeline) else definition
    if not isinstance(pipeline, Pipeline):
        raise ValueError(f"{entrypoint!r} in {path} gave {type(pipeline).__name__}, expected a jet Pipeline")
    return pipeline


ReadSpec = SparkReadSpec | SparkStreamReadSpec


WriteSpec = SparkWriteSpec | SparkStreamWriteSpec


def spark_stages(job: Any) -> tuple[list[tuple[str, ReadSpec]], list[tuple[str, WriteSpec]]]:
    """(vertex name, spec) of every Spark source and Spark sink (batch or stream) of a Pipeline
    or a DAG."""

    if isinstance(job, DAG):
        suppliers = [(vertex.name, vertex.processor_supplier) for vertex in job.vertices]
    else:
        suppliers = [(name, transform.connector.supplier)
                     for transform, name in unique_names(job.transforms).items()
                     if isinstance(transform.connector, (SparkSource, SparkSink, SparkStreamSource, SparkStreamSink))]
    sources = [(name, s.spec) for name, s in suppliers
               if isinstance(s, (SparkSourceSupplier, SparkStreamSourceSupplier))]
    sinks = [(name, s.spec) for name, s in suppliers if isinstance(s, (SparkSinkSupplier, SparkStreamSinkSupplier))]
    return sources, sinks


def columnar_sources(job: Any) -> set[str]:
    """The Spark source vertices of a Pipeline or a DAG whose processors emit whole batches (a
    ``map_batches`` stage takes them): their writers send larger frames."""

    if isinstance(job, DAG):
        return {vertex.name for vertex in job.vertices
                if isinstance(vertex.processor_supplier, SparkSourceSupplier) and vertex.processor_supplier.columnar}
    return {name for transform, name in unique_names(job.transforms).items()
            if isinstance(transform.connector, SparkSource) and takes_columnar_input(transform)}


def sink_task_count(job: Any, sink_vertices: Sequence[str], member_count: int) -> int:
    """Spark reader tasks the job's Spark sinks need: one per sink processor in the cluster."""

    per_member = 0
    for name in sink_vertices:
        lp = job.get_vertex(name).local_parallelism if isinstance(job, DAG) else 1
        per_member += max(1, lp)
    return per_member * member_count
