"""A ``SPARK_HOME`` for local sessions whose Python workers load PySpark from bytecode.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's zip first on the path of every
Python process it starts: the task workers' daemon and each Python data source planning step
(lookup, create, write, plan the read, commit: a fresh daemon each). With PySpark installed by
pip, ``SPARK_HOME`` is the installed package itself, so those zips hold the same modules as the
package around them, but Python cannot cache bytecode for a zip and compiles PySpark from
source in every one of those processes: it doubled the CPU the Python workers of a small
Spark -> Jet -> Spark run took (bench/README.md, "Spark's Python start-up").

:func:`bytecode_spark_home` builds, once per installed PySpark, a directory that links to
everything in the package but ``python/``; a local session started with it as ``SPARK_HOME``
runs the same Spark, and its Python workers, finding no zip, import the installed PySpark and
py4j with their ``.pyc`` files.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile

#: What the directory must not link: where Spark finds the zips.
ZIP_DIRECTORY = "python"


def installed_pyspark() -> str | None:
    """The directory of a pip-installed PySpark (one that ships its jars and zips), else None."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return None
    package = os.path.dirname(spec.origin)
    if not (os.path.isdir(os.path.join(package, "jars"))
            and os.path.isfile(os.path.join(package, ZIP_DIRECTORY, "lib", "pyspark.zip"))):
        return None
    py4j = importlib.util.find_spec("py4j")
    if py4j is None or py4j.origin is None or not os.path.isfile(py4j.origin):
        return None  # py4j only inside Spark's zip: the workers need the zip
    return package


def bytecode_spark_home(cache_dir: str | None = None) -> str | None:
    """The directory to use as ``SPARK_HOME`` (created on first use), or None when PySpark is
    not a pip install this applies to."""
    package = installed_pyspark()
    if package is None:
        return None
    digest = hashlib.sha256(os.path.realpath(package).encode()).hexdigest()[:12]
    home = os.path.join(cache_dir or tempfile.gettempdir(), f"jet-spark-home-{os.getuid()}-{digest}")
    if _usable(home):
        return home
    building = tempfile.mkdtemp(prefix=os.path.basename(home) + ".", dir=os.path.dirname(home))
    for name in os.listdir(package):
        if name not in (ZIP_DIRECTORY, "__pycache__"):
            os.symlink(os.path.join(package, name), os.path.join(building, name))
    try:
        os.rename(building, home)
    except OSError:  # another process made it first
        shutil.rmtree(building, ignore_errors=True)
    return home if _usable(home) else None


def _usable(home: str) -> bool:
    """Built, and by this user alone (the name in the shared temp directory is predictable)."""
    try:
        info = os.lstat(home)
    except OSError:
        return False
    return (info.st_uid == os.getuid() and not info.st_mode & 0o022
            and os.path.isdir(os.path.join(home, "jars")))
