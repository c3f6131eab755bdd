"""``jet manifest``: a ready-to-apply JetJob with a pipeline file's code inlined.

The code runs as it is in the project's image: relative paths resolve in the member's working
directory, ``/home/jet``, which carries the repository's ``examples/`` (data included), so
``jet manifest examples/wordcount.py`` reads the same ``examples/data/...`` there as it does
in a clone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import yaml

from jet import contract
from jet.contract import DEFAULT_IMAGE


class _LiteralStr(str):
    """A string dumped in YAML's literal block style (code stays readable)."""


def _literal_representer(dumper: yaml.SafeDumper, value: _LiteralStr) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")


class _ManifestDumper(yaml.SafeDumper):
    pass


_ManifestDumper.add_representer(_LiteralStr, _literal_representer)

_HEADER = (
    "# Made by `jet manifest`. Relative paths in the code resolve in the member's working\n"
    "# directory, /home/jet in the project's image, which carries examples/ (data included).\n"
)


def build_jetjob_manifest(
    pipeline_file: str,
    name: str,
    replicas: int = 2,
    image: str = DEFAULT_IMAGE,
    entrypoint: str = contract.DEFAULT_ENTRYPOINT,
    args: Iterable[str] = (),
    spark: bool = False,
) -> str:
    """The YAML of a JetJob named ``name`` running ``pipeline_file``'s code inline.

    ``spark`` gives the job its Spark drivers (``spec.spark`` with the CRD's defaults), which a
    job with Spark sources or sinks needs. Raises ValueError for a replica count below 1 (the
    CRD would refuse it anyway), and for a name Kubernetes would refuse for a JetJob
    (:func:`jet.contract.job_name_problem`).
    """
    problem = contract.job_name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, not {replicas}")
    code = Path(pipeline_file).read_text(encoding="utf-8")
    if not code.endswith("\n"):
        code += "\n"
    pipeline: dict[str, Any] = {"code": _LiteralStr(code), "entrypoint": entrypoint}
    args = [str(arg) for arg in args]
    if args:
        pipeline["args"] = args
    spec: dict[str, Any] = {"image": image, "pipeline": pipeline, "members": {"replicas": replicas}}
    if spark:
        spec["spark"] = {}
    document = {
        "apiVersion": f"{contract.API_GROUP}/{contract.API_VERSION}",
        "kind": contract.KIND,
        "metadata": {"name": name},
        "spec": spec,
    }
    return _HEADER + yaml.dump(document, Dumper=_ManifestDumper, sort_keys=False)
