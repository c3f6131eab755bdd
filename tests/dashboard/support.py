"""Helpers of the dashboard tests: plain HTTP against a member, and the jobs the tests run."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any

from jet import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition
from jet.cluster.client import as_dag
from jet.core.dag import DAG

USER_ERROR = "dashboard-test: item 7 is not welcome"


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request(port: int, method: str, path: str, *, token: str | None = None, cookie: str | None = None,
            headers: dict[str, str] | None = None, body: Any = None) -> Answer:
    """One HTTP request to 127.0.0.1:``port`` (redirects are not followed)."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    if cookie is not None:
        sent["Cookie"] = cookie
    data = None if body is None else json.dumps(body).encode("utf-8")
    if data is not None:
        sent["Content-Type"] = "application/json"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        connection.close()


def stream_dag(rate: int = 200) -> DAG:
    """A streaming job with a distributed partitioned edge: counts per key over sliding windows."""
    p = Pipeline.create()
    (p.read_from(Sources.item_stream(rate))
     .with_native_timestamps(50)
     .map(lambda event: event.sequence)
     .grouping_key(lambda sequence: sequence % 5)
     .window(WindowDefinition.sliding(1000, 250))
     .aggregate(AggregateOperations.counting())
     .write_to(Sinks.list("counts")))
    return as_dag(p)


def refuse_seven(item: int) -> int:
    if item == 7:
        raise ValueError(USER_ERROR)
    return item


def failing_pipeline() -> Pipeline:
    """A batch job whose user function raises :data:`USER_ERROR` at item 7."""
    p = Pipeline.create()
    p.read_from(Sources.items(list(range(20)))).map(refuse_seven).write_to(Sinks.list("out"))
    return p
