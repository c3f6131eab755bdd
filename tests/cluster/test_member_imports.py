"""A member process starts without importing what only clients, Spark or `jet run` need."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_AT_START = ["pyspark", "pandas", "pyarrow", "fsspec", "rich", "kopf", "jet.pipeline", "jet.local_run",
                "jet.connectors.spark.stages", "jet.connectors.sources"]


def _loaded_after(code: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "member"), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
                         env=env, capture_output=True, text=True, check=True, timeout=120).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_the_member_command_imports_none_of_the_heavy_modules():
    # What `python -m jet.cli member` imports before it serves (the Spark hub answers from the start).
    loaded = _loaded_after("import jet.cli, jet.cluster.member_main, jet.connectors.spark.hub")
    assert "jet.cluster.member" in loaded  # the check sees a real member import
    assert sorted(loaded & set(NOT_AT_START)) == []


def test_the_public_names_still_resolve_on_first_use():
    loaded = _loaded_after("import jet\nfrom jet.connectors.spark.stages import SparkSource\n"
                           "assert jet.Pipeline.__name__ == 'Pipeline' and jet.Sources.__name__ == 'Sources'\n"
                           "assert SparkSource.__name__ == 'SparkSource' and 'Pipeline' in dir(jet)")
    assert {"jet.pipeline", "jet.connectors.spark.stages"} <= loaded
