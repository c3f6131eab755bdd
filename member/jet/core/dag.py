"""The DAG: vertices (processor suppliers with a local parallelism) joined by edges."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from jet.core.edge import DEFAULT_QUEUE_SIZE, Edge, RoutingPolicy
from jet.core.key_encoding import UnsupportedKeyError, canonical_bytes

LOCAL_PARALLELISM_USE_DEFAULT = -1
FIRST_STAGE_VERTEX_NAME_SUFFIX = "-prepare"


class DagValidationError(ValueError):
    """The DAG is malformed; the message names the vertices or edge at fault."""


class Vertex:
    """A unit of computation: ``local_parallelism`` processors per member from one supplier.

    ``processor_supplier`` is a zero-argument callable (a ``Processor`` subclass, or a
    function) returning a new processor each time it is called. ``local_parallelism`` -1
    means the member's cooperative thread count.
    """

    def __init__(self, name: str, processor_supplier: Callable[[], Any],
                 local_parallelism: int = LOCAL_PARALLELISM_USE_DEFAULT) -> None:
        if not isinstance(name, str) or not name:
            raise DagValidationError(f"a vertex name must be a non-empty str, got {name!r}")
        if not callable(processor_supplier):
            raise DagValidationError(
                f"vertex {name!r}: processor_supplier must be a callable returning a Processor,"
                f" got {processor_supplier!r}")
        self.name = name
        self.processor_supplier = processor_supplier
        self.local_parallelism = LOCAL_PARALLELISM_USE_DEFAULT
        self.set_local_parallelism(local_parallelism)

    def set_local_parallelism(self, local_parallelism: int) -> "Vertex":
        """Processors of this vertex per member; -1 for the member's cooperative thread count."""
        if (not isinstance(local_parallelism, int) or isinstance(local_parallelism, bool)
                or (local_parallelism < 1 and local_parallelism != LOCAL_PARALLELISM_USE_DEFAULT)):
            raise DagValidationError(
                f"vertex {self.name!r}: local_parallelism must be -1 (default) or >= 1,"
                f" got {local_parallelism!r}")
        self.local_parallelism = local_parallelism
        return self

    def determine_local_parallelism(self, default: int) -> int:
        """This vertex's parallelism on a member whose default is ``default``."""
        if self.local_parallelism == LOCAL_PARALLELISM_USE_DEFAULT:
            return default
        return self.local_parallelism

    def __repr__(self) -> str:
        return f"Vertex({self.name!r}, local_parallelism={self.local_parallelism})"


class DAG:
    """A directed acyclic graph of vertices and edges; iterate it for topological order."""

    def __init__(self) -> None:
        self._vertices: dict[str, Vertex] = {}
        self._edges: list[Edge] = []

    # -- building ---------------------------------------------------------------------------
    def new_vertex(self, name: str, processor_supplier: Callable[[], Any],
                   local_parallelism: int = LOCAL_PARALLELISM_USE_DEFAULT) -> Vertex:
        """Create a vertex, add it and return it."""
        return self.vertex(Vertex(name, processor_supplier, local_parallelism))

    def vertex(self, vertex: Vertex) -> Vertex:
        """Add an existing vertex; its name must be unique in this DAG."""
        if vertex.name in self._vertices:
            raise DagValidationError(f"duplicate vertex name {vertex.name!r}: names must be unique")
        self._vertices[vertex.name] = vertex
        return vertex

    def edge(self, edge: Edge) -> "DAG":
        """Add an edge. Errors that need only this edge are raised at once."""
        self._check_edge(edge, self._edges)
        self._edges.append(edge)
        return self

    # -- reading ----------------------------------------------------------------------------
    def get_vertex(self, name: str) -> Vertex:
        try:
            return self._vertices[name]
        except KeyError:
            raise KeyError(f"no vertex named {name!r} in the DAG") from None

    @property
    def vertices(self) -> list[Vertex]:
        """Vertices in insertion order."""
        return list(self._vertices.values())

    @property
    def edges(self) -> list[Edge]:
        return list(self._edges)

    def inbound_edges(self, name: str) -> list[Edge]:
        """Edges into the named vertex, by destination ordinal."""
        return sorted((e for e in self._edges if e.dest_name == name), key=lambda e: e.dest_ordinal)

    def outbound_edges(self, name: str) -> list[Edge]:
        """Edges out of the named vertex, by source ordinal."""
        return sorted((e for e in self._edges if e.source_name == name),
                      key=lambda e: e.source_ordinal)

    def __iter__(self) -> Iterator[Vertex]:
        """Vertices in topological order (validates the DAG first)."""
        return iter(self.validate())

    def __len__(self) -> int:
        return len(self._vertices)

    # -- validation -------------------------------------------------------------------------
    def validate(self) -> list[Vertex]:
        """Check the whole DAG and return its vertices in topological order.

        Raises DagValidationError for: an empty DAG, an edge without destination or to a vertex
        not in this DAG, a self-loop, two edges between the same pair, an ordinal used twice or
        a gap in the ordinals of a vertex, a hash-based partitioner on a distributed edge, and
        a cycle (naming the vertices on it).
        """
        if not self._vertices:
            raise DagValidationError("the DAG has no vertices")
        checked: list[Edge] = []
        for edge in self._edges:
            self._check_edge(edge, checked)
            checked.append(edge)
        for name in self._vertices:
            _check_ordinals_contiguous(name, "input", [e.dest_ordinal for e in self.inbound_edges(name)])
            _check_ordinals_contiguous(name, "output",
                                       [e.source_ordinal for e in self.outbound_edges(name)])
        return self._topological_order()

    def _check_edge(self, edge: Edge, others: list[Edge]) -> None:
        if not isinstance(edge, Edge):
            raise DagValidationError(f"dag.edge() needs an Edge, got {edge!r}")
        if edge.dest is None:
            raise DagValidationError(
                f"edge from {edge.source.name!r} has no destination: call .to(vertex)")
        for end, vertex in (("source", edge.source), ("destination", edge.dest)):
            if self._vertices.get(vertex.name) is not vertex:
                raise DagValidationError(
                    f"edge {edge.source.name!r} -> {edge.dest.name!r}: {end} vertex"
                    f" {vertex.name!r} is not in this DAG")
        if edge.source is edge.dest:
            raise DagValidationError(f"self-loop on vertex {edge.source.name!r} is not allowed")
        for other in others:
            if other is edge:
                raise DagValidationError(f"{edge!r} was added twice")
            if other.source is edge.source and other.dest is edge.dest:
                raise DagValidationError(
                    f"two edges between {edge.source.name!r} and {edge.dest.name!r}:"
                    " at most one edge may join a pair of vertices")
            if other.source is edge.source and other.source_ordinal == edge.source_ordinal:
                raise DagValidationError(
                    f"output ordinal {edge.source_ordinal} of vertex {edge.source.name!r} is"
                    f" already used by the edge to {other.dest_name!r}")
            if other.dest is edge.dest and other.dest_ordinal == edge.dest_ordinal:
                raise DagValidationError(
                    f"input ordinal {edge.dest_ordinal} of vertex {edge.dest.name!r} is"
                    f" already used by the edge from {other.source_name!r}")
        if edge.routing_policy is RoutingPolicy.ISOLATED and edge.is_distributed():
            raise DagValidationError(
                f"edge {edge.source.name!r} -> {edge.dest.name!r} is isolated and distributed:"
                " isolated edges connect processors of one member only")
        if (edge.routing_policy is RoutingPolicy.PARTITIONED and edge.is_distributed()
                and not getattr(edge.partitioner, "is_stable", True)):
            raise DagValidationError(
                f"edge {edge.source.name!r} -> {edge.dest.name!r} is distributed but its"
                f" partitioner {edge.partitioner!r} is not stable across processes; use the"
                " default partitioner")
        if edge.all_to_one_key is not None and edge.is_distributed():
            try:
                canonical_bytes(edge.all_to_one_key)
            except UnsupportedKeyError as unsupported:
                raise DagValidationError(
                    f"edge {edge.source.name!r} -> {edge.dest.name!r} is distributed all-to-one:"
                    f" {unsupported}") from None

    def _topological_order(self) -> list[Vertex]:
        indegree = {name: 0 for name in self._vertices}
        for edge in self._edges:
            indegree[edge.dest.name] += 1
        ready = [name for name, degree in indegree.items() if degree == 0]
        order: list[Vertex] = []
        while ready:
            name = ready.pop(0)
            order.append(self._vertices[name])
            for edge in self.outbound_edges(name):
                indegree[edge.dest.name] -= 1
                if indegree[edge.dest.name] == 0:
                    ready.append(edge.dest.name)
        if len(order) < len(self._vertices):
            cycle = self._find_cycle({n for n, d in indegree.items() if d > 0})
            raise DagValidationError("the DAG has a cycle: " + " -> ".join(cycle))
        return order

    def _find_cycle(self, candidates: set[str]) -> list[str]:
        """A path through vertices left after Kahn's algorithm that closes on itself."""
        successors = {name: [e.dest.name for e in self.outbound_edges(name)
                             if e.dest.name in candidates] for name in candidates}
        start = min(candidates)
        path, position = [start], {start: 0}
        while True:
            nxt = successors[path[-1]][0]
            if nxt in position:
                return path[position[nxt]:] + [nxt]
            position[nxt] = len(path)
            path.append(nxt)

    # -- DOT ----------------------------------------------------------------------------------
    def to_dot(self, default_local_parallelism: int = LOCAL_PARALLELISM_USE_DEFAULT,
               default_queue_size: int = DEFAULT_QUEUE_SIZE) -> str:
        """The DAG in Jet's DOT (graphviz) format.

        Vertices print ``[localParallelism=N]`` (``default`` when unknown); edges print their
        label (omitted for local unicast), ``headlabel`` when the destination has several
        inputs, ``taillabel`` when the source has several outputs, and ``queueSize``. An edge
        from ``X-prepare`` to ``X`` sits in its own ``subgraph cluster_<k>``.
        """
        order = self.validate()
        lines = ["digraph DAG {"]
        for vertex in order:
            lp = vertex.determine_local_parallelism(default_local_parallelism)
            shown = "default" if lp == LOCAL_PARALLELISM_USE_DEFAULT else str(lp)
            lines.append(f'\t"{_escape(vertex.name)}" [localParallelism={shown}];')
        outputs = {name: 0 for name in self._vertices}
        inputs = {name: 0 for name in self._vertices}
        for edge in self._edges:
            outputs[edge.source.name] += 1
            inputs[edge.dest.name] += 1
        cluster_count = 0
        for vertex in order:
            for edge in (e for e in self._edges if e.source is vertex):
                attributes = []
                if edge.label():
                    attributes.append(f'label="{edge.label()}"')
                if inputs[edge.dest.name] > 1:
                    attributes.append(f"headlabel={edge.dest_ordinal}")
                if outputs[edge.source.name] > 1:
                    attributes.append(f"taillabel={edge.source_ordinal}")
                queue_size = edge.config.queue_size if edge.config else default_queue_size
                attributes.append(f"queueSize={queue_size}")
                line = (f'\t"{_escape(edge.source.name)}" -> "{_escape(edge.dest.name)}"'
                        f' [{", ".join(attributes)}];')
                if edge.source.name == edge.dest.name + FIRST_STAGE_VERTEX_NAME_SUFFIX:
                    lines.append(f"\tsubgraph cluster_{cluster_count} {{")
                    lines.append("\t" + line)
                    lines.append("\t}")
                    cluster_count += 1
                else:
                    lines.append(line)
        lines.append("}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"DAG(vertices={list(self._vertices)}, edges={len(self._edges)})"


def _check_ordinals_contiguous(name: str, side: str, ordinals: list[int]) -> None:
    expected = list(range(len(ordinals)))
    if sorted(ordinals) != expected:
        raise DagValidationError(
            f"{side} ordinals of vertex {name!r} must be 0..{len(ordinals) - 1} without gaps,"
            f" got {sorted(ordinals)}")


def _escape(name: str) -> str:
    return name.replace('"', '\\"')
