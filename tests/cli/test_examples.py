"""Every pipeline example runs through `jet run` and gives the plain-Python answer."""

import csv
import json
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict

import pytest

from tests.cli.support import jet
from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "examples" / "data"


def jet_run(*args, members=1):
    result = subprocess.run(
        [sys.executable, "-m", "jet", "run", "--members", str(members), *map(str, args)],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
        env={"PYTHONPATH": f"{REPO_ROOT / 'member'}:{REPO_ROOT / 'operator'}", "PATH": ""})
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _result_items(stdout):
    return [eval(line.strip()) for line in stdout.splitlines() if line.startswith("  ")]  # noqa: S307


@pytest.mark.parametrize("members", [1, 2])
def test_wordcount_prints_the_top_ten_words(members):
    result = jet_run(REPO_ROOT / "examples" / "wordcount.py", DATA / "two-cities.txt", members=members)
    words = re.findall(r"[a-z']+", (DATA / "two-cities.txt").read_text().lower())
    expected = Counter(words).most_common(10)
    (ranking,) = _result_items(result.stdout)
    assert [n for _, n in ranking] == [n for _, n in expected]
    assert dict(ranking).items() <= dict(Counter(words)).items()
    assert "group-and-aggregate-prepare" in result.stderr, "the summary lists the vertices"


def test_enrichment_joins_trades_with_companies():
    result = jet_run(REPO_ROOT / "examples" / "enrichment.py", DATA / "trades.jsonl",
                     DATA / "companies.csv")
    sectors = {row["symbol"]: row["sector"] for row in csv.DictReader(open(DATA / "companies.csv"))}
    expected = defaultdict(float)
    for line in open(DATA / "trades.jsonl"):
        trade = json.loads(line)
        expected[sectors.get(trade["symbol"], "unknown")] += round(trade["quantity"] * trade["price"], 2)
    got = dict(_result_items(result.stdout))
    assert got.keys() == expected.keys()
    for sector, value in expected.items():
        assert got[sector] == pytest.approx(value, abs=0.01)


def test_grouped_average_writes_json_lines(tmp_path):
    jet_run(REPO_ROOT / "examples" / "grouped_average.py", DATA / "temperatures.csv", tmp_path)
    readings = defaultdict(list)
    for row in csv.DictReader(open(DATA / "temperatures.csv")):
        readings[row["station"]].append(float(row["celsius"]))
    written = dict(json.loads(line) for f in tmp_path.glob("*.jsonl") for line in f.read_text().splitlines())
    assert written == {s: round(sum(v) / len(v), 2) for s, v in readings.items()}


@pytest.mark.slow
def test_spark_wordcount_runs_as_the_readme_runs_it(tmp_path):
    import pyarrow.parquet as pq

    shutil.copytree(REPO_ROOT / "examples", tmp_path / "examples")  # a fresh clone's examples
    result = jet("run", "examples/spark_wordcount.py", cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.count("digraph DAG") == 1
    rows = pq.read_table(tmp_path / "out" / "wordcount.parquet").to_pylist()
    expected = Counter(re.findall(r"\w+", (DATA / "two-cities.txt").read_text().lower()))
    assert {row["word"]: row["count"] for row in rows} == expected


def test_a_missing_spark_input_is_refused_at_submission_like_a_missing_file(tmp_path):
    result = jet("run", "--members", "2", REPO_ROOT / "examples" / "spark_wordcount.py",
                 "no-such-input.parquet", tmp_path / "out.parquet", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "job rejected: FileNotFoundError: Sources.spark: no file or directory matches" \
           " 'no-such-input.parquet'" in result.stderr
    assert "SparkWriteFailedError" not in result.stderr and "log4j" not in result.stderr, "Spark never starts"
