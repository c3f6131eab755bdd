"""A real local HTTP service for the enrichment tests, and the service clients the jobs use.

``LookupService`` serves ``GET /lookup?x=N`` with the oracle ``enriched(N)`` after a delay,
on a free loopback port, counting the requests in flight at once (and the most ever);
``/fail`` answers 500. The clients (an aiohttp session made on the member's event loop, or a
thread pool with urllib) travel to the members by value with this module.
"""

from __future__ import annotations

import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from collections import Counter

import cloudpickle

from jet import ServiceFactories

# Member processes of a local cluster cannot import the tests: these functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def enriched(x: int) -> int:
    """What the service answers for ``x`` (the tests' oracle)."""
    return x * 3 + 1


class _Server(ThreadingHTTPServer):
    # socketserver's backlog of 5 drops the SYNs of a burst of new connections, which then wait
    # a second for their retransmission: 64 calls at once ran slower than 1
    request_queue_size = 1024


class LookupService:
    """A threading HTTP server on 127.0.0.1; ``delay_s`` per request (``slow_every``: only
    requests whose x is a multiple of it are slow, to mix up the finishing order)."""

    def __init__(self, delay_s: float = 0.0, slow_every: int = 1) -> None:
        self.delay_s, self.slow_every = delay_s, slow_every
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests = 0
        self.events: Counter = Counter()
        self._lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                service._enter()
                try:
                    url = urlparse(self.path)
                    if url.path.startswith("/event/"):  # a service made or destroyed, told
                        with service._lock:
                            service.events[url.path[len("/event/"):]] += 1
                        self.send_response(204)
                        self.end_headers()
                        return
                    if url.path == "/fail":
                        self.send_error(500, "the lookup service failed on purpose")
                        return
                    x = int(parse_qs(url.query)["x"][0])
                    if service.delay_s and x % service.slow_every == 0:
                        time.sleep(service.delay_s)
                    body = str(enriched(x)).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                finally:
                    service._leave()

            def log_message(self, *args) -> None:
                pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _enter(self) -> None:
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def __enter__(self) -> "LookupService":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


# -- clients ----------------------------------------------------------------------------------
async def new_session():
    import aiohttp
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))


async def close_session(session) -> None:
    await session.close()


def aiohttp_factory():
    """One aiohttp session per member, made and closed on the member's event loop."""
    return ServiceFactories.shared_service(new_session, close_session)


def lookup_with(url: str):
    """``fn(session, x)``: an awaitable of the service's answer for ``x``."""
    async def lookup(session, x: int) -> int:
        async with session.get(f"{url}/lookup", params={"x": str(x)}) as response:
            response.raise_for_status()
            return int(await response.text())
    return lookup


def failing_lookup_with(url: str):
    """``fn(session, x)`` that asks the failing path for x == 7."""
    async def lookup_or_fail(session, x: int) -> int:
        path = "/fail" if x == 7 else "/lookup"
        async with session.get(f"{url}{path}", params={"x": str(x)}) as response:
            response.raise_for_status()
            return int(await response.text())
    return lookup_or_fail


def tell(url: str, event: str) -> None:
    """Count ``event`` at the service (from a member: how many services it made or destroyed)."""
    urllib.request.urlopen(f"{url}/event/{event}", timeout=30).close()


def told_factory(url: str, shared: bool):
    """A factory whose services tell the lookup service when they are made and destroyed."""
    kind = "shared" if shared else "own"
    make = ServiceFactories.shared_service if shared else ServiceFactories.non_shared_service
    return make(lambda: tell(url, f"{kind}-created") or kind, lambda _s: tell(url, f"{kind}-destroyed"))


def pool_factory(threads: int = 16):
    """A thread pool per processor; ``fn`` returns its ``concurrent.futures.Future``."""
    return ServiceFactories.non_shared_service(lambda: ThreadPoolExecutor(threads),
                                               lambda pool: pool.shutdown(wait=True))


def pool_lookup_with(url: str):
    def fetch(x: int) -> int:
        with urllib.request.urlopen(f"{url}/lookup?x={x}", timeout=30) as response:
            return int(response.read())

    def lookup(pool, x: int):
        return pool.submit(fetch, x)
    return lookup
