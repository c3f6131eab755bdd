"""The snapshot store: job records, two alternating snapshot slots per job, named exports.

Layout under the store's root URL::

    jobs/<job_id>/record.json                         the JobRecord without its DAG
    jobs/<job_id>/dag.pickle                          the pickled DAG
    jobs/<job_id>/snapshots/<0|1>/<snapshot_id>/chunks/<vertex>.<member>.<sequence>[.g<group>].<crc32>.pkl
    jobs/<job_id>/snapshots/<0|1>/<snapshot_id>/validation.json   written after every chunk
    exports/<name>/chunks/...  exports/<name>/validation.json

The commit point of a snapshot is the job record: its validation record is written after all
its chunks, then the job record's ``last_good_snapshot_id``/``last_good_slot`` is replaced
atomically (a rename locally, a single PUT on an object store). A new snapshot always goes into
the slot that is not the last good one, so an abandoned or failed snapshot never damages the
last good snapshot. Each chunk's name carries the CRC-32 of its bytes: :meth:`SnapshotStore.verify`
reads every chunk and checks it before a job is restored, and reading a chunk checks it again, so a
damaged snapshot is refused naming the chunk instead of restoring wrong state.

A chunk is one or more pickles of ``(vertex, entries)`` one after the other. A chunk named with
a partition group (``g<group>``) holds only keyed entries of partitions in that group
(:mod:`jet.execution.snapshot_portions`), so a restore passes ``wanted`` and reads only the
chunks of groups its member owns partitions of; every member reads the chunks without a group.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any, Callable
from urllib.parse import quote, unquote

import zlib

from jet.core.state_pickle import dumps_state
from jet.execution.snapshot_portions import chunk_pickles
from jet.snapshot.errors import SnapshotError
from jet.snapshot.fs import list_names, open_url, remove_tree, write_atomic
from jet.snapshot.records import JobRecord, SnapshotInfo

VALIDATION = "validation.json"
CHUNKS = "chunks"

ChunkFilter = Callable[[str, "int | None"], bool]
"""``wanted(vertex, group)``: whether a restore reads a chunk (see the module docstring)."""


class SnapshotWriter:
    """Writes one snapshot's chunks into its slot; :meth:`commit` makes it the last good one.

    Members other than the coordinator get a writer with :meth:`SnapshotStore.join_snapshot`
    and only call :meth:`write_chunk`; the coordinator commits once all chunks are written.
    """

    def __init__(self, store: SnapshotStore, job_id: str, snapshot_id: int, slot: int) -> None:
        self.store = store
        self.job_id = job_id
        self.snapshot_id = snapshot_id
        self.slot = slot
        self.dir = store._snapshot_dir(job_id, slot, snapshot_id)
        self.keys_written = 0
        self.bytes_written = 0
        self.committed = False

    def write_chunk(self, vertex: str, member: int, sequence: int,
                    entries: list[tuple[Any, Any]]) -> str:
        """Write one chunk of (key, value) entries of ``vertex`` from ``member``; its file name."""
        if self.committed:
            raise SnapshotError(f"job {self.job_id}: snapshot {self.snapshot_id} in slot "
                                f"{self.slot} is already committed; no more chunks")
        data = dumps_state((vertex, list(entries)))
        self.keys_written += len(entries)
        return self.write_chunk_bytes(vertex, member, sequence, data)

    def write_chunk_bytes(self, vertex: str, member: int, sequence: int, data: bytes,
                          group: int | None = None) -> str:
        """Write one chunk already pickled as ``(vertex, entries)`` (one pickle or several one
        after the other) of partition group ``group`` (None: every member reads it); its file name."""
        if self.committed:
            raise SnapshotError(f"job {self.job_id}: snapshot {self.snapshot_id} in slot "
                                f"{self.slot} is already committed; no more chunks")
        grouped = "" if group is None else f".g{int(group)}"
        name = f"{quote(vertex, safe='')}.{member}.{sequence}{grouped}.{zlib.crc32(data):08x}.pkl"
        self.store.fs.pipe_file(f"{self.dir}/{CHUNKS}/{name}", data)
        self.bytes_written += len(data)
        return name

    def commit(self, stats: dict[str, Any] | None = None) -> SnapshotInfo:
        """Write the validation record, then make this snapshot the job's last good one.

        The chunks counted are the files in the snapshot's directory (every member's).
        ``stats["keys"]``, if given, is the total key count (when other members wrote chunks
        through their own writers); otherwise the keys written through this writer.
        """
        stats = dict(stats or {})
        fs = self.store.fs
        chunk_dir = f"{self.dir}/{CHUNKS}"
        chunks = tuple(list_names(fs, chunk_dir))
        num_bytes = sum(fs.size(f"{chunk_dir}/{c}") for c in chunks)
        record = self.store.load_job_record(self.job_id)
        info = SnapshotInfo(
            job_id=self.job_id, job_name=record.name, snapshot_id=self.snapshot_id,
            slot=self.slot, chunk_count=len(chunks), num_bytes=num_bytes,
            num_keys=int(stats.get("keys", self.keys_written)), created=time.time(),
            chunks=chunks, stats=stats)
        fs.pipe_file(f"{self.dir}/{VALIDATION}", info.to_json().encode())
        record.last_good_snapshot_id = self.snapshot_id
        record.last_good_slot = self.slot
        if record.ongoing_snapshot_id == self.snapshot_id:
            record.ongoing_snapshot_id = -1
        self.store.save_job_record(record, with_dag=False)  # the commit point
        self.committed = True
        return info


class SnapshotStore:
    """Job records and snapshots under one fsspec URL (see the module docstring for the layout)."""

    def __init__(self, url: str, endpoint_url: str | None = None,
                 **storage_options: Any) -> None:
        self.url = url
        self.fs, self.root = open_url(url, endpoint_url=endpoint_url, **storage_options)

    # ----- paths
    def _job_dir(self, job_id: str) -> str:
        return f"{self.root}/jobs/{quote(str(job_id), safe='')}"

    def _snapshot_dir(self, job_id: str, slot: int, snapshot_id: int) -> str:
        return f"{self._job_dir(job_id)}/snapshots/{slot}/{snapshot_id}"

    def _export_dir(self, name: str) -> str:
        return f"{self.root}/exports/{quote(name, safe='')}"

    # ----- job records
    def save_job_record(self, record: JobRecord, with_dag: bool = True) -> None:
        """Store ``record`` (its DAG bytes beside it); replaces the previous record atomically."""
        job_dir = self._job_dir(record.job_id)
        try:
            text = record.to_json()
        except (TypeError, ValueError) as e:
            raise SnapshotError(f"job {record.job_id}: its record's config is not JSON "
                                f"({e}); store such values inside the pickled DAG") from e
        if with_dag:
            write_atomic(self.fs, f"{job_dir}/dag.pickle", record.dag)
        write_atomic(self.fs, f"{job_dir}/record.json", text.encode())

    def load_job_record(self, job_id: str) -> JobRecord:
        """The stored record of ``job_id``; :class:`SnapshotError` if there is none."""
        job_dir = self._job_dir(job_id)
        try:
            text = self.fs.cat_file(f"{job_dir}/record.json").decode()
        except FileNotFoundError:
            raise SnapshotError(f"job {job_id}: no job record at {job_dir}/record.json") from None
        try:
            dag = self.fs.cat_file(f"{job_dir}/dag.pickle")
        except FileNotFoundError:
            dag = b""
        try:
            return JobRecord.from_json(text, dag)
        except (ValueError, TypeError) as e:
            raise SnapshotError(f"job {job_id}: damaged job record at "
                                f"{job_dir}/record.json: {e}") from e

    def list_jobs(self) -> list[str]:
        """The ids of the jobs that have a record."""
        self.fs.invalidate_cache()
        jobs = []
        for name in list_names(self.fs, f"{self.root}/jobs"):
            if self.fs.exists(f"{self.root}/jobs/{name}/record.json"):
                jobs.append(_unquote(name))
        return jobs

    def delete_job(self, job_id: str) -> None:
        """Remove the job's record and both its snapshot slots (exports stay)."""
        remove_tree(self.fs, self._job_dir(job_id))

    # ----- snapshots
    def begin_snapshot(self, job_id: str, snapshot_id: int) -> SnapshotWriter:
        """Start snapshot ``snapshot_id`` in the slot that is not the last good one.

        That slot is cleared first and the job record's ``ongoing_snapshot_id`` set; a job
        without a record gets a minimal one.
        """
        try:
            record = self.load_job_record(job_id)
        except SnapshotError:
            record = JobRecord(job_id=job_id)
            self.save_job_record(record)
        slot = (record.last_good_slot + 1) % 2
        remove_tree(self.fs, f"{self._job_dir(job_id)}/snapshots/{slot}")
        record.ongoing_snapshot_id = snapshot_id
        self.save_job_record(record, with_dag=False)
        return SnapshotWriter(self, job_id, snapshot_id, slot)

    def join_snapshot(self, job_id: str, snapshot_id: int, slot: int) -> SnapshotWriter:
        """A writer for another member's chunks of a snapshot the coordinator has begun."""
        return SnapshotWriter(self, job_id, snapshot_id, slot)

    def last_good(self, job_id: str) -> SnapshotInfo | None:
        """The validated last good snapshot of ``job_id``, or None if it has none."""
        record = self.load_job_record(job_id)
        if record.last_good_snapshot_id < 0:
            return None
        directory = self._snapshot_dir(job_id, record.last_good_slot, record.last_good_snapshot_id)
        where = f"job {job_id}, slot {record.last_good_slot}, snapshot {record.last_good_snapshot_id}"
        return self._validate(directory, where, record.last_good_snapshot_id)

    def verify(self, job_id: str, snapshot_id: int, slot: int) -> SnapshotInfo:
        """Check the snapshot completely before it is restored: its validation record, every
        chunk present and of the recorded count, and every chunk's bytes against its CRC-32;
        :class:`SnapshotError` naming the snapshot and what is wrong."""
        directory = self._snapshot_dir(job_id, slot, snapshot_id)
        where = f"job {job_id}, snapshot {snapshot_id} in slot {slot}"
        info = self._validate(directory, where, snapshot_id)
        for chunk in info.chunks:
            self._chunk_bytes(directory, chunk, where)
        return info

    def verify_export(self, name: str) -> SnapshotInfo:
        """:meth:`verify` for the export ``name``."""
        directory, where = self._export_dir(name), f"export {name!r}"
        info = self._validate(directory, where, None)
        for chunk in info.chunks:
            self._chunk_bytes(directory, chunk, where)
        return info

    def older_snapshot(self, job_id: str) -> SnapshotInfo | None:
        """The complete snapshot in the slot that is not the last good one, if it is older than
        the last good one (the one before it, until the next snapshot starts over that slot)."""
        record = self.load_job_record(job_id)
        if record.last_good_slot < 0:
            return None
        slot = (record.last_good_slot + 1) % 2
        ids = sorted((int(name) for name in list_names(self.fs, f"{self._job_dir(job_id)}/snapshots/{slot}")
                      if name.isdigit() and int(name) < record.last_good_snapshot_id), reverse=True)
        for snapshot_id in ids:
            try:
                return self._validate(self._snapshot_dir(job_id, slot, snapshot_id),
                                      f"job {job_id}, snapshot {snapshot_id} in slot {slot}", snapshot_id)
            except SnapshotError:
                continue
        return None

    def restore_older_snapshot(self, job_id: str) -> SnapshotInfo:
        """Make the older snapshot (:meth:`older_snapshot`), verified, the job's last good one:
        the explicit fall-back when the last good one is damaged. ``SnapshotError`` when there
        is none or it is damaged too."""
        info = self.older_snapshot(job_id)
        if info is None:
            raise SnapshotError(f"job {job_id}: no older complete snapshot in its other slot to fall back to")
        self.verify(job_id, info.snapshot_id, info.slot)
        record = self.load_job_record(job_id)
        record.last_good_snapshot_id, record.last_good_slot = info.snapshot_id, info.slot
        self.save_job_record(record, with_dag=False)
        return info

    def read_snapshot(self, job_id: str, expected_id: int | None = None,
                      wanted: ChunkFilter | None = None) -> Iterator[tuple[str, Any, Any]]:
        """(vertex, key, value) of every entry of the job's last good snapshot (which must be
        ``expected_id`` when given), of the chunks ``wanted`` (default: all)."""
        info = self.last_good(job_id)
        if info is None:
            raise SnapshotError(f"job {job_id}: has no snapshot")
        if expected_id is not None and info.snapshot_id != expected_id:
            raise SnapshotError(f"job {job_id}: snapshot {expected_id} was to be restored, but the last good "
                                f"snapshot in the store is {info.snapshot_id}")
        directory = self._snapshot_dir(job_id, info.slot, info.snapshot_id)
        where = f"job {job_id}, slot {info.slot}, snapshot {info.snapshot_id}"
        return self._read_entries(directory, info, where, wanted)

    # ----- exports
    def export(self, job_id: str, name: str) -> SnapshotInfo:
        """Copy the job's last good snapshot to the export ``name`` (replacing one of that name)."""
        info = self.last_good(job_id)
        if info is None:
            raise SnapshotError(f"job {job_id}: has no snapshot to export as {name!r}")
        src = self._snapshot_dir(job_id, info.slot, info.snapshot_id)
        dst = self._export_dir(name)
        remove_tree(self.fs, dst)
        for chunk in info.chunks:
            self.fs.pipe_file(f"{dst}/{CHUNKS}/{chunk}",
                              self.fs.cat_file(f"{src}/{CHUNKS}/{chunk}"))
        exported = SnapshotInfo(**{**_fields(info), "slot": -1, "created": time.time()})
        self.fs.pipe_file(f"{dst}/{VALIDATION}", exported.to_json().encode())
        return exported

    def export_info(self, name: str) -> SnapshotInfo:
        """The validated record of the export ``name``."""
        return self._validate(self._export_dir(name), f"export {name!r}", None)

    def read_export(self, name: str, wanted: ChunkFilter | None = None) -> Iterator[tuple[str, Any, Any]]:
        """(vertex, key, value) of every entry of the export ``name``, of the chunks ``wanted``."""
        info = self.export_info(name)
        return self._read_entries(self._export_dir(name), info, f"export {name!r}", wanted)

    def list_exports(self) -> list[str]:
        """The names of the complete exports."""
        self.fs.invalidate_cache()
        names = list_names(self.fs, f"{self.root}/exports")
        return [_unquote(n) for n in names
                if self.fs.exists(f"{self.root}/exports/{n}/{VALIDATION}")]

    def delete_export(self, name: str) -> None:
        remove_tree(self.fs, self._export_dir(name))

    # ----- validation and reading
    def _validate(self, directory: str, where: str, expected_id: int | None) -> SnapshotInfo:
        try:
            text = self.fs.cat_file(f"{directory}/{VALIDATION}").decode()
        except FileNotFoundError:
            raise SnapshotError(f"{where}: doesn't exist or is damaged (no validation record "
                                f"at {directory}/{VALIDATION})") from None
        try:
            info = SnapshotInfo.from_json(text)
        except (ValueError, TypeError) as e:
            raise SnapshotError(f"{where}: damaged validation record at "
                                f"{directory}/{VALIDATION}: {e}") from e
        if expected_id is not None and info.snapshot_id != expected_id:
            raise SnapshotError(f"{where}: validation record at {directory} is for snapshot "
                                f"{info.snapshot_id}")
        present = set(list_names(self.fs, f"{directory}/{CHUNKS}"))
        missing = [c for c in info.chunks if c not in present]
        if missing or len(present) != info.chunk_count:
            raise SnapshotError(
                f"{where}: corrupted at {directory}: {info.chunk_count} chunks recorded, "
                f"{len(present)} present" + (f", missing {missing[:5]}" if missing else ""))
        return info

    def _read_entries(self, directory: str, info: SnapshotInfo, where: str,
                      wanted: ChunkFilter | None = None) -> Iterator[tuple[str, Any, Any]]:
        for chunk in info.chunks:
            if wanted is not None and not wanted(*chunk_vertex_and_group(chunk)):
                continue
            pickles = chunk_pickles(self._chunk_bytes(directory, chunk, where))
            while True:
                try:
                    vertex, entries = next(pickles)
                except StopIteration:
                    break
                except Exception as e:  # unpickling a damaged chunk can raise almost anything
                    raise SnapshotError(f"{where}: chunk {directory}/{CHUNKS}/{chunk} is damaged: {e!r}") from e
                for key, value in entries:
                    yield vertex, key, value

    def _chunk_bytes(self, directory: str, chunk: str, where: str) -> bytes:
        """A chunk's bytes, checked against the CRC-32 its name carries."""
        path = f"{directory}/{CHUNKS}/{chunk}"
        try:
            data = self.fs.cat_file(path)
        except FileNotFoundError:
            raise SnapshotError(f"{where}: chunk {path} is missing") from None
        recorded = chunk.rsplit(".", 2)[-2] if chunk.count(".") >= 4 else None  # see write_chunk_bytes
        if recorded is not None and f"{zlib.crc32(data):08x}" != recorded:
            raise SnapshotError(f"{where}: chunk {path} is damaged: its CRC-32 is {zlib.crc32(data):08x}, "
                                f"{recorded} when it was written ({len(data)} bytes now)")
        return data


def chunk_vertex_and_group(chunk: str) -> tuple[str, int | None]:
    """The vertex and partition group (None: none) a chunk's file name carries."""
    parts = chunk.rsplit(".", 5)
    if len(parts) == 6 and parts[3].startswith("g") and parts[3][1:].isdigit():
        return unquote(parts[0]), int(parts[3][1:])
    return unquote(chunk.rsplit(".", 4)[0]), None


def _unquote(name: str) -> str:
    return unquote(name)


def _fields(info: SnapshotInfo) -> dict[str, Any]:
    return {f.name: getattr(info, f.name) for f in dataclasses.fields(info)}
