"""One member's metrics of one execution as tagged measurements (Jet's ``JobMetrics``).

A measurement is ``{"metric": Jet name, "value": int, "tags": {...}}``. What ``Job.measurements()``
returns and what a member's ``/metrics`` exports (:mod:`jet.cluster.executions.vertex_collector`) are the
same measurements:

- per processor (family ``jet_vertex_<metric>``): every figure of
  :func:`jet.execution.vertex_metrics.processor_metrics`, tags :data:`PROCESSOR_TAGS`;
- per outbound ordinal of a processor (family ``jet_edge_<metric>``): ``emittedCount`` and
  ``backPressuredTimeMs``, tags :data:`ORDINAL_TAGS`;
- per distributed edge and remote member (family ``jet_edge_<metric>``, from
  :mod:`jet.cluster.edges.edge_metrics`): tags :data:`DISTRIBUTED_TAGS`.

``processor`` is the processor's index among its vertex's processors on the member; ``ordinal``
the producer's outbound ordinal.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, Mapping, Sequence

from jet.execution.vertex_metrics import BACK_PRESSURED_TIME_MS, JET_NAMES, back_pressured_ms, now_ms, processor_metrics

Measurement = dict[str, Any]
"""``{"metric": str, "value": int, "tags": dict[str, str]}``."""

PROCESSOR_TAGS = ("job", "job_name", "execution", "vertex", "processor", "member")
ORDINAL_TAGS = ("job", "job_name", "execution", "vertex", "processor", "ordinal", "to_vertex", "member")
DISTRIBUTED_TAGS = ("job", "job_name", "execution", "vertex", "ordinal", "to_vertex", "member", "remote_member")

EMITTED_COUNT = "emittedCount"
ORDINAL_METRICS = (EMITTED_COUNT, BACK_PRESSURED_TIME_MS)
"""The per-ordinal metrics of a processor."""


def execution_tags(job_id: str, job_name: str, execution_id: int | str, member: int | str) -> dict[str, str]:
    """The tags every measurement of one execution on one member carries."""
    return {"job": str(job_id), "job_name": str(job_name), "execution": str(execution_id), "member": str(member)}


def measurement(metric: str, value: int, tags: Mapping[str, str]) -> Measurement:
    return {"metric": metric, "value": int(value), "tags": dict(tags)}


def processor_measurements(tasklets: Iterable[Any], base_tags: Mapping[str, str],
                           wall_ms: int | None = None) -> Iterator[Measurement]:
    """Each processor tasklet's figures and its outbound ordinals', tagged (read without locks)."""
    wall_ms = now_ms() if wall_ms is None else wall_ms
    for tasklet in tasklets:
        context = tasklet.context
        tags = {**base_tags, "vertex": context.vertex_name, "processor": str(context.local_index)}
        for key, value in processor_metrics(tasklet, wall_ms).items():
            yield measurement(JET_NAMES[key], value, tags)
        for ordinal, to_vertex in enumerate(getattr(tasklet, "to_vertices", ())):
            edge_tags = {**tags, "ordinal": str(ordinal), "to_vertex": to_vertex}
            yield measurement(EMITTED_COUNT, tasklet.emitted_per_ordinal[ordinal], edge_tags)
            yield measurement(BACK_PRESSURED_TIME_MS, back_pressured_ms(tasklet, ordinal), edge_tags)


PackedMeasurements = dict[str, list]
"""``{"tags": [tag set, ...], "rows": [[metric, value, index of its tag set], ...]}``, and
optionally ``"remote": [group, ...]``, measurements that differ only in their ``remote_member``
tag (a distributed edge's figures, one set per remote member: :func:`remote_group`), unpacked
after the rows."""

REMOTE_MEMBER_TAG = "remote_member"


def pack_measurements(measurements: Iterable[Measurement]) -> PackedMeasurements:
    """The wire form of one member's measurements: each distinct tag set once, each measurement a
    short row. A member's k - 1 remote edges give many measurements sharing few tag sets, and the
    coordinator decodes every member's at each job's end: this keeps that a few KB, not tens."""
    tag_sets: list[dict[str, str]] = []
    index_of: dict[tuple, int] = {}
    rows = []
    for item in measurements:
        tags = item["tags"]
        key = tuple(tags.items())
        index = index_of.get(key)
        if index is None:
            index = index_of[key] = len(tag_sets)
            tag_sets.append(tags)
        rows.append([item["metric"], item["value"], index])
    return {"tags": tag_sets, "rows": rows}


def remote_group(tags: Mapping[str, str], metrics: Sequence[str]) -> dict[str, Any]:
    """An empty group of a packed ``"remote"`` section: the measurements ``metrics`` with
    ``tags`` plus a ``remote_member`` tag; for each remote member its caller appends the member
    to ``members`` and its values, in the order of ``metrics``, to ``values``."""
    return {"tags": dict(tags), "metrics": list(metrics), "members": [], "values": []}


def packed_measurements_json(packed: PackedMeasurements) -> bytes:
    """Packed measurements as JSON bytes: how an end report carries them, so that the
    coordinator keeps them as they came and decodes them only when asked (a member's k - 1
    remote edges make every report's measurements grow with k, and there are k reports)."""
    return json.dumps(packed, separators=(",", ":")).encode("utf-8")


def unpack_measurements(packed: PackedMeasurements | bytes | None) -> list[Measurement]:
    """Inverse of :func:`pack_measurements` and of the ``remote`` groups (each measurement gets
    a tag dict of its own), from the packed form or its :func:`packed_measurements_json`."""
    if not packed:
        return []
    if isinstance(packed, (bytes, bytearray)):
        packed = json.loads(packed)
    tag_sets = packed["tags"]
    result = [measurement(metric, value, tag_sets[index]) for metric, value, index in packed["rows"]]
    for group in packed.get("remote", ()):
        metrics = group["metrics"]
        for remote_member, values in zip(group["members"], group["values"]):
            tags = {**group["tags"], REMOTE_MEMBER_TAG: remote_member}
            result.extend(measurement(metric, value, tags) for metric, value in zip(metrics, values))
    return result
