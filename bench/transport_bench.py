"""Frames/s and MB/s through one member-to-member link between two processes on loopback.

    python bench/transport_bench.py [--frames 20000] [--frame-bytes 16384] [--tls] [--rounds 3]

The parent opens a :class:`~jet.cluster.links.transport.PeerConnection` to a child process running a
:class:`~jet.cluster.links.transport.MemberServer` that counts frames; the final frame ``END`` is answered
with the count, so the time covers every frame arriving in the other process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "member"))

from jet.cluster.links.auth import TlsConfig, write_self_signed_tls  # noqa: E402
from jet.cluster.links.transport import MemberServer, PeerConnection  # noqa: E402

TOKEN = "bench-token"
MEMBER_KEY = "bench-member-key"
END = b"END"


def serve(tls: TlsConfig | None) -> None:
    """Child: count frames, answer END with ``<frames> <bytes>``."""
    totals = [0, 0]
    server = MemberServer(0, TOKEN, tls, host="127.0.0.1", member_key=MEMBER_KEY)

    def count(peer: int, frame: bytes) -> None:
        if frame == END:
            server.send(peer, b"%d %d" % tuple(totals))
            totals[:] = [0, 0]
        else:
            totals[0] += 1
            totals[1] += len(frame)

    server.on_frame = count
    server.start()
    print(f"PORT {server.port}", flush=True)
    sys.stdin.read()


def run(frames: int, frame_bytes: int, rounds: int, tls: TlsConfig | None) -> None:
    args = [sys.executable, __file__, "--serve"] + (["--cert", tls.cert_file, "--key", tls.key_file] if tls else [])
    child = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline().split()[1])
        replies: list[bytes] = []
        replied = threading.Condition()

        def on_frame(peer: int, frame: bytes) -> None:
            with replied:
                replies.append(frame)
                replied.notify_all()

        connection = PeerConnection(f"127.0.0.1:{port}", 1, 0, TOKEN, tls, member_key=MEMBER_KEY,
                                    on_frame=on_frame)
        payload = os.urandom(frame_bytes)

        def one_round(count: int) -> float:
            expected = len(replies) + 1
            start = time.perf_counter()
            for _ in range(count):
                connection.send(payload)
            connection.send(END)
            with replied:
                replied.wait_for(lambda: len(replies) >= expected, 120)
            elapsed = time.perf_counter() - start
            received, received_bytes = map(int, replies[-1].split())
            assert (received, received_bytes) == (count, count * frame_bytes), replies[-1]
            return elapsed

        one_round(min(frames, 2000))  # warm-up
        print(f"{'TLS' if tls else 'plaintext'} stream, {frame_bytes} B frames, {frames} frames per round")
        for i in range(rounds):
            elapsed = one_round(frames)
            print(f"  round {i + 1}: {frames / elapsed:10,.0f} frames/s  "
                  f"{frames * frame_bytes / elapsed / 1e6:8,.1f} MB/s  ({elapsed:.2f} s)")
        connection.close()
    finally:
        child.stdin.close()
        child.kill()
        child.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20000)
    parser.add_argument("--frame-bytes", type=int, default=16 * 1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cert", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        serve(TlsConfig(options.cert, options.key) if options.cert else None)
        return
    with tempfile.TemporaryDirectory() as directory:
        tls = write_self_signed_tls(directory) if options.tls else None
        run(options.frames, options.frame_bytes, options.rounds, tls)


if __name__ == "__main__":
    main()
