"""The snapshot store on a local directory and on a real S3-compatible server (moto's)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from jet.snapshot import JobRecord, SnapshotError, SnapshotStore

from tests.s3_server import moto_s3


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server on a free port, with one bucket, and dummy AWS credentials."""
    with moto_s3("snapshots") as endpoint:
        yield endpoint


@pytest.fixture(params=["local", "s3"])
def make_store(request: pytest.FixtureRequest, tmp_path) -> Any:
    """A factory of stores over one root: a temp directory or a fresh prefix of the S3 bucket."""
    if request.param == "local":
        url = str(tmp_path / "store")
        return lambda: SnapshotStore(url)
    endpoint = request.getfixturevalue("s3_endpoint")
    url = f"s3://snapshots/{uuid.uuid4().hex}"
    return lambda: SnapshotStore(url, endpoint_url=endpoint, skip_instance_cache=True)


def _write(store: SnapshotStore, job_id: str, snapshot_id: int,
           state: dict[str, dict[Any, Any]], members: int = 2, commit: bool = True):
    """Write ``state`` (vertex -> {key: value}) as a snapshot, chunked per member; the writer."""
    writer = store.begin_snapshot(job_id, snapshot_id)
    for vertex, entries in state.items():
        items = sorted(entries.items(), key=repr)
        for member in range(members):
            part = [kv for i, kv in enumerate(items) if i % members == member]
            for seq in range(0, len(part), 3):
                writer.write_chunk(vertex, member, seq, part[seq:seq + 3])
    if commit:
        writer.commit()
    return writer


def _read(entries) -> dict[str, dict[Any, Any]]:
    out: dict[str, dict[Any, Any]] = {}
    for vertex, key, value in entries:
        assert key not in out.setdefault(vertex, {})
        out[vertex][key] = value
    return out


def _state(n: int) -> dict[str, dict[Any, Any]]:
    return {"window/accumulate": {f"k{i}": i * n for i in range(10)},
            "source": {("partition", p): p + n for p in range(4)}}


def test_job_record_round_trip(make_store) -> None:
    store = make_store()
    record = JobRecord(job_id="0a1b-2c3d", name="wc", dag=b"\x80\x05dag-bytes",
                       config={"guarantee": "exactly_once", "interval": 1.0}, status="RUNNING")
    store.save_job_record(record)
    again = make_store().load_job_record("0a1b-2c3d")
    assert again == record
    assert store.list_jobs() == ["0a1b-2c3d"]
    with pytest.raises(SnapshotError, match="job nope: no job record"):
        store.load_job_record("nope")


def test_snapshots_alternate_slots_and_read_back(make_store) -> None:
    store = make_store()
    store.save_job_record(JobRecord(job_id="j1", name="job one"))
    for n in range(1, 5):
        writer = _write(store, "j1", n, _state(n))
        assert writer.slot == (n - 1) % 2
        record = make_store().load_job_record("j1")
        assert (record.last_good_snapshot_id, record.last_good_slot) == (n, (n - 1) % 2)
        assert record.ongoing_snapshot_id == -1
        assert _read(make_store().read_snapshot("j1")) == _state(n)
        info = store.last_good("j1")
        assert info.num_keys == 14 and info.job_name == "job one" and info.num_bytes > 0


def test_abandoned_snapshot_leaves_last_good_readable(make_store) -> None:
    store = make_store()
    _write(store, "j2", 1, _state(1))
    _write(store, "j2", 2, _state(2))
    # snapshot 3 starts in the slot of snapshot 1 and the writer "crashes" halfway
    writer = store.begin_snapshot("j2", 3)
    writer.write_chunk("source", 0, 0, [("x", 1)])
    del writer
    restarted = make_store()
    assert restarted.load_job_record("j2").ongoing_snapshot_id == 3
    assert _read(restarted.read_snapshot("j2")) == _state(2)
    # the next attempt reuses the same slot and commits
    _write(restarted, "j2", 4, _state(4))
    assert _read(make_store().read_snapshot("j2")) == _state(4)


def test_first_snapshot_abandoned_means_no_snapshot(make_store) -> None:
    store = make_store()
    _write(store, "j3", 1, _state(1), commit=False)
    assert store.last_good("j3") is None
    with pytest.raises(SnapshotError, match="job j3: has no snapshot"):
        list(store.read_snapshot("j3"))


def test_damage_is_reported_with_job_slot_and_path(make_store) -> None:
    store = make_store()
    writer = _write(store, "j4", 7, _state(7))
    chunk_dir = f"{writer.dir}/chunks"
    first = sorted(store.fs.ls(chunk_dir, detail=False))[0]
    store.fs.rm(first)
    store.fs.invalidate_cache()
    with pytest.raises(SnapshotError, match=r"job j4, slot 0, snapshot 7: corrupted .*missing"):
        list(make_store().read_snapshot("j4"))
    store.fs.rm(f"{writer.dir}/validation.json")
    store.fs.invalidate_cache()
    with pytest.raises(SnapshotError, match=r"job j4, slot 0, snapshot 7: doesn't exist"):
        list(make_store().read_snapshot("j4"))


def test_damaged_chunk_content(make_store) -> None:
    store = make_store()
    writer = _write(store, "j5", 1, {"v": {"a": 1}}, members=1)
    chunk = sorted(store.fs.ls(f"{writer.dir}/chunks", detail=False))[0]
    store.fs.pipe_file(chunk, b"not a pickle")
    with pytest.raises(SnapshotError, match=r"job j5, slot 0, snapshot 1: chunk .* is damaged"):
        list(make_store().read_snapshot("j5"))


def test_exports_copy_and_overwrite(make_store) -> None:
    store = make_store()
    _write(store, "j6", 1, _state(1))
    info = store.export("j6", "before upgrade")
    assert info.slot == -1 and info.snapshot_id == 1
    _write(store, "j6", 2, _state(2))
    _write(store, "j6", 3, _state(3))  # slot of snapshot 1 reused: the export is a copy
    assert _read(make_store().read_export("before upgrade")) == _state(1)
    store.export("j6", "before upgrade")
    assert _read(make_store().read_export("before upgrade")) == _state(3)
    store.delete_job("j6")
    assert make_store().list_jobs() == []
    assert make_store().list_exports() == ["before upgrade"]
    assert _read(make_store().read_export("before upgrade")) == _state(3)
    with pytest.raises(SnapshotError, match="export 'other': doesn't exist"):
        list(store.read_export("other"))


def test_vertex_names_with_separators_and_other_members(make_store) -> None:
    store = make_store()
    writer = store.begin_snapshot("j7", 1)
    other = make_store().join_snapshot("j7", 1, writer.slot)
    writer.write_chunk("a/b c.d", 0, 0, [(1, "one")])
    other.write_chunk("a/b c.d", 1, 1, [(2, "two"), (3, None)])
    info = writer.commit({"keys": 3})
    assert info.chunk_count == 2 and info.num_keys == 3
    assert _read(make_store().read_snapshot("j7")) == {"a/b c.d": {1: "one", 2: "two", 3: None}}


def test_file_url_and_plain_path_are_the_same_store(tmp_path) -> None:
    _write(SnapshotStore(f"file://{tmp_path}/s"), "j8", 1, _state(1))
    assert (tmp_path / "s" / "jobs" / "j8" / "record.json").exists()
    assert _read(SnapshotStore(str(tmp_path / "s")).read_snapshot("j8")) == _state(1)


def test_s3_endpoint_from_environment(s3_endpoint, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    url = f"s3://snapshots/{uuid.uuid4().hex}"
    _write(SnapshotStore(url, skip_instance_cache=True), "j9", 1, _state(1))
    assert _read(SnapshotStore(url, skip_instance_cache=True).read_snapshot("j9")) == _state(1)


def test_record_config_must_be_json(tmp_path) -> None:
    store = SnapshotStore(str(tmp_path))
    with pytest.raises(SnapshotError, match="job jx: its record's config is not JSON"):
        store.save_job_record(JobRecord(job_id="jx", config={"f": object()}))


def test_validation_record_of_another_snapshot_is_rejected(make_store) -> None:
    store = make_store()
    _write(store, "j10", 5, _state(5))
    record = store.load_job_record("j10")
    record.last_good_snapshot_id = 6  # a record pointing at a snapshot the slot does not hold
    store.save_job_record(record, with_dag=False)
    with pytest.raises(SnapshotError, match=r"job j10, slot 0, snapshot 6: doesn't exist"):
        list(make_store().read_snapshot("j10"))
