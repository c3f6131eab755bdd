"""The package's imports go one way: no cycle, and no arrow from a lower room to a higher one.

Every ``import`` counts, at module level, inside functions and under ``TYPE_CHECKING`` alike: a
cycle hidden in a function is still a cycle a reader must untangle. The order of the rooms is
written once, here (``docs/architecture.md`` draws it).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ROOMS = [  # lowest first; a module belongs to the room of its longest matching prefix
    "jet.contract",  # what the engine and the operator share
    "jet.job_config",  # the public model: a job's configuration ...
    "jet.core",  # ... and the DAG, processors, functions
    "jet.execution",  # inside one member
    "jet.snapshot",  # the snapshot store
    "jet.cluster.links",  # how members reach each other
    "jet.cluster.edges",  # distributed edges
    "jet.cluster.executions",  # a member's part of each job
    "jet.cluster.coordination",  # member 0's job coordination
    "jet.dashboard",  # the web dashboard over a member
    "jet.cluster",  # the member process, its HTTP side and the client
    "jet.cluster.local",  # member processes on this machine
    "jet.pipeline",  # the Pipeline API and planner
    "jet.connectors",  # sources and sinks (Spark's connector among them)
    "jet.spark",  # the Spark side of a job, planned over whole pipelines
    "jet",  # the commands and the local runner at the top
]
OPERATOR_MAY_IMPORT = ("jet.contract", "jet.cluster.client", "jet.cluster.links.auth")
"""All the operator imports of the engine: the shared names, and the cluster's client (with its
TLS settings) to steer a job; the engine imports nothing of the operator."""


def modules(source_root: Path, package: str) -> dict[str, Path]:
    found = {}
    for path in (source_root / package).rglob("*.py"):
        parts = list(path.relative_to(source_root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports, anywhere in its body."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    everything = {**modules(ROOT / "member", "jet"), **modules(ROOT / "operator", "jet_operator")}
    known = set(everything)
    return {name: imports(name, path, known) for name, path in everything.items()}


def room(module: str) -> int:
    matches = [i for i, prefix in enumerate(ROOMS) if module == prefix or module.startswith(prefix + ".")]
    return max(matches, key=lambda i: len(ROOMS[i]))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    assert cycles(graph()) == []


def test_imports_never_go_up_a_room():
    upward = sorted(f"{a} ({ROOMS[room(a)]}) imports {b} ({ROOMS[room(b)]})"
                    for a, targets in graph().items() if a.startswith("jet.") or a == "jet"
                    for b in targets if b.startswith("jet") and not b.startswith("jet_operator")
                    and room(b) > room(a))
    assert upward == []


def test_the_operator_and_the_engine_share_only_the_contract():
    edges = graph()
    engine_to_operator = sorted(f"{a} imports {b}" for a, targets in edges.items() if not a.startswith("jet_operator")
                                for b in targets if b.startswith("jet_operator"))
    operator_to_engine = sorted(f"{a} imports {b}" for a, targets in edges.items() if a.startswith("jet_operator")
                                for b in targets if not b.startswith("jet_operator") and b not in OPERATOR_MAY_IMPORT)
    assert engine_to_operator == [] and operator_to_engine == []


def test_the_scan_finds_a_cycle_hidden_in_a_function(tmp_path):
    """The test above can fail: a function-level import that closes a loop is a cycle."""
    package = tmp_path / "jet"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from jet import b\n")
    (package / "b.py").write_text("def f():\n    from jet.a import g\n")
    found = modules(tmp_path, "jet")
    edges = {name: imports(name, path, set(found)) for name, path in found.items()}
    assert cycles(edges) == [["jet.a", "jet.b"]]
    assert room("jet.cluster.links.auth") < room("jet.cluster.member") < room("jet.cluster.local.fork_server")
