"""Running processes inside the project's image with buildah (``podman run`` does not work on
these machines; ``buildah run --isolation chroot`` does, see docs/operator.md).

The image to test is named by ``$JET_TEST_IMAGE`` (``.ci/run`` builds it and sets it). A
developer without buildah or the image gets a skip that says so; in CI (``$CI`` true) a
missing image fails the tests instead, so the image tests can never be skipped silently.
"""

from __future__ import annotations

import os
import signal
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from tests.system_packages import require_program, unavailable

IMAGE_ENV = "JET_TEST_IMAGE"
STOP_GRACE_S = 20.0
# Spark needs the host name to resolve, as a pod's does (the kubelet writes it to /etc/hosts).
POD_HOSTNAME = "jet-pod"


def _unavailable(reason: str) -> None:
    unavailable(f"image tests: {reason}")


def image_under_test() -> str:
    """The tag in $JET_TEST_IMAGE, checked to exist; skips (fails in CI) when it cannot be used."""
    tag = os.environ.get(IMAGE_ENV, "").strip()
    if not tag:
        _unavailable(f"${IMAGE_ENV} is not set (build the image with docker/build-without-daemon.sh "
                     f"and set {IMAGE_ENV} to its tag)")
    require_program("buildah", "buildah")
    found = subprocess.run(["buildah", "inspect", "--type", "image", tag], capture_output=True, text=True)
    if found.returncode != 0:
        _unavailable(f"image {tag!r} not found by buildah: {found.stderr.strip()}")
    return tag


class Container:
    """A working container of the image: run commands in it, mount host paths into it."""

    def __init__(self, image: str) -> None:
        self.image = image
        self.name = subprocess.run(["buildah", "from", "--add-host", f"{POD_HOSTNAME}:127.0.0.1", image],
                                   capture_output=True, text=True, check=True).stdout.strip()

    def remove(self) -> None:
        """Delete the working container (the image stays)."""
        subprocess.run(["buildah", "rm", self.name], capture_output=True, check=False)

    def working_directory(self) -> str:
        """The image's WORKDIR (where relative paths resolve)."""
        return subprocess.run(["buildah", "inspect", "--format", "{{.OCIv1.Config.WorkingDir}}", self.name],
                              capture_output=True, text=True, check=True).stdout.strip() or "/"

    def host_path(self, path: str) -> str:
        """Where the container's ``path`` is on the host (the container's file system mounted);
        ``buildah rm`` unmounts it."""
        root = subprocess.run(["buildah", "mount", self.name], capture_output=True, text=True,
                              check=True).stdout.strip()
        return f"{root}{path}"

    def command(self, argv: Sequence[str], mounts: Mapping[str, str] = {},
                env: Mapping[str, str] = {}, read_only: Sequence[str] = ()) -> list[str]:
        """The ``buildah run`` command line running ``argv`` in the container as the image's
        user and working directory; ``mounts`` maps container paths to host paths."""
        line = ["buildah", "run", "--isolation", "chroot", "--hostname", POD_HOSTNAME]
        for target, source in mounts.items():
            options = ",ro" if target in read_only else ",rw"  # buildah's default is read-only
            line += ["--mount", f"type=bind,src={source},dst={target}{options}"]
        for key, value in env.items():
            line += ["--env", f"{key}={value}"]
        return [*line, self.name, "--", *argv]

    def run(self, argv: Sequence[str], timeout: float, **options: object) -> subprocess.CompletedProcess:
        """Run ``argv`` to its end (failing after ``timeout`` seconds, with what it printed);
        its output is captured as text."""
        process = subprocess.Popen(self.command(argv, **options), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop_group(process)
            stdout, stderr = process.communicate()
            raise AssertionError(f"{' '.join(argv)} did not end within {timeout:.0f} s:\n{stdout}\n{stderr}")
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def real_paths(self, paths: Sequence[str]) -> list[str]:
        """``paths`` with the image's symbolic links resolved. A bind mount whose target passes
        through an absolute link (``/var/run`` -> ``/run``) would otherwise land on the host."""
        result = self.run(["realpath", "-m", *paths], timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout.split()

    @contextmanager
    def background(self, argv: Sequence[str], log: Path, **options: object) -> Iterator[subprocess.Popen]:
        """Run ``argv`` in the background, output to ``log``; stopped with everything it
        started on exit."""
        with open(log, "wb") as out:
            process = subprocess.Popen(self.command(argv, **options), stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        try:
            yield process
        finally:
            _stop_group(process)


def _stop_group(process: subprocess.Popen) -> None:
    """Stop a process started in a session of its own and everything it started: buildah
    leaves the command in the caller's process group, and a SIGTERM to ``buildah run`` alone
    leaves it running."""
    _signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(process.pid, signal.SIGKILL)  # whatever outlived buildah
    process.wait()


def _signal_group(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        pass
