"""Async enrichment: each trade asks a (local, slow) HTTP service for its company, many calls
in flight at once, then the trades' value is summed per sector.

    jet run examples/enrichment_async.py

The service starts inside ``jet run`` (a thread on a free loopback port, 20 ms per request) and
the members call it with asyncio from their event loop: at most ``max_concurrent_ops`` calls per
processor are out at a time, and the results come in the trades' order.
"""

import asyncio
import csv
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from jet import AggregateOperations, Pipeline, ServiceFactories, Sinks, Sources

LATENCY_S = 0.02


class Server(ThreadingHTTPServer):
    request_queue_size = 1024  # the default backlog of 5 drops the SYNs of a burst of calls


def start_company_service(companies_csv: str) -> tuple[str, int]:
    """Serve ``GET /company/SYMBOL`` as JSON from the CSV; returns the (host, port)."""
    with open(companies_csv, newline="") as file:
        companies = {row["symbol"]: row for row in csv.DictReader(file)}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            time.sleep(LATENCY_S)
            company = companies.get(self.path.rsplit("/", 1)[-1])
            body = json.dumps(company or {"name": "unknown", "sector": "unknown"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address


async def with_company(address, trade):
    """The trade with its company's name and sector, asked over HTTP/1.0 with asyncio alone."""
    host, port = address
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET /company/{trade['symbol']} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
    response = await reader.read()  # HTTP/1.0: the server closes after the answer
    writer.close()
    company = json.loads(response.split(b"\r\n\r\n", 1)[1])
    return {**trade, "sector": company["sector"], "value": trade["quantity"] * trade["price"]}


def pipeline(trades="examples/data/trades.jsonl", companies="examples/data/companies.csv"):
    address = start_company_service(companies)
    service = ServiceFactories.shared_service(lambda: address)  # what each call needs: where to ask
    p = Pipeline.create()
    (p.read_from(Sources.jsonl(trades))
     .map_using_service_async(service, with_company, max_concurrent_ops=32)
     .grouping_key(lambda t: t["sector"])
     .aggregate(AggregateOperations.summing(lambda t: t["value"]))
     .map(lambda entry: (entry[0], round(entry[1], 2)))
     .write_to(Sinks.list()))
    return p
