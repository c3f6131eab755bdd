import os
import subprocess
import sys

import mmh3
from hypothesis import given
from hypothesis import strategies as st

from jet.core.partitioner import (MURMUR_SEED, PARTITION_COUNT, canonical_bytes, murmur_partition)

KEYS = ["word", "", "ünïcödé", 0, -1, 2 ** 70, ("a", 3), b"raw", 2.5, None, frozenset()]


def test_partition_is_murmur3_of_the_canonical_bytes_mod_271():
    h = mmh3.hash("word".encode(), MURMUR_SEED, signed=True)
    assert murmur_partition("word") == abs(h) % PARTITION_COUNT


@given(st.one_of(st.text(), st.integers(), st.binary(), st.tuples(st.text(), st.integers())))
def test_partition_is_in_range(key):
    assert 0 <= murmur_partition(key) < PARTITION_COUNT


def test_equal_keys_of_different_numeric_types_share_a_partition():
    assert murmur_partition(1) == murmur_partition(1.0) == murmur_partition(True)
    assert canonical_bytes(("a", 1)) == canonical_bytes(("a", 1.0))


def test_partitions_are_the_same_in_another_process_with_another_hash_seed():
    here = [murmur_partition(k) for k in KEYS]
    code = ("import sys; sys.path.insert(0, 'member');"
            "from jet.core.partitioner import murmur_partition;"
            f"print([murmur_partition(k) for k in {KEYS!r}])")
    for seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, cwd=os.path.dirname(os.path.dirname(
                                 os.path.dirname(os.path.abspath(__file__)))))
        assert out.stdout.strip() == str(here)


@given(st.one_of(st.text(), st.just("lone \ud800 surrogate")))
def test_the_str_fast_path_hashes_the_canonical_bytes(key):
    h = mmh3.hash(canonical_bytes(key), MURMUR_SEED, signed=True)
    assert murmur_partition(key) == (0 if h == -(2 ** 31) else abs(h) % PARTITION_COUNT)
