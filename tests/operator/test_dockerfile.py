"""The Dockerfile, read as text (no Docker daemon here): the properties the image must have."""

from __future__ import annotations

import os
import re
import subprocess

from tests.operator.crdschema import ROOT

DOCKERFILE = ROOT / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"


def stages() -> list[tuple[str, list[str]]]:
    """(FROM line, instructions) per stage, with continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    result: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.upper().startswith("FROM "):
            result.append((line, []))
        elif result:
            result[-1][1].append(line)
    return result


def test_base_image_can_be_swapped_and_defaults_to_python_3_11() -> None:
    first = next(line for line in DOCKERFILE.read_text().splitlines() if line.strip() and not line.startswith("#"))
    assert re.fullmatch(r"ARG BASE=python:3\.11[-\w.]*", first.strip())
    assert all(line.startswith("FROM ${BASE}") for line, _ in stages())


def test_multi_stage_build_leaves_compilers_behind() -> None:
    (build_from, build), (final_from, final) = stages()
    assert build_from.endswith("AS build") and final_from.endswith("AS runtime")
    assert any('pip install --no-cache-dir -c constraints.txt ".[spark,operator,kafka,postgres]"' in step for step in build)
    final_text = "\n".join(final)
    for tool in ("gcc", "g++", "build-essential"):
        assert tool not in final_text
    assert "COPY --from=build /opt/jet /opt/jet" in final


def test_runtime_has_a_headless_jre_for_pyspark() -> None:
    (_, final) = stages()[-1]
    assert any("apt-get install" in step and "openjdk-17-jre-headless" in step for step in final)
    assert any("JAVA_HOME=" in step for step in final)


def test_runs_as_a_non_root_user() -> None:
    (_, final) = stages()[-1]
    users = [step.split(None, 1)[1] for step in final if step.upper().startswith("USER ")]
    assert users, "no USER in the final stage"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    assert user == "10001"  # the fsGroup/uid the operator's pod templates assume


def test_entrypoints() -> None:
    (_, final) = stages()[-1]
    assert 'ENTRYPOINT ["jet-entrypoint"]' in final
    script = ENTRYPOINT.read_text()
    assert os.access(ENTRYPOINT, os.X_OK)
    assert 'exec jet "$@"' in script
    assert "KubernetesExecutorBackend" in script
    subprocess.run(["bash", "-n", str(ENTRYPOINT)], check=True)


def test_examples_with_their_data_are_in_the_working_directory() -> None:
    """`jet run examples/...` and `jet manifest examples/...` output read examples/data/...
    relative to the working directory: the image carries examples/ there (tests/image runs them)."""
    (_, final) = stages()[-1]
    workdirs = [step.split(None, 1)[1] for step in final if step.upper().startswith("WORKDIR ")]
    assert workdirs and workdirs[-1] == "/home/jet"
    assert "COPY examples /home/jet/examples" in final
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert not any(pattern.strip("/*") in ("examples", "examples/data") for pattern in ignored)


def test_the_image_constraints_pin_every_dependency_within_pyproject() -> None:
    """docker/constraints.txt pins each requirement of the image's install (the project's own,
    its spark, operator, kafka and postgres extras) to a version pyproject.toml allows; the image installs
    with it."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = {}
    for line in (ROOT / "docker" / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version.strip()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for text in project["dependencies"] + extras["spark"] + extras["operator"] + extras["kafka"] + extras["postgres"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"docker/constraints.txt does not pin {requirement.name}"
        assert requirement.specifier.contains(pins[name], prereleases=True), \
            f"docker/constraints.txt pins {name}=={pins[name]}, outside pyproject.toml's {requirement}"
    copies = [step for _, steps in stages() for step in steps if "constraints.txt" in step]
    assert any(step.startswith("COPY docker/constraints.txt") for step in copies)
