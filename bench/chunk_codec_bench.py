"""CPU cost of moving a chunk of items to another member: encode on the sender, decode on the
receiver, against one pickle of the list of entries (what a chunk packet carried before).

    python bench/chunk_codec_bench.py [--events 200000] [--chunk 2048] [--rounds 5]

Payloads, from NEXMark events (``bench/nexmark``), as a keyed distributed edge carries them:
``(item, partition id)`` pairs of bids (q18, q19), of a mix of auctions and bids (q4, q6, q20),
of ``(timestamp, bid)`` (a timestamped stream's items) and ``(auction, bid)`` plain tuples, and small ``(int, str)`` items without partitions,
and a window's partials between its stages: ``(key, end, bid)`` (``max_by``, q18) and ``(key,
end, [10 bids])`` (``top_n``, q19; per item = per partial). Times
are CPU time (``time.process_time``) per item, the best of ``--rounds``, so another process on
the machine slows them less than it slows a wall clock; both forms are timed in the same round.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "member"), str(Path(__file__).resolve().parent)]

from jet.cluster.edges.chunk_packets import decode_chunk, encode_chunk  # noqa: E402
from jet.core.partitioner import murmur_partition  # noqa: E402
from nexmark.generator import GeneratorConfig, events  # noqa: E402
from nexmark.model import Auction, Bid  # noqa: E402


END = 1_767_312_000_000
"""A window end (a day)."""


def payloads(event_count: int) -> dict[str, tuple[list, bool]]:
    """Name -> (entries, pairs) for each payload kind."""
    items = [event for _, event in events(GeneratorConfig(events=event_count))]
    bids = [e for e in items if type(e) is Bid]
    mixed = [e for e in items if type(e) in (Bid, Auction)]
    return {
        "bids, (item, partition) pairs": ([(b, murmur_partition((b.bidder, b.auction))) for b in bids], True),
        "auctions and bids, pairs": ([(e, murmur_partition(e.auction if type(e) is Bid else e.id))
                                      for e in mixed], True),
        "(timestamp, bid) items, pairs": ([((b.date_time, b), murmur_partition(b.auction)) for b in bids], True),
        "(auction, bid) plain tuples, pairs": ([((b.auction, b), murmur_partition(b.auction)) for b in bids], True),
        "(int, str) items": ([(i, f"word{i % 5000}") for i in range(len(bids))], False),
        # a window's partials between its two stages, keyed by (bidder, auction) as q18 and by
        # auction as q19 (top 10 bids, one partial per 10 bids)
        "(key, end, bid) partials, pairs": ([(((b.bidder, b.auction), END, b), murmur_partition((b.bidder, b.auction)))
                                             for b in bids], True),
        "(key, end, [10 bids]) partials, pairs": ([((bids[i].auction, END, bids[i:i + 10]),
                                                    murmur_partition(bids[i].auction))
                                                   for i in range(0, len(bids), 10)], True),
    }


def cpu_ns_per_item(function, inputs: list, item_count: int) -> float:
    """CPU ns an item of ``function`` over every input."""
    start = time.process_time()
    for one in inputs:
        function(one)
    return (time.process_time() - start) * 1e9 / item_count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--chunk", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("| payload | before: pickle the list, encode / decode ns an item | now: columns, encode / decode"
          " ns an item | encode + decode, before / now |")
    print("| --- | --- | --- | --- |")
    for name, (entries, pairs) in payloads(args.events).items():
        chunks = [entries[i:i + args.chunk] for i in range(0, len(entries), args.chunk)]
        frames = [encode_chunk(1, 1, 0, chunk, pairs=pairs) for chunk in chunks]
        pickles = [pickle.dumps(chunk, 5) for chunk in chunks]
        assert all(decode_chunk(frame)[1] == chunk for frame, chunk in zip(frames, chunks))
        best = [float("inf")] * 4
        for _ in range(args.rounds):
            times = (cpu_ns_per_item(lambda c: pickle.dumps(c, 5), chunks, len(entries)),
                     cpu_ns_per_item(pickle.loads, pickles, len(entries)),
                     cpu_ns_per_item(lambda c: encode_chunk(1, 1, 0, c, pairs=pairs), chunks, len(entries)),
                     cpu_ns_per_item(decode_chunk, frames, len(entries)))
            best = [min(b, t) for b, t in zip(best, times)]
        print(f"| {name} | {best[0]:.0f} / {best[1]:.0f} | {best[2]:.0f} / {best[3]:.0f} |"
              f" {best[0] + best[1]:.0f} / {best[2] + best[3]:.0f} |")


if __name__ == "__main__":
    main()
