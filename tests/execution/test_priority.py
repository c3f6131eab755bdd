import pytest

from jet.core import DAG, Edge
from jet.core.edge import DEFAULT_OUTBOX_CAPACITY, DEFAULT_QUEUE_SIZE
from jet.core.processors import items_source_p, map_p
from jet.execution import JobTimeoutError, execute

from tests.execution.support import recording_sink


def test_higher_priority_edge_is_consumed_fully_before_the_other_is_read():
    # the hash-join shape: a build side at priority -1, a probe side at the default priority
    record, sink = recording_sink()
    dag = DAG()
    probe = dag.new_vertex("probe", items_source_p(range(5000)), 1)
    build = dag.new_vertex("build", items_source_p(range(3000)), 1)
    joiner = dag.new_vertex("joiner", sink, 1)
    dag.edge(Edge.from_(probe).to(joiner, 1))
    dag.edge(Edge.from_(build).to(joiner, 0).broadcast().priority(-1))
    execute(dag, cooperative_threads=2, timeout=30)
    ordinals = [ordinal for ordinal, _ in record[0]]
    assert ordinals == [0] * 3000 + [1] * 5000


#: Items enough to fill the direct edge's queue and bucket several times over.
FORK_ITEMS = 4 * (DEFAULT_QUEUE_SIZE + DEFAULT_OUTBOX_CAPACITY)


def _fork_rejoin(buffered: bool):
    record, sink = recording_sink()
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(range(FORK_ITEMS)), 1)
    branch = dag.new_vertex("branch", map_p(lambda x: -x), 1)
    join = dag.new_vertex("join", sink, 1)
    dag.edge(Edge.from_(source, 0).to(branch))
    dag.edge(Edge.from_(branch).to(join, 0).priority(0))
    direct = Edge.from_(source, 1).to(join, 1).priority(1)
    dag.edge(direct.buffered() if buffered else direct)
    return dag, record


def test_fork_that_rejoins_over_edges_of_different_priority_deadlocks_without_buffering():
    dag, _ = _fork_rejoin(buffered=False)
    with pytest.raises(JobTimeoutError) as failure:
        execute(dag, cooperative_threads=1, timeout=2)
    assert "source#0" in failure.value.running and "join#0" in failure.value.running
    assert "still running" in str(failure.value)


def test_buffered_edge_resolves_the_fork_rejoin_deadlock():
    dag, record = _fork_rejoin(buffered=True)
    execute(dag, cooperative_threads=1, timeout=30)
    ordinals = [ordinal for ordinal, _ in record[0]]
    assert ordinals == [0] * FORK_ITEMS + [1] * FORK_ITEMS
    assert sorted(x for o, x in record[0] if o == 1) == list(range(FORK_ITEMS))
