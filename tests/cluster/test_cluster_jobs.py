"""Jobs on real member processes: results, failures, cancellation, lost members."""

import os
import re
import signal
import time
from collections import Counter

import jet
import pytest
from jet.cluster.coordination.coordinator import JobStatus
from jet.core import DAG, HASH_PARTITIONER, DagValidationError, Edge
from jet.core.aggregate import counting
from jet.core.functions import entry_key, whole_item
from jet.core.processors import accumulate_by_key_p, combine_by_key_p, flat_map_p, items_source_p, map_p
from jet.execution.errors import JobCancelledError, JobFailedError

from tests.cluster.cluster_support import (
    SlowFirstSupplier,
    deliveries,
    endless_source,
    fail_on_member,
    json_sink,
    wait_until,
)

LINES = [f"the quick brown fox {i % 7} jumps over the lazy dog {i % 13} the end" for i in range(3000)]


def word_count_dag(out_dir) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(LINES), 1)
    tokenize = dag.new_vertex("tokenize", flat_map_p(str.split))
    prepare = dag.new_vertex("prepare", accumulate_by_key_p(whole_item, counting()))
    combine = dag.new_vertex("combine", combine_by_key_p(counting()))
    sink = dag.new_vertex("sink", json_sink(out_dir), 1)
    dag.edge(Edge.between(source, tokenize))
    dag.edge(Edge.between(tokenize, prepare).partitioned(whole_item, HASH_PARTITIONER))
    dag.edge(Edge.between(prepare, combine).partitioned(entry_key).distributed())
    dag.edge(Edge.between(combine, sink))
    return dag


@pytest.fixture(scope="module")
def cluster1(tmp_path_factory):
    with jet.local_cluster(members=1, log_dir=tmp_path_factory.mktemp("cluster1-logs")) as cluster:
        yield cluster


@pytest.mark.parametrize("members", [1, 2, 3])
def test_two_stage_word_count_equals_counter(members, request, tmp_path):
    cluster = request.getfixturevalue(f"cluster{members}")
    job = cluster.new_job(word_count_dag(tmp_path), {"name": "word-count"})
    job.join(timeout=60)
    assert job.status is JobStatus.COMPLETED
    got = Counter()
    for items in deliveries(tmp_path, "sink").values():
        for word, count in items:
            assert word not in got, f"{word!r} was combined on two processors"
            got[word] = count
    assert got == Counter(word for line in LINES for word in line.split())


def test_a_member_whose_init_is_slow_gets_its_peers_early_items_and_the_job_completes(cluster3, tmp_path):
    """Each member starts within its own init: the quick ones run, send to the slow one and may
    report before the slow one has answered its init; nothing is lost and the job completes."""
    dag = word_count_dag(tmp_path)
    combine = dag.get_vertex("combine")
    combine.processor_supplier = SlowFirstSupplier(tmp_path / "slow", 1.0, combine.processor_supplier)
    job = cluster3.new_job(dag, {"name": "slow-init"})
    job.join(timeout=60)
    assert job.status is JobStatus.COMPLETED
    got = Counter()
    for items in deliveries(tmp_path, "sink").values():
        for word, count in items:
            got[word] += count
    assert got == Counter(word for line in LINES for word in line.split())
    assert (tmp_path / "slow").exists()


def test_a_user_exception_fails_the_job_everywhere_with_its_traceback(cluster3, tmp_path):
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(list(range(5000))), 1)
    check = dag.new_vertex("check", fail_on_member(bad_member=2, at=10), 1)
    dag.edge(Edge.between(source, check).distributed())
    job = cluster3.new_job(dag)
    with pytest.raises(JobFailedError) as failure:
        job.join(timeout=30)
    error = failure.value
    assert not isinstance(error, JobCancelledError)
    assert error.member_index == 2
    assert "ValueError: user function exploded" in str(error)
    assert "in explode_in_user_code" in error.traceback_text
    assert job.status is JobStatus.FAILED
    for index, path in enumerate(cluster3.log_paths):
        wait_until(lambda: "in explode_in_user_code" in path.read_text() and job.id in path.read_text(),
                   10, f"the traceback in member {index}'s log")


def test_cancel_fails_the_job_on_every_member_with_job_cancelled(cluster2, tmp_path):
    dag = DAG()
    source = dag.new_vertex("source", endless_source(tmp_path), 1)
    sink = dag.new_vertex("sink", map_p(lambda x: x), 1)
    dag.edge(Edge.between(source, sink).distributed())
    job = cluster2.new_job(dag)
    wait_until(lambda: job.status is JobStatus.RUNNING and len(list(tmp_path.glob("started-*"))) == 2,
               what="the job running on both members")
    started = time.monotonic()
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(timeout=15)
    assert time.monotonic() - started < 10
    assert job.status is JobStatus.FAILED
    assert job.info()["failure"]["cancelled"] is True


def test_a_bad_dag_is_rejected_before_anything_runs(cluster2):
    dag = DAG()
    a = dag.new_vertex("a", map_p(str), 1)
    b = dag.new_vertex("b", map_p(str), 1)
    dag.edge(Edge.between(a, b)).edge(Edge.between(b, a))
    with pytest.raises(DagValidationError, match="cycle"):
        cluster2.new_job(dag)


def test_join_times_out_while_the_job_keeps_running(cluster2, tmp_path):
    dag = DAG()
    source = dag.new_vertex("source", endless_source(), 1)
    sink = dag.new_vertex("sink", map_p(lambda x: x), 1)
    dag.edge(Edge.between(source, sink))
    job = cluster2.new_job(dag)
    with pytest.raises(TimeoutError):
        job.join(timeout=0.5)
    assert job.status is JobStatus.RUNNING
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(timeout=15)


def test_a_member_killed_mid_job_fails_it_naming_the_lost_member(tmp_path):
    with jet.local_cluster(members=3, log_dir=tmp_path / "logs") as cluster:
        dag = DAG()
        source = dag.new_vertex("source", endless_source(tmp_path), 1)
        sink = dag.new_vertex("sink", map_p(lambda x: x), 1)
        dag.edge(Edge.between(source, sink).distributed())
        job = cluster.new_job(dag, {"auto_scaling": False})  # else it waits for member 2 to restart it
        wait_until(lambda: len(list(tmp_path.glob("started-*"))) == 3, what="the job running on 3 members")
        killed = time.monotonic()
        cluster.members[2].send_signal(signal.SIGKILL)
        with pytest.raises(JobFailedError) as failure:
            job.join(timeout=20)
        assert time.monotonic() - killed < 10
        assert "member 2 was lost" in str(failure.value)
        assert job.status is JobStatus.FAILED
        for index in (0, 1):
            wait_until(lambda: "member 2" in cluster.log_paths[index].read_text(), 10,
                       f"member {index} logging the loss of member 2")
            assert cluster.members[index].poll() is None, f"member {index} should still run"


def broken_supplier():
    raise RuntimeError("this processor cannot be created")


def test_a_processor_that_cannot_be_created_fails_the_job_at_init_with_its_traceback(cluster2):
    dag = DAG()
    source = dag.new_vertex("source", items_source_p([1, 2, 3]), 1)
    broken = dag.new_vertex("broken", broken_supplier, 1)
    dag.edge(Edge.between(source, broken).distributed())
    job = cluster2.new_job(dag)
    with pytest.raises(JobFailedError, match="this processor cannot be created") as failure:
        job.join(timeout=30)
    assert "in broken_supplier" in str(failure.value)
    ok = DAG()
    ok.new_vertex("source", items_source_p([1]), 1)
    cluster2.new_job(ok).join(timeout=30)  # the cluster is still usable


def test_members_talk_tls_when_configured(tls_config, tmp_path):
    with jet.local_cluster(members=2, log_dir=tmp_path / "logs", tls_cert_file=tls_config.cert_file,
                           tls_key_file=tls_config.key_file) as cluster:
        job = cluster.new_job(word_count_dag(tmp_path))
        job.join(timeout=60)
        got = [tuple(entry) for items in deliveries(tmp_path, "sink").values() for entry in items]
        assert sorted(got) == sorted(Counter(word for line in LINES for word in line.split()).items())
        with jet.connect(cluster.addresses, cluster.token) as plaintext:
            with pytest.raises(Exception, match="UNAVAILABLE"):
                plaintext.ping(timeout_s=3)


def test_results_and_metrics_of_a_pipeline_come_from_every_member(cluster3):
    from jet.job_file import load_job, to_dag

    from tests.conftest import REPO_ROOT

    text = REPO_ROOT / "examples" / "data" / "two-cities.txt"
    dag = to_dag(load_job(str(REPO_ROOT / "examples" / "wordcount.py"), (str(text),)), 1)
    job = cluster3.new_job(dag)
    job.join(timeout=60)
    ((ranking,),) = job.results().values()
    assert_is_the_top_ten_words_of(ranking, text)
    metrics = job.metrics()
    source = next(name for name in metrics if "read" in name or "source" in name.lower() or "files" in name)
    assert metrics[source]["out"] == len(text.read_text().splitlines())


def test_jet_run_members_3_prints_the_plain_python_answer():
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    def run(members):
        result = subprocess.run(
            [sys.executable, "-m", "jet", "run", "--members", str(members),
             "examples/wordcount.py", "examples/data/two-cities.txt"], capture_output=True, text=True,
            timeout=120, cwd=REPO_ROOT, env={"PYTHONPATH": f"{REPO_ROOT / 'member'}", "PATH": ""})
        assert result.returncode == 0, result.stderr[-3000:]
        (ranking,) = [eval(line) for line in result.stdout.splitlines() if line.startswith("  ")]  # noqa: S307
        return ranking

    assert_is_the_top_ten_words_of(run(3), REPO_ROOT / "examples" / "data" / "two-cities.txt")


def assert_is_the_top_ten_words_of(ranking: list, text_path) -> None:
    """``ranking`` is examples/wordcount.py's answer for ``text_path``, computed in plain Python."""
    counts = Counter(re.findall(r"[a-z']+", text_path.read_text().lower()))
    assert [n for _, n in ranking] == [n for _, n in counts.most_common(10)]  # tied words in any order
    assert dict(ranking).items() <= counts.items()
