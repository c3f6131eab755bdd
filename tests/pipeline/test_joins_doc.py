"""docs/joins.md's first example runs as it stands and gives what its comments say."""

from pathlib import Path

from tests.pipeline.support import run_pipeline

DOC = Path(__file__).resolve().parents[2] / "docs" / "joins.md"


def test_the_documented_batch_example():
    text = DOC.read_text()
    code = text[text.index("```python\n") + len("```python\n"):text.index("```\n", text.index("```python\n") + 10)]
    namespace: dict = {}
    exec(compile(code, str(DOC), "exec"), namespace)
    results = run_pipeline(namespace["pipeline"](), 2)
    assert sorted(results["per_customer"]) == [("ann", (2, 30)), ("bob", (1, 0)), ("cat", (0, 7))]
    assert sorted(results["enriched"]) == [("o1", "Oslo", "p1"), ("o2", "Rome", None), ("o3", "Oslo", "p1")]
