"""Every streaming example runs through `jet run ... --timeout` and agrees with plain Python.

A stream that ends (the sessions example) is compared whole; a stream that `--timeout` stops is
compared window by window over the windows it emitted (a window is emitted whole or not at all),
leaving out the first windows, which began before the source did."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tests.cli.support import jet_command, jet_env
from tests.conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
START, END, KEY, RESULT, EARLY = range(5)  # a KeyedWindowResult as the --output JSON array


def example_module(name: str):
    """The example file as a module, for the data it generates (never for its pipeline)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_example(name: str, tmp_path: Path, *args: object, members: int = 1, timeout: str = "6s",
                while_running=None) -> tuple[list, str]:
    """``jet run examples/NAME.py ARGS --timeout T --output FILE``: the result items and stderr;
    ``while_running(process)`` is called once the process has started."""
    output = tmp_path / f"{name}.jsonl"
    command = jet_command("run", "--members", members, EXAMPLES / f"{name}.py", *args, "--timeout", timeout,
                          "--output", output)
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=jet_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        if while_running is not None:
            while_running(process)
        _, err = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err[-3000:]
    assert " ERROR " not in err and "Traceback" not in err, err[-3000:]
    return [json.loads(line) for line in output.read_text().splitlines()], err


def summary_cell(stderr: str, vertex: str, column: int) -> str:
    """A cell of ``vertex``'s row in the summary table ``jet run`` printed last."""
    rows = [line for line in stderr.splitlines() if line.startswith("│") and line.split("│")[1].strip() == vertex]
    return rows[-1].strip("│").split("│")[column].strip()


def aligned(windows: list, size_ms: int, slide_ms: int) -> bool:
    return all(w[END] - w[START] == size_ms and w[START] % slide_ms == 0 for w in windows)


def after_the_first(windows: list, size_ms: int) -> list:
    """The final (not early) windows that began after the source's first event: the first
    window emitted holds that event, so windows starting a window size later cannot be partial."""
    final = [w for w in windows if not w[EARLY]]
    first_start = min(w[START] for w in final)
    return [w for w in final if w[START] >= first_start + size_ms]


# -- a word count over a watched directory -----------------------------------------------------
LINE = "it was the best of times it was the worst of times"


def tag(n: int) -> str:
    """A word of letters only (what the example counts as a word) that names line ``n``."""
    return "tag" + "".join(chr(ord("a") + n // 26 ** k % 26) for k in (2, 1, 0))


def write_tagged_lines(directory: Path, process: subprocess.Popen) -> None:
    """While the job runs: a new file every 100 ms, each one line ``tag<N> LINE``."""
    n = 0
    while process.poll() is None and n < 200:
        (directory / f"part-{n:03}.txt").write_text(f"{tag(n)} {LINE}\n")
        n += 1
        time.sleep(0.1)


def test_stream_wordcount_counts_each_windows_lines_exactly(tmp_path):
    directory = tmp_path / "incoming"
    directory.mkdir()
    windows, _ = run_example("stream_wordcount", tmp_path, directory, timeout="8s",
                             while_running=lambda process: write_tagged_lines(directory, process))
    assert windows, "some windows closed while files were written"
    assert aligned(windows, 1000, 1000) and not any(w[EARLY] for w in windows)
    per_line = Counter(LINE.split())
    by_window = defaultdict(dict)
    for w in windows:
        by_window[w[START], w[END]][w[KEY]] = w[RESULT]
    for counts in by_window.values():
        tags = [key for key in counts if key.startswith("tag")]
        assert all(counts[tag] == 1 for tag in tags), counts
        # A line is one item, so its words share its window: each word len(tags) times its count.
        assert {k: v for k, v in counts.items() if not k.startswith("tag")} == \
            {word: n * len(tags) for word, n in per_line.items()}, counts


# -- trades: sliding-window averages with early results ----------------------------------------
def test_stream_trades_averages_every_closed_window_and_emits_early_results(tmp_path):
    trades = example_module("stream_trades")
    windows, err = run_example("stream_trades", tmp_path, "1000")
    assert aligned(windows, 2000, 500)
    assert any(w[EARLY] for w in windows), "early results of the windows still open"
    checked = after_the_first(windows, 2000)
    assert len(checked) >= len(trades.SYMBOLS), windows
    for start, end, symbol, average, _ in checked:
        # At 1,000 trades a second one trade is due each millisecond: the window holds them all.
        prices = [t["price"] for t in map(trades.trade, range(start, end), range(start, end))
                  if t["symbol"] == symbol]
        assert average == pytest.approx(sum(prices) / len(prices)), (start, end, symbol)
    assert summary_cell(err, "sliding-window", -1) == "0", "an ordered stream has no late events"


# -- sessions: a stream that ends --------------------------------------------------------------
def sessions_oracle(clicks, timeout_ms):
    """Each user's visits: clicks closer than the timeout belong together; a visit spans its
    first click to its last plus the timeout."""
    times = defaultdict(list)
    for timestamp, (user, _) in clicks:
        times[user].append(timestamp)
    sessions = []
    for user, stamps in times.items():
        stamps.sort()
        first = previous = stamps[0]
        count = 1
        for t in stamps[1:]:
            if t - previous >= timeout_ms:
                sessions.append([first, previous + timeout_ms, user, count, False])
                first, count = t, 0
            previous, count = t, count + 1
        sessions.append([first, previous + timeout_ms, user, count, False])
    return sorted(sessions)


@pytest.mark.parametrize("members", [1, 2])
def test_stream_sessions_equal_plain_python(tmp_path, members):
    sessions = example_module("stream_sessions")
    windows, err = run_example("stream_sessions", tmp_path, "20", members=members, timeout="60s")
    assert "job completed in" in err, "a stream whose source closes completes"
    assert sorted(windows) == sessions_oracle(sessions.clicks(20), sessions.SESSION_TIMEOUT_MS)


# -- enrichment: a hash join with a batch file --------------------------------------------------
def test_stream_enrichment_sums_the_value_per_sector_of_every_closed_window(tmp_path):
    enrichment = example_module("stream_enrichment")
    sectors = {row["symbol"]: row["sector"] for row in csv.DictReader(open(EXAMPLES / "data" / "companies.csv"))}
    windows, _ = run_example("stream_enrichment", tmp_path, EXAMPLES / "data" / "companies.csv", "1000")
    assert aligned(windows, 1000, 1000)
    checked = after_the_first(windows, 1000)
    assert {w[KEY] for w in checked} >= {"unknown"}, "HOOL is not in the file: a left outer join"
    expected = defaultdict(float)
    for start, end in {(w[START], w[END]) for w in checked}:
        for t in map(enrichment.trade, range(start, end), range(start, end)):
            expected[start, sectors.get(t["symbol"], "unknown")] += round(t["quantity"] * t["price"], 2)
    assert {(w[START], w[KEY]): pytest.approx(w[RESULT]) for w in checked} == \
        {key: value for key, value in expected.items()}


def readme_stream_example() -> str:
    """The README's Streams example, as it stands there."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme[readme.index("## Streams"):]
    return section[section.index("```python\n") + len("```python\n"):section.index("```\n", 10)]


def test_the_readmes_stream_example_prints_its_results_outside_a_terminal(tmp_path):
    """Its observable sink's results appeared only in the live table, so a run outside a
    terminal printed none."""
    job = tmp_path / "readme_stream.py"
    job.write_text(readme_stream_example())
    result = subprocess.run(jet_command("run", job, "--timeout", "4s"), capture_output=True, text=True,
                            env=jet_env(), timeout=180, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "observable 'counts': its 20 newest item(s)", result.stdout
    shown = [line.strip() for line in lines[1:]]
    assert len(shown) == 20 and all(line.startswith("KeyedWindowResult(") for line in shown), result.stdout
    # The newest complete windows: each key counts rate / 100 keys = 1,000 events a second.
    assert all(line.endswith("result=1000, is_early=False)") for line in shown), result.stdout
