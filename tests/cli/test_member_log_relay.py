"""On a terminal `jet run`'s members log through `jet run`'s own stderr, so the live table's
redirection prints their lines above the table instead of letting them draw over it."""

from __future__ import annotations

import logging
import sys

from jet.local_run import ClusterBoot
from jet.run_logging import CurrentStderr


def test_member_log_lines_reach_this_process_s_stderr_through_the_relay(capsys):
    root = logging.getLogger()
    level, _ = root.level, root.setLevel(logging.INFO)  # the members log at this process's level
    try:
        boot = ClusterBoot(2, 1, relay_member_logs=True)
    finally:
        root.setLevel(level)
    try:
        cluster = boot.get()
        assert cluster.log_paths and all(path.parent == boot._logs.directory for path in cluster.log_paths)
    finally:
        boot.close()
    err = capsys.readouterr().err
    assert "member 0 " in err and "member 1 " in err  # their start-up and shutdown lines
    assert not boot._logs.directory.exists()


def test_log_records_are_written_to_stderr_as_it_is_when_they_are_logged():
    """A live table swaps sys.stderr for a proxy that prints above it; a handler bound to the old
    stream wrote over the table."""
    handler = logging.StreamHandler(CurrentStderr())
    record = logging.LogRecord("jet.test", logging.INFO, __file__, 1, "above the table", None, None)

    class Proxy:
        def __init__(self):
            self.text = ""

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    original, sys.stderr = sys.stderr, Proxy()
    try:
        handler.emit(record)
        written = sys.stderr.text
    finally:
        sys.stderr = original
    assert written == "above the table\n"
