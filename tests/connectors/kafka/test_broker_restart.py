"""An exactly-once Kafka -> Kafka job on a local cluster of member processes while its broker
stops and starts again on the same port and data directory (noida-db: tansu's build keeps no
data across a restart; see ``noida.py``).

The oracle is the input itself: the committed output (from the raw log, transaction markers
applied) must hold each input record exactly once. A broker that stays away must fail the job
within a bounded time with an error naming the broker, and leave what was committed as it was.

noida-db answers a commit that reaches it as it stops (or that librdkafka retries once it is back)
and then aborts that transaction on its restart; the sink must find that out and write those
records again (the ride-it-out test lost 50 to 200 records one run in ten or twenty before it did).
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter

import pytest

import jet
from jet import Pipeline, Sinks, Sources
from jet.connectors.kafka.client_config import BROKER_OUTAGE_S
from tests.cluster.cluster_support import join_failure, wait_until
from tests.connectors.kafka.kafka_support import committed_log, committed_values, create_topic
from tests.connectors.kafka.noida import STOP_TIMEOUT_S
from tests.connectors.kafka.test_kafka_cluster import EXACTLY_ONCE, WAIT_S, produce_slowly, wait_committed
from tests.connectors.kafka.test_kafka_sink import phase1, start
from tests.connectors.test_exactly_once_files import feed

pytestmark = pytest.mark.slow

OUTAGE_S = 6.0
"""How long the broker stays away in the ride-it-out test: well within ``BROKER_OUTAGE_S``."""
COMMIT_AFTER_STOP_S = 0.025
"""When phase 2 commits after the broker was told to stop: noida-db answers such a commit, and
most of them are aborted by its restart."""
MAX_ROUNDS = 12


def upper_pipeline(servers: str, source_topic: str, sink_topic: str) -> Pipeline:
    p = Pipeline.create()
    (p.read_from(Sources.kafka(source_topic, servers, value_fn=bytes.decode))
     .with_native_timestamps(0)
     .map(str.upper)
     .write_to(Sinks.kafka(sink_topic, servers)))
    return p


def upper_job(cluster, servers: str, partitions: tuple[int, int], values: list[str]):
    """The job over new topics "in" and "out" of ``partitions``, ``values`` written into "in"."""
    create_topic(servers, "in", partitions[0])
    create_topic(servers, "out", partitions[1])
    job = cluster.new_job(upper_pipeline(servers, "in", "out"), EXACTLY_ONCE)
    produce_slowly(servers, "in", partitions[0], values)
    return job


def test_an_exactly_once_job_rides_out_a_broker_restart(restartable_broker, tmp_path):
    broker = restartable_broker
    servers = broker.bootstrap_servers
    values = [f"r{i}" for i in range(2000)]
    with jet.local_cluster(members=2, log_dir=tmp_path / "logs") as cluster:
        job = upper_job(cluster, servers, (4, 2), values[:1000])
        wait_until(lambda: len(committed_values(servers, "out", 2)) >= 300, WAIT_S, "output before the stop")
        broker.stop()
        time.sleep(OUTAGE_S)
        broker.start()
        assert job.status.name == "RUNNING", "the job rode the outage out"
        produce_slowly(servers, "in", 4, values[1000:])
        got = wait_committed(servers, "out", 2, len(values))
        assert job.status.name == "RUNNING" and job.info()["restarts"] == 0
        job.cancel()
    assert Counter(got) == Counter(v.upper().encode() for v in values), "each record once, none lost"


def test_a_broker_that_stays_away_fails_the_job_in_bounded_time_naming_it(restartable_broker, tmp_path):
    broker = restartable_broker
    servers = broker.bootstrap_servers
    values = [f"r{i}" for i in range(600)]
    with jet.local_cluster(members=2, log_dir=tmp_path / "logs") as cluster:
        job = upper_job(cluster, servers, (2, 1), values)
        before = wait_committed(servers, "out", 1, len(values))
        broker.stop()
        message, took = join_failure(job, BROKER_OUTAGE_S + 60)
        broker.start()
    assert servers in message and "Kafka" in message, message
    assert took < BROKER_OUTAGE_S + 45, f"failed after {took:.0f} s"
    assert Counter(before) == Counter(v.upper().encode() for v in values)
    assert Counter(committed_values(servers, "out", 1)) == Counter(before), "what was committed stays, once"


def commit_while_the_broker_restarts(sink, broker, outage_s: float = 1.0) -> None:
    """Ctrl-C to the broker, phase 2 of ``sink`` on a thread right after it, the broker started
    again on this thread (its PR_SET_PDEATHSIG kills it when the thread that started it ends)."""
    process = broker.process
    process.send_signal(signal.SIGINT)
    time.sleep(COMMIT_AFTER_STOP_S)
    finished: list[bool] = []
    commit = threading.Thread(target=lambda: finished.append(sink.snapshot_commit_finish(True)), name="phase-2")
    commit.start()
    process.wait(STOP_TIMEOUT_S)
    time.sleep(outage_s)
    broker.start()
    commit.join()
    assert finished == [True], "phase 2 ended"  # told committed, whatever the broker kept


def test_a_commit_the_broker_acknowledged_and_lost_in_its_restart_is_written_again(restartable_broker):
    servers = restartable_broker.bootstrap_servers
    create_topic(servers, "out", 1)
    written: list[str] = []
    for round_ in range(MAX_ROUNDS):  # a new sink each time: no 15 s wait for a restarted producer
        sink = start(Sinks.kafka("out", servers), job=f"sink-job-{round_}")
        batch = [f"r{round_}-{i}" for i in range(20)]
        feed(sink, batch)
        written += batch
        phase1(sink)
        commit_while_the_broker_restarts(sink, restartable_broker)
        [log] = committed_log(servers, "out", 1)
        if batch[0].encode() not in {record.value for record in log.committed}:
            break  # the broker lost a commit it answered: what the sink must make good
        sink.close()
    else:
        pytest.skip(f"the broker kept every commit in {MAX_ROUNDS} restarts: nothing was lost to make good")
    feed(sink, ["last"])
    written.append("last")
    phase1(sink)
    assert sink.snapshot_commit_finish(True) is True
    sink.close()
    assert Counter(committed_values(servers, "out")) == Counter(v.encode() for v in written), "each record once"
