"""Shared test configuration."""

import os
import shutil
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


def pytest_collection_finish(session) -> None:
    """Start the tests' SparkSession before any test starts gRPC threads in this process, if a
    collected test needs it. PySpark launches its JVM with a ``preexec_fn``, i.e. Python code in
    a forked child, and a fork taken while gRPC's threads run can die there ("Java gateway
    process exited before sending its port number", seen once in a full run)."""
    if any("spark" in getattr(item, "fixturenames", ()) for item in session.items):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            return  # the tests that need it skip
        if shutil.which("java") is None:
            return  # the tests that need it skip (fail under CI), naming the package
        from tests.spark.conftest import shared_spark_session
        shared_spark_session()


def pytest_sessionfinish(session, exitstatus) -> None:
    from tests.spark.conftest import stop_shared_spark_session
    stop_shared_spark_session()
