"""Pipeline: the high-level description of a job, planned into a core DAG on submission."""

from __future__ import annotations

from jet.core.dag import DAG
from jet.pipeline.errors import PipelineDefinitionError
from jet.pipeline.source_sink import Source, StreamSource
from jet.pipeline.stages import BatchStage
from jet.pipeline.stream_checks import check_stream_rules
from jet.pipeline.stream_stages import StreamSourceStage
from jet.pipeline.transforms import Transform


class Pipeline:
    """Stages joined into a graph: ``Pipeline.create()``, then ``read_from`` a source and chain
    transforms down to ``write_to`` a sink."""

    def __init__(self) -> None:
        self._transforms: list[Transform] = []
        self.preserve_order = False

    @classmethod
    def create(cls) -> "Pipeline":
        return cls()

    def read_from(self, source: Source) -> BatchStage | StreamSourceStage:
        """A stage emitting the items of ``source`` (see ``jet.Sources``): a ``BatchStage``, or
        for a stream source a ``StreamSourceStage`` whose ``with_*`` methods choose the
        timestamps."""
        if not isinstance(source, Source):
            raise PipelineDefinitionError(f"read_from needs a source from jet.Sources, got {source!r}")
        stream = isinstance(source, StreamSource)
        transform = Transform("source", [], connector=source, stream=stream,
                              local_parallelism=source.local_parallelism, pipeline=self)
        self._add(transform)
        return StreamSourceStage(self, transform) if stream else BatchStage(self, transform)

    def set_preserve_order(self, preserve_order: bool) -> "Pipeline":
        """Keep the order of each source partition through unkeyed stages (as Jet does: their
        input edges become isolated and their parallelism is capped at the upstream's)."""
        self.preserve_order = bool(preserve_order)
        return self

    def _add(self, transform: Transform) -> None:
        self._transforms.append(transform)

    @property
    def transforms(self) -> list[Transform]:
        return list(self._transforms)

    def validate(self) -> None:
        """Raise PipelineDefinitionError naming the stage when the pipeline cannot run."""
        if not self._transforms:
            raise PipelineDefinitionError("the pipeline is empty: read_from a source first")
        if not any(t.kind == "sink" for t in self._transforms):
            raise PipelineDefinitionError("the pipeline has no sink: write a stage to a sink")
        for transform in self._transforms:
            check_stream_rules(transform)
            if transform.kind != "sink" and not transform.downstream:
                raise PipelineDefinitionError(
                    f"stage {transform.name!r} leads nowhere: write it to a sink or use it in"
                    " another stage")
            if self.preserve_order:
                for source in transform.inputs:
                    if source.rebalance and source.rebalance_key is None:
                        raise PipelineDefinitionError(
                            f"stage {transform.name!r}: rebalance() without a key cannot preserve"
                            " order; give it a key or turn preserve-order off")

    def to_dot(self) -> str:
        """The pipeline's stages in DOT: ``digraph Pipeline {`` and one edge per line."""
        from jet.pipeline.dag_builder import unique_names
        names = unique_names(self._transforms)
        lines = ["digraph Pipeline {"]
        for transform in self._transforms:
            for source in transform.inputs:
                lines.append(f'\t"{_escape(names[source.transform])}" -> "{_escape(names[transform])}";')
        lines.append("}")
        return "\n".join(lines)

    def to_dag(self, default_local_parallelism: int = -1) -> DAG:
        """Plan the pipeline into a core DAG (validating it first)."""
        from jet.pipeline.planner import Planner
        return Planner(self, default_local_parallelism).plan()

    def preflight(self) -> None:
        """Check every source and sink can be opened (naming the path when one cannot)."""
        for transform in self._transforms:
            check = getattr(transform.connector, "preflight", None)
            if check is not None:
                check()


def _escape(name: str) -> str:
    return name.replace('"', '\\"')
