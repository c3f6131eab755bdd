"""The live progress of a stream: rate, watermark lag, late events, latest results; log lines
when not on a terminal."""

from __future__ import annotations

import io
import logging
import threading

from rich.console import Console

from jet.core.special_items import MIN_TIMESTAMP
from jet.progress import ProgressDisplay, latest_results_table, metrics_line, metrics_table

NOW_MS = 1_700_000_000_000
STREAM = {
    "source": {"in": 0, "out": 5_000, "coalescedWm": MIN_TIMESTAMP, "lastForwardedWm": NOW_MS - 120,
               "lateEventsDropped": 0},
    "window": {"in": 5_000, "out": 10, "coalescedWm": NOW_MS - 1_250, "lastForwardedWm": NOW_MS - 1_250,
               "lateEventsDropped": 17},
    "sink": {"in": 10, "out": 0, "coalescedWm": MIN_TIMESTAMP, "lastForwardedWm": MIN_TIMESTAMP,
             "lateEventsDropped": 0},
}
BEFORE = {"source": {"in": 0, "out": 3_000}, "window": {"in": 3_000, "out": 8}, "sink": {"in": 8, "out": 0}}


def rendered(renderable) -> str:
    console = Console(file=io.StringIO(), width=120, force_terminal=False)
    console.print(renderable)
    return console.file.getvalue()


def row(text: str, vertex: str) -> list[str]:
    (line,) = [line for line in text.splitlines() if f" {vertex} " in line]
    return [cell.strip() for cell in line.strip("│┃ ").split("│")]


def test_the_table_shows_rate_watermark_lag_and_late_events_per_vertex():
    text = rendered(metrics_table(STREAM, 10.0, BEFORE, interval_s=2.0, title="trades", wall_ms=NOW_MS))
    assert "wm lag ms" in text and "late" in text
    assert row(text, "source") == ["source", "0", "5,000", "1,000", "120", "0"]  # 2,000 items in 2 s
    assert row(text, "window") == ["window", "5,000", "10", "1", "1,250", "17"]
    assert row(text, "sink") == ["sink", "10", "0", "0", "", "0"]  # no watermark: blank


def test_a_batch_table_has_no_stream_columns_and_its_summary_averages_the_rate():
    batch = {"read": {"in": 0, "out": 900}, "count": {"in": 900, "out": 3}}
    text = rendered(metrics_table(batch, 3.0, title="wc"))
    assert "wm lag" not in text
    assert row(text, "read") == ["read", "0", "900", "300"]


def test_the_latest_results_are_the_newest_items_of_each_sink():
    text = rendered(latest_results_table({"windows": list(range(100)), "empty": []}, shown=3))
    assert [line.strip("│ ").split()[-1] for line in text.splitlines() if "windows" in line] == ["97", "98", "99"]
    assert latest_results_table({"windows": []}) is None


def test_the_log_line_has_every_vertex_with_its_rate_and_lag():
    line = metrics_line(STREAM, 4.0, BEFORE, 2.0, wall_ms=NOW_MS)
    assert line == ("[4.0 s] source: in=0 out=5,000 rate=1,000/s wm_lag=120 ms late=0; "
                    "window: in=5,000 out=10 rate=1/s wm_lag=1,250 ms late=17; "
                    "sink: in=10 out=0 rate=0/s wm_lag=- late=0")


def test_the_first_log_line_counts_its_rate_from_the_start():
    """With no previous sample the first line always said rate=0/s."""
    line = metrics_line({"source": {"in": 0, "out": 5_000}}, 5.0, None, 5.0, wall_ms=NOW_MS)
    assert "source: in=0 out=5,000 rate=1,000/s" in line


def test_off_a_terminal_progress_goes_to_the_log_every_interval(caplog):
    samples = iter([BEFORE, STREAM, STREAM, STREAM, STREAM, STREAM])
    logged = threading.Event()
    console = Console(file=io.StringIO(), force_terminal=False)

    def metrics():
        return next(samples, STREAM)

    class Seen(logging.Handler):
        def emit(self, record):
            if record.getMessage().count("progress") and "window: in=5,000" in record.getMessage():
                logged.set()

    handler = Seen()
    logging.getLogger("jet.progress").addHandler(handler)
    try:
        with caplog.at_level(logging.INFO, logger="jet.progress"):
            with ProgressDisplay(metrics, title="trades", console=console, interval_s=0.01, streaming=True):
                assert logged.wait(30), caplog.text
    finally:
        logging.getLogger("jet.progress").removeHandler(handler)
    summary = console.file.getvalue()
    assert "trades: summary" in summary and "wm lag ms" in summary


def test_after_a_restart_the_summary_divides_by_the_last_executions_time_not_the_whole_run():
    """The summary divided the last execution's counts by the whole run's time."""
    console = Console(file=io.StringIO(), width=120, force_terminal=False)
    display = ProgressDisplay(lambda: {"read": {"in": 0, "out": 900}}, console=console, interval_s=60,
                              counted_since_fn=lambda: 3.0)  # the last execution ran 3 s
    display._started -= 100  # the whole run: 100 s
    display.stop()
    assert row(console.file.getvalue(), "read") == ["read", "0", "900", "300"]
