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
