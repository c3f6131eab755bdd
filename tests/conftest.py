"""Shared test configuration."""

from pathlib import Path

#: The repository root, so tests find examples/ and member/ wherever pytest is started.
REPO_ROOT = Path(__file__).resolve().parent.parent
