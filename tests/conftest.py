"""Shared test configuration."""

import os
import tempfile
from pathlib import Path

#: The repository root, so tests find examples/ and member/ wherever pytest is started.
REPO_ROOT = Path(__file__).resolve().parent.parent

# Set here, in the conftest pytest always loads first, because both are read once at import
# and any test module may import the operator (tests/image does) before tests/operator's
# conftest runs: Kopf fixes the timer interval when the handlers module is imported, and the
# kubernetes package (Kopf's login) reads $KUBECONFIG when it is imported.
os.environ.setdefault("JET_OPERATOR_STATUS_INTERVAL_SECONDS", "0.3")
#: The kubeconfig the operator tests rewrite per test to point at their API emulator.
KUBECONFIG = Path(tempfile.mkdtemp(prefix="jet-operator-tests-")) / "kubeconfig"
os.environ["KUBECONFIG"] = str(KUBECONFIG)
