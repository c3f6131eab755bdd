"""Fused stateless stages over timestamped pairs, against the same steps run item by item."""

import pytest
from hypothesis import given, strategies as st

from jet.core.chain_contract import StageContractError
from jet.pipeline.stream_planner import chain_p

_STEPS = {
    "map": ("map", lambda x: x * 3 - 1),
    "filter": ("filter", lambda x: x % 2 == 0),
    "flat_map": ("flat_map", lambda x: range(x % 4)),
    "flat_map to a generator": ("flat_map", lambda x: (x + i for i in range(x % 3))),
}


def _oracle(steps, pairs):
    """Each step applied to each item in plain Python; outputs keep their input's timestamp."""
    for kind, fn in steps:
        out = []
        for ts, item in pairs:
            if kind == "map":
                out.append((ts, fn(item)))
            elif kind == "filter":
                if fn(item):
                    out.append((ts, item))
            else:
                out.extend((ts, result) for result in fn(item))
        pairs = out
    return pairs


@given(kinds=st.lists(st.sampled_from(sorted(_STEPS)), min_size=1, max_size=5),
       pairs=st.lists(st.tuples(st.integers(-10**6, 10**6), st.integers(-50, 50)), max_size=40))
def test_a_chain_over_pairs_equals_the_steps_item_by_item(kinds, pairs):
    steps = [_STEPS[kind] for kind in kinds]
    names = [f"s{i}" for i in range(len(steps))]
    expected = _oracle(steps, pairs)
    assert chain_p(steps, names, pairs_in=True, pairs_out=True)()._chunk_fn(list(pairs)) == expected
    assert chain_p(steps, names, pairs_in=True, pairs_out=False)()._chunk_fn(list(pairs)) == \
        [item for _, item in expected]


def test_a_chain_over_bare_items_can_wrap_its_output_without_event_time():
    chain = chain_p([("map", str)], ["map"], pairs_in=False, pairs_out=True)()
    assert chain._chunk_fn([1, 2]) == [(-(1 << 63), "1"), (-(1 << 63), "2")]


def test_a_function_breaking_its_contract_is_named_with_its_stage():
    def explode(item):
        return 7  # not iterable

    chain = chain_p([("map", abs), ("flat_map", explode)], ["abs", "explode"], pairs_in=True,
                    pairs_out=True)()
    chain._pending, chain._batch, chain._capacity = None, 16, 16

    class _Inbox:
        def take_chunk(self, _max):
            return [(1, -3)]

    with pytest.raises(StageContractError, match="stage 'explode' \\(flat_map\\).*returned int: 7"):
        chain.process(0, _Inbox())
