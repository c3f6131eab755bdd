"""Per-vertex metrics with Jet's names: read from the tasklets, merged over processors and
members, exported per processor on every member's ``/metrics``, logged for streams."""

from __future__ import annotations

import urllib.request
from collections import Counter
from types import SimpleNamespace

import pytest
from jet.cluster.member_http import MemberMetrics
from jet.core import AbstractProcessor
from jet.core.special_items import MIN_TIMESTAMP, Watermark
from jet.execution.vertex_metrics import (
    merge_vertex_metrics,
    processor_metrics,
    progress_line,
    vertex_metrics,
    watermark_lag_ms,
)
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster.cluster_support import wait_until

NOW_MS = 1_700_000_000_000


def fake_tasklet(vertex, index, items_in, items_out, top=MIN_TIMESTAMP, coalesced=MIN_TIMESTAMP,
                 forwarded=MIN_TIMESTAMP, late=None):
    """What the collectors read of a processor tasklet, and nothing more."""
    processor = SimpleNamespace() if late is None else SimpleNamespace(late_events_dropped=late)
    return SimpleNamespace(items_in=items_in, items_out=items_out, top_observed_wm=top, coalesced_wm=coalesced,
                           last_forwarded_wm=forwarded, processor=processor,
                           context=SimpleNamespace(vertex_name=vertex, local_index=index))


TASKLETS = [
    fake_tasklet("source", 0, 0, 100, forwarded=NOW_MS - 40),
    fake_tasklet("source", 1, 0, 50, forwarded=NOW_MS - 90),
    fake_tasklet("window", 0, 80, 3, top=NOW_MS - 40, coalesced=NOW_MS - 90, forwarded=NOW_MS - 90, late=2),
    fake_tasklet("window", 1, 70, 4, top=NOW_MS - 35, coalesced=NOW_MS - 60, forwarded=NOW_MS - 60, late=5),
    fake_tasklet("sink", 0, 7, 0),
]


NOTHING_COUNTED = dict.fromkeys(("receivedBatches", "queuesSize", "queuesCapacity", "snapshotBytes", "snapshotKeys",
                                  "backPressuredTimeMs"), 0)
"""The fakes have no queues, batches, snapshots or outputs to count."""


def oracle(tasklets):
    """The merge rules written out: counts add up, the top watermark is the highest, the
    coalesced and forwarded ones the lowest, the latency the worst."""
    result = {}
    for vertex in dict.fromkeys(t.context.vertex_name for t in tasklets):
        mine = [t for t in tasklets if t.context.vertex_name == vertex]
        forwarded = [t.last_forwarded_wm for t in mine]
        result[vertex] = {
            "in": sum(t.items_in for t in mine), "out": sum(t.items_out for t in mine),
            "topObservedWm": max(t.top_observed_wm for t in mine),
            "coalescedWm": min(t.coalesced_wm for t in mine),
            "lastForwardedWm": min(forwarded),
            "lastForwardedWmLatency": max(NOW_MS - f if f != MIN_TIMESTAMP else MIN_TIMESTAMP for f in forwarded),
            "lateEventsDropped": sum(getattr(t.processor, "late_events_dropped", 0) for t in mine),
            **NOTHING_COUNTED,
        }
    return result


def test_a_vertex_merges_its_processors_figures():
    assert vertex_metrics(TASKLETS, NOW_MS) == oracle(TASKLETS)


def test_members_merge_as_processors_do():
    on_member_0, on_member_1 = vertex_metrics(TASKLETS[::2], NOW_MS), vertex_metrics(TASKLETS[1::2], NOW_MS)
    assert merge_vertex_metrics([on_member_0, on_member_1]) == oracle(TASKLETS)


def test_a_tasklet_without_watermark_attributes_reads_as_none_yet():
    bare = SimpleNamespace(items_in=3, items_out=2, processor=object(), context=None)
    figures = processor_metrics(bare, NOW_MS)
    assert figures == {"in": 3, "out": 2, "topObservedWm": MIN_TIMESTAMP, "coalescedWm": MIN_TIMESTAMP,
                       "lastForwardedWm": MIN_TIMESTAMP, "lastForwardedWmLatency": MIN_TIMESTAMP,
                       "lateEventsDropped": 0, **NOTHING_COUNTED}


def test_watermark_lag_is_now_minus_the_coalesced_one_or_a_sources_forwarded_one():
    metrics = vertex_metrics(TASKLETS, NOW_MS)
    assert watermark_lag_ms(metrics["window"], NOW_MS) == 90
    assert watermark_lag_ms(metrics["source"], NOW_MS) == 90
    assert watermark_lag_ms(metrics["sink"], NOW_MS) is None
    line = progress_line("window", metrics["window"], 12.0, NOW_MS)
    assert line == "window: in=150 out=7 rate=12/s wm_lag=90 ms late=7"


def test_metrics_of_an_older_members_report_merge_without_the_new_keys():
    merged = merge_vertex_metrics([{"map": {"in": 1, "out": 2}}, vertex_metrics([fake_tasklet("map", 0, 3, 4)])])
    assert merged["map"]["in"] == 4 and merged["map"]["out"] == 6


def scraped(text: str) -> dict[tuple[str, tuple], float]:
    """(metric name, sorted labels) -> value of every jet_vertex_ sample."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples
            if sample.name.startswith("jet_vertex_")}


def test_metrics_endpoint_exports_every_processor_with_jets_names():
    execution = SimpleNamespace(job_id="j-1", execution_id=7, member_index=1,
                                message=SimpleNamespace(job_name="trades"), plan=SimpleNamespace(tasklets=TASKLETS))
    metrics = MemberMetrics(1)
    metrics.watch_executions(lambda: [execution])
    samples = scraped(metrics.text().decode())
    labels = (("execution", "7"), ("job", "j-1"), ("job_name", "trades"), ("member", "1"), ("processor", "1"),
              ("vertex", "window"))
    assert samples[("jet_vertex_receivedCount", labels)] == 70
    assert samples[("jet_vertex_emittedCount", labels)] == 4
    assert samples[("jet_vertex_coalescedWm", labels)] == NOW_MS - 60
    assert samples[("jet_vertex_topObservedWm", labels)] == NOW_MS - 35
    assert samples[("jet_vertex_lastForwardedWm", labels)] == NOW_MS - 60
    assert samples[("jet_vertex_lateEventsDropped", labels)] == 5
    assert samples[("jet_vertex_lastForwardedWmLatency", labels)] >= 60  # wall clock now, later than NOW_MS
    names = {name for name, _ in samples}
    assert names == {f"jet_vertex_{name}" for name in ("receivedCount", "emittedCount", "topObservedWm",
                                                       "coalescedWm", "lastForwardedWm", "lastForwardedWmLatency",
                                                       "lateEventsDropped", *NOTHING_COUNTED)}
    assert len(samples) == (7 + len(NOTHING_COUNTED)) * len(TASKLETS)


def test_no_execution_exports_no_vertex_samples():
    metrics = MemberMetrics(0)
    metrics.watch_executions(lambda: [])
    assert scraped(metrics.text().decode()) == {}


def ticking_dag():
    from jet.core import DAG, Edge
    from jet.core.processors import noop_p

    from tests.cluster.cluster_support import endless_source

    dag = DAG()
    dag.is_streaming = True
    source = dag.new_vertex("ticks", endless_source(), 1)
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(source, sink).distributed())
    return dag


def fetch_metrics(port: int) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:  # noqa: S310
        return scraped(response.read().decode())


def counts_of(samples, name, vertex):
    return {dict(labels)["member"]: value for (metric, labels), value in samples.items()
            if metric == name and dict(labels)["vertex"] == vertex}


@pytest.mark.timeout(120)
def test_a_running_job_shows_on_every_members_metrics_and_in_the_clients_job_metrics(tmp_path_factory):
    from jet.cluster.local.local_cluster import LocalCluster

    log_dir = tmp_path_factory.mktemp("progress-logs")
    with LocalCluster(2, log_dir=log_dir, progress_log_interval_ms=200) as cluster:
        job = cluster.new_job(ticking_dag(), {"name": "ticking"})
        wait_until(lambda: job.metrics().get("sink", {}).get("in", 0) > 0, what="items at the sink")
        per_member = [fetch_metrics(port) for port in cluster.http_ports]
        for member, samples in enumerate(per_member):
            received = counts_of(samples, "jet_vertex_receivedCount", "sink")
            assert list(received) == [str(member)], samples  # each member exports its own processors
        emitted = sum(sum(counts_of(s, "jet_vertex_emittedCount", "ticks").values()) for s in per_member)
        assert emitted > 0
        client_view = job.metrics()
        assert set(client_view["sink"]) >= {"in", "out", "coalescedWm", "lateEventsDropped"}
        assert client_view["ticks"]["out"] >= emitted  # later than the scrape, and counts only grow
        wait_until(lambda: all("progress sink: in=" in path.read_text() for path in cluster.log_paths),
                   what="a progress line per vertex in every member's log")
        job.cancel()
        with pytest.raises(Exception, match="cancel"):
            job.join(30)
        wait_until(lambda: not any(counts_of(fetch_metrics(port), "jet_vertex_receivedCount", "sink")
                                   for port in cluster.http_ports), what="the ended job gone from /metrics")


#: What the source of member 0 emits, in order: pairs (timestamp, word) and watermarks.
STEPS = [(1_000, "a"), (1_500, "b"), Watermark(2_000), (1_200, "late"), (1_300, "later"), (2_500, "c"),
         Watermark(3_000)]


class StepsSource(AbstractProcessor):
    """Member 0's processor emits STEPS; the others none (so lateness does not depend on which
    member's watermark comes first)."""

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._steps = list(STEPS) if context.member_index == 0 and context.local_index == 0 else []

    def complete(self) -> bool:
        while self._steps:
            if not self.try_emit(self._steps[0]):
                return False
            self._steps.pop(0)
        return True


def windowed_dag():
    from jet.connectors.sinks import ListResultSinkP
    from jet.core import DAG, Edge
    from jet.core.functions import whole_item
    from jet.core.processors import aggregate_to_sliding_window_p
    from jet.core.sliding_window_policy import tumbling_win_policy
    from jet.pipeline.aggregate_operations import AggregateOperations

    dag = DAG()
    source = dag.new_vertex("steps", StepsSource, 1)
    window = dag.new_vertex("window", aggregate_to_sliding_window_p(
        whole_item, tumbling_win_policy(1_000), AggregateOperations.counting()), 1)
    sink = dag.new_vertex("sink", lambda: ListResultSinkP("windows"), 1)
    dag.edge(Edge.between(source, window).partitioned(lambda pair: pair[1]).distributed())
    dag.edge(Edge.between(window, sink))
    return dag


def oracle_windows(steps):
    """Tumbling 1 s counts per word, leaving out what came behind a watermark."""
    watermark, counts = MIN_TIMESTAMP, Counter()
    for step in steps:
        if isinstance(step, Watermark):
            watermark = step.timestamp
        elif step[0] // 1_000 * 1_000 + 1_000 > watermark:
            counts[step[0] // 1_000 * 1_000, step[1]] += 1
    return sorted((start, start + 1_000, word, n) for (start, word), n in counts.items())


LATE = [step[1] for i, step in enumerate(STEPS) if not isinstance(step, Watermark)
        and any(isinstance(s, Watermark) and s.timestamp > step[0] for s in STEPS[:i])]


def test_late_events_are_counted_where_they_are_dropped_on_one_member():
    from jet.execution import execute

    results = execute(windowed_dag(), timeout=30)
    got = sorted((r.start, r.end, r.key, r.result) for _, r in results["windows"])
    assert got == oracle_windows(STEPS)


@pytest.mark.timeout(120)
def test_watermarks_and_late_events_merge_over_two_members(cluster2):
    job = cluster2.new_job(windowed_dag(), {"name": "windowed"})
    job.join(60)
    got = sorted((r.start, r.end, r.key, r.result) for _, r in job.result("windows"))
    on_time = oracle_windows(STEPS)
    # Which late event a processor drops depends on when the other member's source ended there
    # (until then that input holds its watermark back): each is counted or dropped, never both.
    counted_late = [w for w in got if w[2] in LATE]
    assert [w for w in got if w[2] not in LATE] == on_time
    metrics = job.metrics()
    assert metrics["window"]["lateEventsDropped"] + len(counted_late) == len(LATE) == 2
    assert metrics["steps"]["lastForwardedWm"] == MIN_TIMESTAMP, "member 1's source forwarded none"
    assert metrics["window"]["topObservedWm"] == 3_000
    assert metrics["steps"]["out"] == len(STEPS) - 2 == metrics["window"]["in"]
