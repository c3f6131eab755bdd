"""A member's HTTP server stops serving when asked, whatever address it is bound to."""

import socket
import urllib.request

import pytest

from jet.cluster.member_http import MemberHttpServer, MemberMetrics


def started_server(host: str) -> MemberHttpServer:
    return MemberHttpServer(host, 0, token="t", healthy=lambda: True, latest_job=None,
                            metrics=MemberMetrics(0)).start()


@pytest.mark.parametrize("bound, reached", [("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "127.0.0.1"),
                                            ("[::]", "127.0.0.1"), ("[::1]", "::1")])
def test_stop_ends_the_serving_loop_and_frees_the_port(bound, reached):
    if ":" in reached and not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    server = started_server(bound)
    url_host = f"[{reached}]" if ":" in reached else reached
    with urllib.request.urlopen(f"http://{url_host}:{server.port}/healthz", timeout=5) as reply:
        assert reply.status == 200
    server.stop()
    assert not server._thread.is_alive()
    with pytest.raises(OSError):
        socket.create_connection((reached, server.port), timeout=1).close()


def test_a_server_never_started_stops_without_waiting_for_a_loop():
    server = MemberHttpServer("127.0.0.1", 0, token="t", healthy=lambda: True, latest_job=None,
                              metrics=MemberMetrics(0))
    server.stop()
    assert not server._thread.is_alive()
