"""examples/enrichment_async.py through `jet run`, on 1 and 2 members, against plain Python."""

import csv
import json
from collections import defaultdict

import pytest

from tests.cli.test_examples import DATA, REPO_ROOT, _result_items, jet_run


@pytest.mark.parametrize("members", [1, 2])
def test_async_enrichment_example_sums_each_sector(members):
    result = jet_run(REPO_ROOT / "examples" / "enrichment_async.py", members=members)
    sectors = {row["symbol"]: row["sector"] for row in csv.DictReader(open(DATA / "companies.csv"))}
    expected = defaultdict(float)
    for line in open(DATA / "trades.jsonl"):
        trade = json.loads(line)
        expected[sectors.get(trade["symbol"], "unknown")] += trade["quantity"] * trade["price"]
    got = dict(_result_items(result.stdout))
    assert got.keys() == expected.keys()
    for sector, value in expected.items():
        assert got[sector] == pytest.approx(value, abs=0.01)


@pytest.mark.parametrize("members", [1, 2])
def test_trade_rankings_example_lists_symbols_and_running_volumes_in_order(members):
    result = jet_run(REPO_ROOT / "examples" / "trade_rankings.py", members=members)
    trades = [json.loads(line) for line in open(DATA / "trades.jsonl")]
    sections = result.stdout.split("result ")
    symbols = next(s for s in sections if s.startswith("'symbols'"))
    volumes = next(s for s in sections if s.startswith("'running-volume'"))
    assert _result_items(symbols) == sorted({t["symbol"] for t in trades})
    assert f"{len(trades)} item(s)" in volumes
    totals = defaultdict(int)
    for trade in trades:
        totals[trade["symbol"]] += trade["quantity"]
    shown = _result_items(volumes.split("  ... ")[0])
    assert [v for _, v in shown] == sorted((v for _, v in shown), reverse=True)
    assert shown[0] == max(totals.items(), key=lambda kv: kv[1])


def test_the_runnable_pipeline_of_the_enrichment_page(tmp_path):
    page = (REPO_ROOT / "docs" / "enrichment.md").read_text()
    section = page.split("## All of it in one runnable pipeline", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "enrich.py").write_text(code)
    result = jet_run(tmp_path / "enrich.py", members=2)
    sections = {s.split("'", 2)[1]: _result_items(s) for s in result.stdout.split("result ")[1:]}
    symbols = ["ACME", "GLBX", "ACME", "HOOL", "GLBX", "ACME"]
    prices = {"ACME": 10.0, "GLBX": 20.0, "HOOL": 30.0}
    assert sorted(sections["prices"]) == sorted(prices[s] for s in symbols)
    assert sorted(sections["priced-async"]) == sorted((s, prices[s]) for s in symbols)
    assert sorted(sections["running-counts"]) == [("ACME", 1), ("ACME", 2), ("ACME", 3), ("GLBX", 1),
                                                  ("GLBX", 2), ("HOOL", 1)]
    assert sections["distinct-sorted"] == ["ACME", "GLBX", "HOOL"]
