"""A connection whose HTTP/2 handshake is slow (a loaded machine) still connects: gRPC takes its
connect timeout from ``grpc.min_reconnect_backoff_ms``, which once was our 100 ms backoff."""

import socket
import threading

from jet.cluster.links import messages
from jet.cluster.links.transport import MemberServer, PeerConnection

TOKEN, MEMBER_KEY = "slow-token", "slow-member-key"
DELAY_S = 0.4


class SlowProxy:
    """Accepts TCP connections and relays them to ``port``, each only after ``DELAY_S``."""

    def __init__(self, port: int) -> None:
        self._target = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        threading.Event().wait(DELAY_S)  # the handshake waits: no SETTINGS frame for a while
        upstream = socket.create_connection(("127.0.0.1", self._target))
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._listener.close()


def test_a_call_over_a_connection_with_a_slow_handshake_succeeds():
    server = MemberServer(0, host="127.0.0.1", token=TOKEN, member_key=MEMBER_KEY,
                          on_control=lambda caller, msg_type, payload: messages.encode_message({"pong": True}))
    server.start()
    proxy = SlowProxy(server.port)
    connection = PeerConnection(f"127.0.0.1:{proxy.port}", -1, 0, TOKEN, open_stream=False)
    try:
        reply = connection.control(messages.PING, messages.encode_message({}), timeout_s=10, wait_for_ready=False)
        assert messages.decode_message(reply)[0] == {"pong": True}
    finally:
        connection.close()
        proxy.close()
        server.stop(0)
