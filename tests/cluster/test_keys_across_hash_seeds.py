"""Keys whose pickle or hash depends on the process, grouped on members started with different
``PYTHONHASHSEED`` values: each key is aggregated on one member only."""

import random
from collections import Counter

import pytest
from jet import AggregateOperations, Pipeline, Sinks, Sources
from jet.cluster.local.local_cluster import LocalCluster
from jet.execution.errors import JobFailedError

from tests.core.key_strategies import Badge

SEEDS = ("11", "22", "33")
WORDS = [f"word-{i}" for i in range(12)]


@pytest.fixture(scope="module")
def seeded_cluster(tmp_path_factory):
    """Three members, each with its own hash seed."""
    with LocalCluster(len(SEEDS), log_dir=tmp_path_factory.mktemp("seeded-cluster-logs"),
                      member_env=[{"PYTHONHASHSEED": seed} for seed in SEEDS]) as cluster:
        yield cluster


def _count_by_key(cluster, items: list, key_fn) -> list:
    p = Pipeline.create()
    (p.read_from(Sources.items(items)).grouping_key(key_fn)
     .aggregate(AggregateOperations.counting()).write_to(Sinks.list()))
    job = cluster.new_job(p)
    job.join(timeout=120)
    return job.result()


def _assert_each_key_once_with_its_count(result: list, expected: Counter) -> None:
    keys = [key for key, _ in result]
    assert len(keys) == len(set(keys)), "a key was aggregated on more than one member"
    assert dict(result) == dict(expected)


def test_the_members_hash_str_with_different_seeds(seeded_cluster):
    p = Pipeline.create()
    p.read_from(Sources.items(list(range(60)))).map(lambda _: hash("seed probe")).write_to(Sinks.list())
    job = seeded_cluster.new_job(p)
    job.join(timeout=120)
    assert len(set(job.result())) == len(SEEDS)


def test_grouping_by_frozenset_keys_counts_each_key_once_on_members_with_different_seeds(seeded_cluster):
    rng = random.Random(10)
    items = [frozenset(rng.sample(WORDS, rng.randint(2, 5))) for _ in range(4000)]
    expected = Counter(items)

    result = _count_by_key(seeded_cluster, items, lambda s: s)

    _assert_each_key_once_with_its_count(result, expected)


def test_grouping_by_tuples_holding_sets_counts_each_key_once(seeded_cluster):
    rng = random.Random(11)
    items = [(rng.choice("ab"), frozenset(rng.sample(WORDS, 3))) for _ in range(3000)]
    expected = Counter(items)

    result = _count_by_key(seeded_cluster, items, lambda pair: pair)

    _assert_each_key_once_with_its_count(result, expected)


def test_a_key_type_without_an_encoding_fails_the_job_naming_the_type(seeded_cluster):
    items = [Badge(f"b{i % 5}") for i in range(100)]
    with pytest.raises(JobFailedError, match=r"UnsupportedKeyError: a key of type \S*Badge cannot be partitioned"):
        _count_by_key(seeded_cluster, items, lambda badge: badge)
