"""Unbounded sources: Jet's test item stream, lines of a TCP socket, lines appended to files.

``Sources.item_stream``, ``Sources.socket`` and ``Sources.file_watcher`` build their
:class:`~jet.pipeline.source_sink.StreamSource` descriptors from the processors here.
"""

from __future__ import annotations

import codecs
import logging
import os
import socket
import time
import zlib
from fnmatch import fnmatch
from itertools import chain, repeat
from typing import Any, Callable, NamedTuple

from jet.connectors.stream_emitter import StreamEmitter, wall_clock_ms
from jet.core.event_time import EventTimePolicy
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.processors.snapshot_state import collect_positions, own_key
from jet.core.processors.sources import share_of

log = logging.getLogger("jet.connectors.stream_sources")

ITEM_STREAM_CHUNK_LIMIT = 2048
"""Most events an item stream emits per call; a source behind schedule catches up over calls."""
SOCKET_READ_BYTES = 64 * 1024
SOCKET_CONNECT_TIMEOUT_S = 10.0
SOCKET_READ_TIMEOUT_S = 0.05
"""How long one call may wait for bytes, so a cancel reaches the socket source quickly."""
FILE_WATCHER_POLL_S = 0.1
FILE_WATCHER_READ_BYTES = 1 << 20
"""Most new bytes read from one file per call."""
_RUNS_FROM_EVENTS_PER_MS = 4
"""From this many events per millisecond, timestamps are built as runs of equal values."""


class SimpleEvent(NamedTuple):
    """An event of ``Sources.item_stream``: when it was due (epoch ms) and its sequence number."""

    timestamp: int
    sequence: int


def due_timestamps(start_ms: int, rate: int, sequences: range) -> list[int]:
    """``start_ms + seq * 1000 // rate`` for every ``seq`` of ``sequences`` (a range of step >= 1).

    At high rates many consecutive events fall in the same millisecond, so the list is built as
    runs of repeated values (C-level ``repeat``) instead of one division per event."""
    count, step, first = len(sequences), sequences.step, sequences.start
    if count == 0:
        return []
    if rate < _RUNS_FROM_EVENTS_PER_MS * 1000 * step:
        return [start_ms + seq * 1000 // rate for seq in sequences]
    first_ms, last_ms = first * 1000 // rate, sequences[-1] * 1000 // rate
    # Index of the first event at or after each millisecond boundary: the first sequence with
    # seq * 1000 // rate >= m is ceil(m * rate / 1000); its position is ceil((that - first) / step).
    bounds = [-(-(-(-m * rate // 1000) - first) // step) for m in range(first_ms + 1, last_ms + 1)]
    counts = list(map(int.__sub__, bounds + [count], [0] + bounds))
    return list(chain.from_iterable(map(repeat, range(start_ms + first_ms, start_ms + last_ms + 1), counts)))


class _EmitterSourceP(Processor):
    """A stream source emitting through a :class:`StreamEmitter`, with a position to snapshot.

    ``save_to_snapshot`` first hands the outbox what the emitter still holds (it came from the
    source before the barrier), then saves ``position()`` and the watermarks under
    ``BroadcastKey(("position", global_index))``; at restore ``restore_positions`` gets every
    processor's saved position and the watermarks restart from the minimum saved.
    """

    _emitter: StreamEmitter
    _restored: list | None = None

    def position(self) -> Any:
        raise NotImplementedError

    def restore_positions(self, positions: list) -> None:
        raise NotImplementedError

    def save_to_snapshot(self) -> bool:
        emitter = self._emitter
        if not emitter.flush(self.outbox) or self.outbox.pending_special is not None:
            return False  # a watermark just offered goes downstream before the barrier
        mapper = emitter.mapper
        self.outbox.offer_to_snapshot(own_key("position", self.context),
                                      (self.position(), None if mapper is None else mapper.watermark_state()))
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        self._restored = collect_positions(self, inbox, self._restored)

    def finish_snapshot_restore(self) -> bool:
        if self._restored is not None:
            self.restore_positions([position for position, _ in self._restored])
            mapper = self._emitter.mapper
            if mapper is not None:
                mapper.restore_watermark_states([wm for _, wm in self._restored if wm is not None])
            self._restored = None
        return True


class ItemStreamP(_EmitterSourceP):
    """Emits the events of a fixed-rate stream that are due, split over every processor.

    The rate is the cluster's total: the event with sequence ``s`` is stamped ``start + s * 1000
    // rate`` (epoch ms) and processor g of N emits ``g, g + N, ...``. ``start`` is the wall clock
    at the processor's first call. Each call emits, in one chunk (at most ``chunk_limit``), every
    event whose millisecond has begun, so a late source shows as latency downstream. Due at the
    exact ``s / rate`` on a millisecond clock, an event stamped inside a millisecond waited for the
    next one: every processor but the one whose sequences fall on millisecond boundaries raised
    its watermarks 1 ms late. (On a nanosecond clock a source would emit an event or two per call
    and keep its thread busy.)

    Snapshots: its next sequence (and the sequences below it it still owes). A restart goes on
    with the sequence: processor g of the new N first emits the sequences ``s % N == g`` that no
    processor had emitted, then ``s, s + N, ...`` from the highest saved next sequence on, so
    every sequence is emitted once whatever the new parallelism; timestamps restart from now
    (the lowest owed sequence is due at the first call).
    """

    def __init__(self, rate: int, generator_fn: Callable[[int, int], Any] | None,
                 policy: EventTimePolicy | None, chunk_limit: int = ITEM_STREAM_CHUNK_LIMIT,
                 clock_ms: Callable[[], int] = wall_clock_ms) -> None:
        self._rate = rate
        self._generator_fn = generator_fn
        self._policy = policy
        self._chunk_limit = chunk_limit
        self._clock_ms = clock_ms
        self._start_ms: int | None = None
        self._owed: list[int] = []
        """Sequences below ``_next_sequence`` still to emit (after a restore), ascending."""
        self._base_sequence = 0
        """The sequence due at the first call: 0, or the lowest one owed after a restore."""

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._next_sequence = context.global_index
        self._step = context.total_parallelism
        self._emitter = StreamEmitter(self._policy)

    def complete(self) -> bool:
        emitter = self._emitter
        if not emitter.flush(self.outbox):
            return False
        now_ms = self._clock_ms()
        if self._start_ms is None:
            self._start_ms = now_ms - self._base_sequence * 1000 // self._rate
        rate, step, first = self._rate, self._step, self._next_sequence
        if self._owed:
            sequences: Any = self._owed[:self._chunk_limit]
            del self._owed[:self._chunk_limit]
            self._emit([self._start_ms + seq * 1000 // rate for seq in sequences], sequences, now_ms)
            return False
        last_due = ((now_ms - self._start_ms + 1) * rate - 1) // 1000  # the last stamped <= now_ms
        if first > last_due:
            emitter.idle(now_ms)
            emitter.flush(self.outbox)
            return False
        count = min(self._chunk_limit, (last_due - first) // step + 1)
        sequences = range(first, first + count * step, step)
        self._next_sequence = sequences.stop
        self._emit(due_timestamps(self._start_ms, rate, sequences), sequences, now_ms)
        return False

    def _emit(self, timestamps: list[int], sequences: Any, now_ms: int) -> None:
        if self._generator_fn is None:
            events = list(map(tuple.__new__, repeat(SimpleEvent), zip(timestamps, sequences)))
        else:
            events = list(map(self._generator_fn, timestamps, sequences))
        self._emitter.add(events, 0, now_ms, timestamps)
        self._emitter.flush(self.outbox)

    def position(self) -> tuple[list[int], int, int]:
        """(owed sequences, next sequence, step): what this processor has not emitted."""
        return list(self._owed), self._next_sequence, self._step

    def restore_positions(self, positions: list[tuple[list[int], int, int]]) -> None:
        index, count = self.context.global_index, self.context.total_parallelism
        top = max(next_sequence for _, next_sequence, _ in positions)
        owed = [seq for owed, _, _ in positions for seq in owed if seq % count == index]
        for _, next_sequence, step in positions:
            owed.extend(share_of(range(next_sequence, top, step), index, count))
        self._owed = sorted(owed)
        self._next_sequence = top + (index - top) % count
        self._step = count
        self._base_sequence = min([next_sequence for _, next_sequence, _ in positions] + self._owed)


def is_single_instance(context: Context) -> bool:
    """Whether this processor is the one that works for a source of one processor in the cluster."""
    return context.global_index == 0


class SocketSourceP(Processor):
    """The text lines a TCP server sends, until it closes the connection (one processor runs it).

    Not fault-tolerant: a socket cannot replay what it sent, so it saves nothing in a snapshot
    and a job restarted from one reconnects and reads what the server sends from then on: lines
    sent between the snapshot and the restart are lost (at-most-once after a restart)."""

    is_cooperative = False

    def __init__(self, host: str, port: int, encoding: str) -> None:
        self._host, self._port, self._encoding = host, port, encoding
        self._socket: socket.socket | None = None
        self._done = True

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._emitter = StreamEmitter()
        self._partial = ""
        if not is_single_instance(context):
            return
        try:
            self._socket = socket.create_connection((self._host, self._port), SOCKET_CONNECT_TIMEOUT_S)
        except OSError as error:
            raise ConnectionError(f"Sources.socket: cannot connect to {self._host}:{self._port}: "
                                  f"{error.strerror or error}") from error
        self._socket.settimeout(SOCKET_READ_TIMEOUT_S)
        self._decoder = codecs.getincrementaldecoder(self._encoding)()
        self._done = False

    def complete(self) -> bool:
        if not self._emitter.flush(self.outbox):
            return False
        if self._done:
            return True
        try:
            data = self._socket.recv(SOCKET_READ_BYTES)
        except (socket.timeout, BlockingIOError):
            return False
        try:
            text = self._partial + self._decoder.decode(data, final=not data)
        except UnicodeDecodeError as error:
            raise ValueError(f"Sources.socket({self._host}:{self._port}): the server sent bytes that are "
                             f"not {self._encoding}: {error}") from error
        lines = text.split("\n")
        self._partial = lines.pop()
        if not data:  # the server closed the connection: the last line needs no terminator
            self._done = True
            if self._partial:
                lines.append(self._partial)
        self._emitter.add(_without_carriage_returns(lines) if "\r" in text else lines)
        self._emitter.flush(self.outbox)
        return False

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


def _without_carriage_returns(lines: list[str]) -> list[str]:
    return [line[:-1] if line.endswith("\r") else line for line in lines]


class _WatchedFile:
    """How far a watched file has been read, and its unterminated last line."""

    __slots__ = ("inode", "offset", "partial")

    def __init__(self, inode: int, offset: int) -> None:
        self.inode, self.offset, self.partial = inode, offset, b""


class FileWatcherP(_EmitterSourceP):
    """Lines appended to the files of a directory, and lines of files created there, after the
    job started (content present at the start is skipped, as in Jet). Polls the directory.

    ``shared``: the directory is the same for every member (a shared volume, or one machine),
    so each file is read by one processor of the cluster, chosen by a hash of its name;
    otherwise every member's processor reads every file of its own local directory (Jet's way).
    A file that shrinks or is replaced is read again from its start.

    Snapshots: per file its inode and the offset of the next unread line. A restored processor
    goes on from there (reading what was appended meanwhile) with the files that are its own now;
    a file no processor saved was created after the snapshot and is read from its start. Without
    ``shared``, a processor restores what the processor of the same member index saved.
    """

    is_cooperative = False

    def __init__(self, directory: str, pattern: str, encoding: str, shared: bool,
                 poll_interval_s: float = FILE_WATCHER_POLL_S) -> None:
        self._directory, self._pattern, self._encoding = directory, pattern, encoding
        self._shared = shared
        self._poll_interval_s = poll_interval_s
        self._files: dict[str, _WatchedFile] = {}
        self._next_scan = 0.0

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        for name, entry in self._scan().items():
            self._files[name] = _WatchedFile(entry.st_ino, entry.st_size)
        self._emitter = StreamEmitter()

    def _is_mine(self, name: str) -> bool:
        context = self.context
        if self._shared:
            return zlib.crc32(name.encode("utf-8", "surrogateescape")) % context.total_parallelism == \
                context.global_index
        return context.local_index == 0

    def _scan(self) -> dict[str, os.stat_result]:
        found = {}
        try:
            with os.scandir(self._directory) as entries:
                for entry in entries:
                    if fnmatch(entry.name, self._pattern) and self._is_mine(entry.name) and entry.is_file():
                        try:
                            found[entry.name] = entry.stat()
                        except FileNotFoundError:
                            pass
        except FileNotFoundError as error:
            raise FileNotFoundError(f"Sources.file_watcher: directory {self._directory!r} is gone") from error
        return found

    def complete(self) -> bool:
        if not self._emitter.flush(self.outbox):
            return False
        wait_s = self._next_scan - time.monotonic()
        if wait_s > 0:
            time.sleep(wait_s)
        self._next_scan = time.monotonic() + self._poll_interval_s
        found = self._scan()
        for name in [name for name in self._files if name not in found]:
            del self._files[name]
        for name, stat in found.items():
            watched = self._files.get(name)
            if watched is None or watched.inode != stat.st_ino or stat.st_size < watched.offset:
                watched = self._files[name] = _WatchedFile(stat.st_ino, 0)
            if stat.st_size > watched.offset:
                self._read(name, watched, stat.st_size)
                if stat.st_size > watched.offset:
                    self._next_scan = 0.0  # more to read: no pause before the next call
        self._emitter.flush(self.outbox)
        return False

    def position(self) -> tuple[int, dict[str, tuple[int, int]]]:
        """(member index, {file name: (inode, offset of the next unread line)})."""
        return self.context.member_index, {name: (watched.inode, watched.offset - len(watched.partial))
                                           for name, watched in self._files.items()}

    def restore_positions(self, positions: list[tuple[int, dict[str, tuple[int, int]]]]) -> None:
        member = self.context.member_index
        saved = [files for saved_member, files in positions if self._shared or saved_member == member]
        if not saved:
            return  # a member that did not exist at the snapshot: as at a new start
        restored = {name: position for files in saved for name, position in files.items()}
        for name, watched in self._files.items():
            inode, offset = restored.get(name, (watched.inode, 0))
            self._files[name] = _WatchedFile(watched.inode, offset if inode == watched.inode else 0)

    def _read(self, name: str, watched: _WatchedFile, size: int) -> None:
        path = os.path.join(self._directory, name)
        try:
            with open(path, "rb") as file:
                file.seek(watched.offset)
                data = file.read(min(size - watched.offset, FILE_WATCHER_READ_BYTES))
        except FileNotFoundError:
            return
        watched.offset += len(data)
        data = watched.partial + data
        end = data.rfind(b"\n") + 1
        watched.partial = data[end:]
        if not end:
            return
        try:
            text = data[:end - 1].decode(self._encoding)
        except UnicodeDecodeError as error:
            raise ValueError(f"Sources.file_watcher: {path!r} holds bytes that are not {self._encoding}: "
                             f"{error}") from error
        lines = text.split("\n")
        self._emitter.add(_without_carriage_returns(lines) if "\r" in text else lines)


def check_directory(directory: str, what: str) -> None:
    """A clear error naming ``directory`` when it is not a readable directory."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{what}: {directory!r} is not a directory")
    if not os.access(directory, os.R_OK | os.X_OK):
        raise PermissionError(f"{what}: cannot read directory {directory!r}")
