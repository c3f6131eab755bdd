"""The README's and docs/' snippets as written: every Python block compiles, every complete
pipeline runs with `jet run`, and every `jet` command line names a real command and real files.

A snippet may leave parts out with a line holding only ``...`` (optionally closing brackets)."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from tests.cli.support import jet_command, jet_env
from tests.conftest import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
SHELL_BLOCK = re.compile(r"```(?:sh|bash|shell)\n(.*?)```", re.S)
ELLIPSIS_LINE = re.compile(r"^(\s*)\.\.\.(\W*)$", re.M)
FILE_ARGUMENT = re.compile(r"^(examples|bench|docker|charts|crds|docs)/[\w./-]+$")


def blocks(pattern: re.Pattern) -> list[tuple[str, int, str]]:
    """(document, line, text) of every block the pattern matches."""
    found = []
    for document in DOCS:
        text = document.read_text()
        for match in pattern.finditer(text):
            found.append((document.name, text[:match.start()].count("\n") + 1, match.group(1)))
    return found


PYTHON_SNIPPETS = blocks(PYTHON_BLOCK)
SHELL_LINES = [(name, line + offset + 1, command.strip())
               for name, line, block in blocks(SHELL_BLOCK)
               for offset, command in enumerate(block.splitlines()) if command.strip()]


def snippet_id(snippet: tuple[str, int, str]) -> str:
    return f"{snippet[0]}:{snippet[1]}"


@pytest.mark.parametrize("snippet", PYTHON_SNIPPETS, ids=snippet_id)
def test_every_python_snippet_compiles(snippet):
    name, line, code = snippet
    code = ELLIPSIS_LINE.sub(lambda m: m.group(1) + "pass" if not m.group(2) else m.group(1) + m.group(2), code)
    compile(code, f"{name}:{line}", "exec")


COMPLETE_PIPELINES = [s for s in PYTHON_SNIPPETS
                      if re.search(r"^def pipeline\(", s[2], re.M) and "from jet import" in s[2]
                      and not re.search(r"kafka|postgres|spark|os\.environ", s[2], re.I)]


@pytest.mark.parametrize("snippet", COMPLETE_PIPELINES, ids=snippet_id)
def test_every_complete_pipeline_runs_with_jet_run(snippet, tmp_path):
    name, line, code = snippet
    job = tmp_path / "snippet.py"
    job.write_text(code)
    args = [str(REPO_ROOT / "examples" / "data" / "*.txt")] if "examples/data" in code else []
    result = subprocess.run(jet_command("run", "--members", 2, job, *args, "--timeout", "3s"), cwd=tmp_path,
                            env=jet_env(), capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, f"{name}:{line}\n{result.stderr[-3000:]}"


def jet_subcommands(*path: str) -> set[str]:
    help_text = subprocess.run(jet_command(*path, "--help"), env=jet_env(), capture_output=True, text=True,
                               timeout=60, cwd=REPO_ROOT).stdout
    commands = help_text.split("Commands:", 1)[1] if "Commands:" in help_text else ""
    return {line.split()[0] for line in commands.splitlines() if line.strip()}


JET_LINES = [s for s in SHELL_LINES if re.match(r"(\S+=\S+\s+)*jet\s", s[2])]


def test_every_jet_command_line_names_a_command_and_files_that_exist():
    commands, job_commands = jet_subcommands(), jet_subcommands("job")
    problems = []
    for name, line, text in JET_LINES:
        words = [w for w in shlex.split(text.split(" #")[0].split("|")[0]) if "=" not in w or w.startswith("-")]
        rest = words[words.index("jet") + 1:]
        command = next((w for w in rest if not w.startswith("-")), None)
        if command not in commands:
            problems.append(f"{name}:{line}: `jet {command}` is not a command ({text})")
            continue
        if command == "job":
            after = rest[rest.index("job") + 1:]
            sub = next((w for w in after if not w.startswith("-") and not re.match(r"[\w.-]+:\d+$", w)), None)
            if sub not in job_commands:
                problems.append(f"{name}:{line}: `jet job {sub}` is not a command ({text})")
        for word in rest:
            named_file = FILE_ARGUMENT.match(word) or (word.endswith((".py", ".yaml")) and word.islower())
            if named_file and not (REPO_ROOT / word).exists():  # (FILE.py and the like are placeholders)
                problems.append(f"{name}:{line}: {word} does not exist ({text})")
    assert JET_LINES and problems == []


def test_files_the_shell_snippets_apply_or_run_exist():
    problems = [f"{name}:{line}: {word} does not exist ({text})" for name, line, text in SHELL_LINES
                for word in text.split() if FILE_ARGUMENT.match(word) and not (REPO_ROOT / word).exists()]
    assert problems == []
