"""Async enrichment throughput: items through ``map_using_service_async`` against a local HTTP
service that answers after a fixed latency, for several ``max_concurrent_ops``.

    python bench/async_enrichment_bench.py [--items 4000] [--latency-ms 10] [--ops 1,16,64]
        [--client aiohttp|threads|sleep] [--members 1] [--parallelism 1]

The service is a ``ThreadingHTTPServer`` on a free loopback port in this process, sleeping
``--latency-ms`` per request; the client is one aiohttp session per member (``ClientSession``
on the member's event loop) or a thread pool per processor with urllib; ``--client sleep``
calls no service but ``asyncio.sleep(latency)``, the engine's own cost. One enriching processor
per member by default (``--parallelism``), so the bound is the whole concurrency; the ideal
rate is ops x 1000 / latency items a second (until the service or the client saturates).
``--members 1`` runs in this process; more run on a local cluster of member processes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jet import Pipeline, ServiceFactories, Sinks, Sources  # noqa: E402

from tests.pipeline.enrichment_support import (LookupService, aiohttp_factory, enriched,  # noqa: E402
                                               lookup_with, pool_factory, pool_lookup_with)


async def _sleep_then_enrich(latency_s: float, x: int) -> int:
    await asyncio.sleep(latency_s)
    return enriched(x)


def run_once(items: int, latency_s: float, ops: int, client: str, members: int, parallelism: int) -> dict:
    with LookupService(delay_s=latency_s) as service:
        if client == "aiohttp":
            factory, fn = aiohttp_factory(), lookup_with(service.url)
        elif client == "threads":
            factory, fn = pool_factory(max(ops, 1)), pool_lookup_with(service.url)
        else:
            factory, fn = ServiceFactories.shared_service(lambda: latency_s), _sleep_then_enrich
        p = Pipeline.create()
        (p.read_from(Sources.items(list(range(items))))
         .map_using_service_async(factory, fn, max_concurrent_ops=ops).set_local_parallelism(parallelism)
         .write_to(Sinks.list("out")))
        started = time.perf_counter()
        if members == 1:
            from jet.execution import execute
            out = execute(p.to_dag(1), cooperative_threads=1, timeout=600)["out"]
        else:
            import jet
            with jet.local_cluster(members=members) as cluster:
                started = time.perf_counter()
                job = cluster.new_job(p)
                job.join(timeout=600)
                out = job.result("out")
        seconds = time.perf_counter() - started
        assert sorted(out) == [enriched(x) for x in range(items)], "results differ from the oracle"
        return {"seconds": seconds, "rate": items / seconds, "max_in_flight": service.max_in_flight}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--latency-ms", type=float, default=10.0)
    parser.add_argument("--ops", default="1,16,64")
    parser.add_argument("--client", choices=("aiohttp", "threads", "sleep"), default="aiohttp")
    parser.add_argument("--members", type=int, default=1)
    parser.add_argument("--parallelism", type=int, default=1)
    args = parser.parse_args()
    print(f"{args.items} items, service latency {args.latency_ms} ms, client {args.client}, "
          f"{args.members} member(s) x {args.parallelism} enriching processor(s)")
    print(f"{'max_concurrent_ops':>18} {'seconds':>8} {'items/s':>9} {'ideal/s':>9} {'max in flight':>13}")
    for ops in map(int, args.ops.split(",")):
        items = args.items if ops > 1 else max(200, args.items // 16)  # ops=1 is slow: fewer items
        r = run_once(items, args.latency_ms / 1000, ops, args.client, args.members, args.parallelism)
        ideal = ops * args.members * args.parallelism * 1000 / args.latency_ms
        print(f"{ops:>18} {r['seconds']:>8.2f} {r['rate']:>9.0f} {ideal:>9.0f} {r['max_in_flight']:>13}")


if __name__ == "__main__":
    main()
