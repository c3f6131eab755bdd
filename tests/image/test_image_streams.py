"""The streaming examples in the image: a stream that ends completes, one that does not runs for
its ``--timeout`` and stops with exit code 0. Needs ``$JET_TEST_IMAGE`` (see ``test_image.py``)."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator

import pytest

from tests.image.buildah import Container, image_under_test
from tests.image.oracles import EXAMPLES

RUN_BOUND_S = 600.0


@pytest.fixture(scope="module")
def container() -> Iterator[Container]:
    box = Container(image_under_test())
    yield box
    box.remove()


def _jet_run(container: Container, argv: list[str]) -> str:
    done = container.run(["jet", "run", "--members", "1", *argv], timeout=RUN_BOUND_S)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _session_count() -> int:
    """The sessions of the example's clicks, counted in plain Python (a gap of at least the
    timeout starts a new one)."""
    spec = importlib.util.spec_from_file_location("stream_sessions", EXAMPLES / "stream_sessions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    times: dict[str, list[int]] = {}
    for timestamp, (user, _) in module.clicks(20):
        times.setdefault(user, []).append(timestamp)
    count = 0
    for stamps in times.values():
        stamps.sort()
        count += 1 + sum(1 for a, b in zip(stamps, stamps[1:]) if b - a >= module.SESSION_TIMEOUT_MS)
    return count


def test_a_stream_that_ends_completes(container: Container) -> None:
    output = _jet_run(container, ["examples/stream_sessions.py", "20", "--timeout", "120s"])
    assert "job completed in" in output
    assert f"result 'sessions': {_session_count()} item(s)" in output


def test_a_stream_stops_after_its_timeout_with_exit_0(container: Container) -> None:
    output = _jet_run(container, ["examples/stream_trades.py", "--timeout", "5s"])
    assert "streaming job stopped after its run time (--timeout 5 s)" in output
    (count,) = re.findall(r"result 'averages': (\d+) item\(s\)", output)
    assert int(count) > 0
