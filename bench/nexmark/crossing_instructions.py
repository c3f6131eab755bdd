"""Instructions an item costs to cross to another member, step by step, counted by callgrind
(``apt-get install valgrind``; see ``processor_cpu.py --instructions``).

    python bench/nexmark/crossing_instructions.py [q4,q11,q18] [--events 200000]

For the items a query sends over its keyed distributed edge (q4: the projected auctions and
bids; q11: the bidder ids; q18: the first stage's ``((bidder, auction), end, Bid)`` partials),
chunks of 2,048 go through what a member of two does with them: take their keys, partition them and split
them between the two members (``partitioner.chunk_partitions_fn``, as the collector does), pack
the other member's part into a frame (``encode_chunk``, as the sender does), unpack it
(``decode_chunk_columns``, as the receiver does). The script runs once per step count, each
run doing one step more; the differences are each step's instructions.
"""

from __future__ import annotations

import argparse
import sys
from itertools import compress
from operator import itemgetter
from pathlib import Path
from typing import Callable

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "member"), str(Path(__file__).resolve().parents[1])]

from jet.cluster.edges.chunk_packets import decode_chunk_columns, encode_chunk  # noqa: E402
from jet.core.partitioner import DEFAULT_PARTITIONER, PARTITION_COUNT, chunk_partitions_fn  # noqa: E402
from jet.execution.gc_tuning import settle_member_heap  # noqa: E402

from nexmark import functions as f  # noqa: E402
from nexmark import winning_bids as wb  # noqa: E402
from nexmark.events import generated  # noqa: E402
from nexmark.generator import GeneratorConfig  # noqa: E402
from nexmark.processor_cpu import callgrind_instructions  # noqa: E402

CHUNK = 2048
STEPS = ("partition and split", "pack", "unpack")
_first, _second = itemgetter(0), itemgetter(1)


def crossing_items(name: str, events: list) -> tuple[list, Callable[[list], list]]:
    """The items ``name`` sends over its keyed edge, and the keys of a chunk of them, taken as
    the collector takes them (the key function over a timestamped pair's item)."""
    if name == "q4":
        items = [(ts, wb.project(e)) for ts, e in events if wb.is_auction_or_bid(e)]
        return items, lambda chunk: list(map(wb.auction_id, map(_second, chunk)))
    if name == "q11":
        return [(ts, e.bidder) for ts, e in events if f.is_bid(e)], lambda chunk: list(map(_second, chunk))
    if name == "q18":
        items = [(f.q18_key(e), f.DAY_MS, e) for _, e in events if f.is_bid(e)]
        return items, lambda chunk: list(map(_first, chunk))
    raise SystemExit(f"no query {name!r} here; the queries are q4, q11 and q18")


def run(items: list, keys_of: Callable[[list], list], steps: int) -> int:
    """The first ``steps`` steps over every chunk of ``items``; the count of items unpacked."""
    settle_member_heap()
    partitions_of = chunk_partitions_fn(DEFAULT_PARTITIONER, distributed=True)
    owner = [p % 2 for p in range(PARTITION_COUNT)]
    received = 0
    for start in range(0, len(items) * (steps > 0), CHUNK):
        chunk = items[start:start + CHUNK]
        remote = list(compress(chunk, map(owner.__getitem__, partitions_of(keys_of(chunk)))))
        if steps >= 2:
            frame = encode_chunk(1, 1, 0, remote)
            if steps >= 3:
                received += len(decode_chunk_columns(frame)[1])
    return received


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("queries", nargs="?", default="q4,q11,q18")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--steps", type=int, help=argparse.SUPPRESS)  # one run under callgrind
    args = parser.parse_args()
    for name in args.queries.split(","):
        items, keys_of = crossing_items(name, generated(GeneratorConfig(events=args.events)))
        if args.steps is not None:
            run(items, keys_of, args.steps)
            continue
        sent = run(items, keys_of, len(STEPS))
        counts = callgrind_instructions([[__file__, name, f"--events={args.events}", f"--steps={steps}"]
                                         for steps in range(len(STEPS) + 1)])
        per_step = [later - earlier for earlier, later in zip(counts, counts[1:])]
        print(f"{name}: {len(items):,} items, {sent:,} sent; instructions per item partitioned: "
              f"{per_step[0] / len(items):,.0f}; per item sent: pack {per_step[1] / sent:,.0f},"
              f" unpack {per_step[2] / sent:,.0f}", flush=True)


if __name__ == "__main__":
    main()
