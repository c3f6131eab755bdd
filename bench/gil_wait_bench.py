"""How long a thread with a message waits for the GIL while another thread runs Python.

    python bench/gil_wait_bench.py [--intervals 0.005,0.0005] [--messages 300]

A child process sends a timestamp every 10 ms over a socket pair; here one thread blocks on the
socket (as a member's link reader does) while another runs a pure Python loop (as a busy
cooperative thread does), under each GIL switch interval, then once with no busy thread. Prints
the delay from send to the reader's Python code having the message (median, p90, p99, max).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import threading
import time

MESSAGE_BYTES = 32
PERIOD_S = 0.01


def measure(interval_s: float, busy: bool, messages: int) -> list[float]:
    """Delays in ms of ``messages`` messages read under ``interval_s``, with or without a busy thread."""
    sys.setswitchinterval(interval_s)
    reader, writer = socket.socketpair()
    child = os.fork()
    if child == 0:
        reader.close()
        for _ in range(messages):
            time.sleep(PERIOD_S)
            writer.send(repr(time.time()).ljust(MESSAGE_BYTES).encode())
        os._exit(0)
    writer.close()
    stop = threading.Event()

    def spin() -> None:
        total = 0
        while not stop.is_set():
            for i in range(1000):
                total += i

    if busy:
        threading.Thread(target=spin, daemon=True).start()
    delays = []
    for _ in range(messages):
        sent = float(reader.recv(MESSAGE_BYTES).decode())
        delays.append((time.time() - sent) * 1000)
    stop.set()
    os.waitpid(child, 0)
    reader.close()
    return sorted(delays)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--intervals", default="0.005,0.0005", help="switch intervals in seconds, comma separated")
    parser.add_argument("--messages", type=int, default=300)
    args = parser.parse_args()
    runs = [(float(value), True) for value in args.intervals.split(",")] + [(sys.getswitchinterval(), False)]
    for interval_s, busy in runs:
        delays = measure(interval_s, busy, args.messages)
        print(f"switch interval {interval_s * 1000:.1f} ms, {'busy thread' if busy else 'no busy thread'}: "
              f"median {statistics.median(delays):.3f}, p90 {delays[int(0.9 * len(delays))]:.3f}, "
              f"p99 {delays[int(0.99 * len(delays))]:.3f}, max {delays[-1]:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
