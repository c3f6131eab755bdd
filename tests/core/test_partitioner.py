"""The default partitioner: the documented encoding, equal keys together, the same partition in
every process whatever its hash seed, and a clear refusal of keys it cannot encode."""

import dataclasses
import datetime
import gc
import json
import os
import pickle
import struct
import subprocess
import sys
import weakref
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jet.core import DAG, DEFAULT_PARTITIONER, DagValidationError, Edge
from jet.core.key_encoding import UnsupportedKeyError, canonical_bytes, canonical_bytes_of_all
from jet.core.partitioner import key_to_partition_fn, local_partition, murmur_partition, murmur_partitions
from jet.core.processors import items_source_p, noop_p

from tests import partition_oracle as oracle
from tests.core.key_strategies import (Level, Pair, Point, any_keys, comparable_oracle_keys,
                                       hashable_keys, oracle_keys)

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER_SEEDS = ("1", "2", "3")


class Opaque:
    """A key type without a canonical encoding."""


@given(oracle_keys)
def test_the_partition_is_mmh3_of_the_documented_encoding_mod_271(key):
    assert canonical_bytes(key) == oracle.encode(key)
    assert murmur_partition(key) == oracle.partition_of(key)


@pytest.mark.parametrize("key", ["lone \ud800 surrogate", "", "ünïcödé", 2 ** 63, -(2 ** 63) - 1,
                                 (2 ** 63 - 1, -(2 ** 63)), (2 ** 63, 1), (1, -(2 ** 63) - 1), (True, 2),
                                 (1, 2.0), [3, 4], (5, 6, 7), (8, "nine", 10), ((1, 2), 3)])
def test_edge_cases_follow_the_documented_encoding(key):
    assert canonical_bytes(key) == oracle.encode(key)
    assert murmur_partition(key) == oracle.partition_of(key)


_INT64 = st.integers(-(2 ** 63), 2 ** 63 - 1)


@given(st.one_of(st.lists(st.text()), st.lists(_INT64), st.lists(st.tuples(_INT64, _INT64)),
                 st.lists(st.one_of(st.integers(), st.text(), st.booleans(), st.tuples(st.integers(), st.integers()),
                                    st.tuples(st.booleans(), _INT64), st.tuples(_INT64, _INT64, _INT64)))))
def test_a_list_of_keys_at_once_lands_where_each_key_does(keys):
    assert murmur_partitions(keys) == [oracle.partition_of(key) for key in keys]
    encoded = canonical_bytes_of_all(keys)
    assert encoded is None or encoded == [oracle.encode(key) for key in keys]


@pytest.mark.parametrize("keys", [["a", "\ud800", ""], [1, -(2 ** 63), 2 ** 63 - 1], [(1, 2), (-(2 ** 63), 2 ** 63 - 1)]])
def test_lists_of_strs_ints_and_int_pairs_are_encoded_at_once(keys):
    assert canonical_bytes_of_all(keys) == [oracle.encode(key) for key in keys]


@pytest.mark.parametrize("keys", [[1, 2 ** 63], [(1, 2 ** 63)], [True, 1], [(True, 1)], [1, "a"], [(1, 2, 3)], [Pair(1, 2)]])
def test_lists_of_other_keys_are_left_to_the_one_by_one_encoding(keys):
    assert canonical_bytes_of_all(keys) is None
    assert murmur_partitions(keys) == [murmur_partition(key) for key in keys]


@given(comparable_oracle_keys, comparable_oracle_keys)
def test_two_keys_share_an_encoding_exactly_when_they_are_equal(a, b):
    assert (canonical_bytes(a) == canonical_bytes(b)) == (a == b)


def test_values_of_distinct_types_do_not_collide():
    keys = ["a", b"a", ("a",), ["a"], frozenset(["a"]), {"a": None}, ("a", "b"), ("ab",), ("a\x1eb",),
            "", None, (), [], 0, 0.5, "\x81", datetime.date(1, 1, 1), 1]
    assert len({canonical_bytes(key) for key in keys}) == len(keys)


@given(st.integers())
def test_an_int_and_every_number_equal_to_it_share_an_encoding(n):
    candidates = [n, Decimal(n), Fraction(n), float(n), complex(n, 0)]
    assert len({canonical_bytes(x) for x in candidates if x == n}) == 1


@given(st.floats(allow_nan=False))
def test_a_float_and_every_number_equal_to_it_share_an_encoding(x):
    equal = [x, complex(x, 0)] + ([Decimal(x), Fraction(x)] if abs(x) != float("inf") else [])
    assert len({canonical_bytes(y) for y in equal}) == 1


@given(st.lists(hashable_keys(st.one_of(st.text(), st.integers())), max_size=8))
def test_sets_built_in_any_order_share_an_encoding(elements):
    same = [set(elements), frozenset(reversed(elements)), frozenset(sorted(elements, key=repr))]
    assert len({canonical_bytes(s) for s in same}) == 1


def test_subclasses_equal_to_their_base_values_share_their_encodings():
    assert canonical_bytes(Pair(1, "a")) == canonical_bytes((1, "a"))
    assert canonical_bytes(Level.HIGH) == canonical_bytes(2)
    utc = datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.timezone.utc)
    assert canonical_bytes(utc.astimezone(datetime.timezone(datetime.timedelta(hours=-7)))) == canonical_bytes(utc)
    assert canonical_bytes(Point(1, "a")) != canonical_bytes(Point(2, "a"))


@pytest.fixture(scope="module")
def seeded_workers():
    """One partition worker per seed in ``WORKER_SEEDS``; each is given the keys pickled."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "member"), str(REPO_ROOT)])}
    workers = [subprocess.Popen([sys.executable, "-m", "tests.core.partition_worker"], cwd=REPO_ROOT,
                                env={**env, "PYTHONHASHSEED": seed}, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE) for seed in WORKER_SEEDS]
    probes = {int(worker.stdout.readline()) for worker in workers}
    assert len(probes) == len(workers), "the workers should hash str differently"
    yield workers
    for worker in workers:
        worker.stdin.close()
        worker.wait(10)


def _partitions_in(worker: subprocess.Popen, keys: list) -> list:
    payload = pickle.dumps(keys)
    worker.stdin.write(struct.pack(">I", len(payload)) + payload)
    worker.stdin.flush()
    return json.loads(worker.stdout.readline())


@settings(max_examples=150, deadline=None)
@given(st.lists(any_keys, min_size=1, max_size=10))
def test_processes_with_different_hash_seeds_agree_on_every_partition(seeded_workers, keys):
    here = [murmur_partition(key) for key in keys]
    for worker in seeded_workers:
        assert _partitions_in(worker, keys) == here


def test_a_key_without_an_encoding_is_refused_naming_its_type():
    for key in (Opaque(), (1, frozenset([Opaque()])), [Point(1, "a"), {"k": Opaque()}]):
        with pytest.raises(UnsupportedKeyError, match=r"key of type .*Opaque\b.*Supported key types: None"):
            murmur_partition(key)
    with pytest.raises(UnsupportedKeyError, match="distributed edge refuses"):
        key_to_partition_fn(DEFAULT_PARTITIONER, distributed=True)(Opaque())


def test_a_local_edge_partitions_a_hashable_key_without_an_encoding_by_its_hash():
    key = Opaque()
    local = key_to_partition_fn(DEFAULT_PARTITIONER)
    assert local(key) == local_partition(key) == hash(key) % 271
    assert local("word") == oracle.partition_of("word")
    with pytest.raises(UnsupportedKeyError, match="Opaque"):
        local([key])  # unhashable: no partition at all


def test_a_distributed_all_to_one_edge_with_a_key_without_an_encoding_is_refused():
    dag = DAG()
    source = dag.new_vertex("source", items_source_p([1]), 1)
    sink = dag.new_vertex("sink", noop_p(), 1)
    with pytest.raises(DagValidationError, match=r"'source' -> 'sink' is distributed all-to-one: .*Opaque"):
        dag.edge(Edge.between(source, sink).all_to_one(Opaque()).distributed())


def test_the_encoder_does_not_keep_a_jobs_key_class_alive():
    def encode_keys_of_a_new_class():
        @dataclasses.dataclass(frozen=True)
        class JobKey:
            n: int
        canonical_bytes(JobKey(1))
        return weakref.ref(JobKey)

    key_class = encode_keys_of_a_new_class()
    gc.collect()
    assert key_class() is None
