"""A job's code runs in a member process: it must not find the member key in its environment
(with it, it could pose as member 0; see docs/security.md for what the key does protect)."""

import os

import jet
from jet import Pipeline, Sinks, Sources


def member_key_seen(_item):
    return os.environ.get("JET_MEMBER_KEY"), os.environ.get("JET_MEMBER_KEY_FILE")


def test_a_jobs_function_finds_no_member_key_in_its_environment():
    p = Pipeline.create()
    p.read_from(Sources.items(list(range(8)))).rebalance().map(member_key_seen).write_to(Sinks.list())
    with jet.local_cluster(members=2) as cluster:
        job = cluster.new_job(p)
        job.join(timeout=60)
        seen = job.result()
        assert cluster.member_key  # the members were given one, in their environment
    assert len(seen) == 8 and set(seen) == {(None, None)}
