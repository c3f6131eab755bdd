"""What one message on a member stream costs: gRPC's sync API (the transport today) against grpc.aio.

    python3 bench/grpc_message_cost_bench.py [--messages 5000] [--modes sync,aio,socket]

Two processes share a bidirectional stream. The client's user thread sends a small message and
waits until the server's echo reaches it, ``--messages`` times (a ping-pong: every message pays
its wake-ups, as a control call or a short job's frames do). The threads are as the members':

- ``sync``: gRPC's sync API as ``jet.cluster.links.transport`` uses it. The client's sends go through
  a queue that a request generator drains (gRPC's ``consume_request_iterator`` thread), a reader
  thread takes the responses (gRPC's channel spin thread completes each read); the server's
  reader thread takes the requests and its response generator (a gRPC pool thread) the echoes;
- ``aio``: ``grpc.aio`` with one event loop thread per process. The client's user thread hands a
  send to the loop with ``call_soon_threadsafe`` and is woken by an event the loop sets; the
  server echoes on its loop;
- ``socket``: no gRPC, length-prefixed messages on a plain TCP socket: the user thread sends
  (``sendall`` under a lock), a reader thread per connection reads; the floor of any transport
  with a Python reader thread.

Prints per mode the round trips per second and the CPU microseconds per message (one way) of
each process (``resource.getrusage``, all threads), so two messages per round trip.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import queue
import resource
import socket
import struct
import threading
import time

import grpc
import grpc.aio

SERVICE, METHOD = "bench.Echo", "Stream"
PATH = f"/{SERVICE}/{METHOD}"
PAYLOAD = b"x" * 64
_END = object()
_LENGTH = struct.Struct(">I")


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- servers ------------------------------------------------------------------------------------
def sync_server(port_out, cpu_pipe) -> None:
    def stream(request_iterator, context):
        echoes: queue.SimpleQueue = queue.SimpleQueue()

        def read() -> None:
            try:
                for message in request_iterator:
                    echoes.put(message)
            except grpc.RpcError:
                pass  # the client went away
            echoes.put(_END)

        threading.Thread(target=read, daemon=True).start()
        while (message := echoes.get()) is not _END:
            yield message

    from concurrent import futures
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        SERVICE, {METHOD: grpc.stream_stream_rpc_method_handler(stream)}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    serve_until_measured(port, port_out, cpu_pipe)
    server.stop(None)


def aio_server(port_out, cpu_pipe) -> None:
    async def stream(request_iterator, context):
        async for message in request_iterator:
            yield message

    async def main() -> None:
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            SERVICE, {METHOD: grpc.stream_stream_rpc_method_handler(stream)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        await asyncio.get_running_loop().run_in_executor(None, serve_until_measured, port, port_out, cpu_pipe)
        await server.stop(None)

    asyncio.run(main())


def serve_until_measured(port: int, port_out, cpu_pipe) -> None:
    """Give the port, then report this process's CPU between the client's two marks."""
    port_out.send(port)
    cpu_pipe.recv()  # start mark
    before = cpu_s()
    cpu_pipe.recv()  # end mark
    cpu_pipe.send(cpu_s() - before)


# -- clients ------------------------------------------------------------------------------------
class SyncClient:
    def __init__(self, port: int) -> None:
        self._channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self._outgoing: queue.SimpleQueue = queue.SimpleQueue()
        self._arrived = threading.Event()
        call = self._channel.stream_stream(PATH)(self._requests())
        threading.Thread(target=self._read, args=(call,), daemon=True).start()

    def _requests(self):
        while (message := self._outgoing.get()) is not _END:
            yield message

    def _read(self, call) -> None:
        try:
            for _ in call:
                self._arrived.set()
        except grpc.RpcError:
            pass  # closed

    def round_trip(self) -> None:
        self._arrived.clear()
        self._outgoing.put(PAYLOAD)
        self._arrived.wait()

    def close(self) -> None:
        self._outgoing.put(_END)
        self._channel.close()


class AioClient:
    def __init__(self, port: int) -> None:
        self._loop = asyncio.new_event_loop()
        self._arrived = threading.Event()
        threading.Thread(target=self._loop.run_forever, daemon=True).start()
        self._outgoing: asyncio.Queue = asyncio.run_coroutine_threadsafe(self._open(port), self._loop).result()

    async def _open(self, port: int) -> asyncio.Queue:
        self._channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        outgoing: asyncio.Queue = asyncio.Queue()

        async def requests():
            while (message := await outgoing.get()) is not _END:
                yield message

        call = self._channel.stream_stream(PATH)(requests())

        async def read() -> None:
            try:
                async for _ in call:
                    self._arrived.set()
            except (grpc.RpcError, asyncio.CancelledError):
                pass  # closed

        self._reader = asyncio.ensure_future(read())
        return outgoing

    def round_trip(self) -> None:
        self._arrived.clear()
        self._loop.call_soon_threadsafe(self._outgoing.put_nowait, PAYLOAD)
        self._arrived.wait()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._outgoing.put_nowait, _END)
        asyncio.run_coroutine_threadsafe(self._channel.close(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)


def socket_server(port_out, cpu_pipe) -> None:
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        connection, _ = listener.accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = connection.makefile("rb")
        while header := reader.read(4):
            connection.sendall(header + reader.read(_LENGTH.unpack(header)[0]))

    threading.Thread(target=serve, daemon=True).start()
    serve_until_measured(listener.getsockname()[1], port_out, cpu_pipe)


class SocketClient:
    """Length-prefixed messages on a plain TCP socket: the user thread sends, a reader thread reads."""

    def __init__(self, port: int) -> None:
        self._socket = socket.create_connection(("127.0.0.1", port))
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._lock = threading.Lock()
        self._arrived = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        reader = self._socket.makefile("rb")
        while header := reader.read(4):
            reader.read(_LENGTH.unpack(header)[0])
            self._arrived.set()

    def round_trip(self) -> None:
        self._arrived.clear()
        with self._lock:
            self._socket.sendall(_LENGTH.pack(len(PAYLOAD)) + PAYLOAD)
        self._arrived.wait()

    def close(self) -> None:
        self._socket.close()


def asyncio_server(port_out, cpu_pipe) -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                header = await reader.readexactly(4)
                writer.write(header + await reader.readexactly(_LENGTH.unpack(header)[0]))
        except asyncio.IncompleteReadError:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        await asyncio.get_running_loop().run_in_executor(None, serve_until_measured, port, port_out, cpu_pipe)
        server.close()

    asyncio.run(main())


class AsyncioClient:
    """Length-prefixed messages on asyncio streams: one event loop thread does all the socket work;
    the user thread hands a send to it with ``call_soon_threadsafe``."""

    def __init__(self, port: int) -> None:
        self._loop = asyncio.new_event_loop()
        self._arrived = threading.Event()
        threading.Thread(target=self._loop.run_forever, daemon=True).start()
        self._writer = asyncio.run_coroutine_threadsafe(self._open(port), self._loop).result()

    async def _open(self, port: int) -> asyncio.StreamWriter:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def read() -> None:
            try:
                while True:
                    header = await reader.readexactly(4)
                    await reader.readexactly(_LENGTH.unpack(header)[0])
                    self._arrived.set()
            except (asyncio.IncompleteReadError, ConnectionError):
                pass

        self._reader = asyncio.ensure_future(read())
        return writer

    def round_trip(self) -> None:
        self._arrived.clear()
        self._loop.call_soon_threadsafe(self._writer.write, _LENGTH.pack(len(PAYLOAD)) + PAYLOAD)
        self._arrived.wait()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._writer.close)
        self._loop.call_soon_threadsafe(self._loop.stop)


MODES = {"sync": (sync_server, SyncClient), "aio": (aio_server, AioClient),
         "socket": (socket_server, SocketClient), "asyncio": (asyncio_server, AsyncioClient)}


def measure(mode: str, messages: int) -> tuple[float, float, float]:
    """(round trips per second, client CPU us per message, server CPU us per message)."""
    server_main, client_class = MODES[mode]
    context = multiprocessing.get_context("spawn")
    port_in, port_out = context.Pipe()
    cpu_here, cpu_there = context.Pipe()
    server = context.Process(target=server_main, args=(port_out, cpu_there), daemon=True)
    server.start()
    client = client_class(port_in.recv())
    for _ in range(200):  # warm
        client.round_trip()
    cpu_here.send("start")
    before, started = cpu_s(), time.perf_counter()
    for _ in range(messages):
        client.round_trip()
    wall, client_cpu = time.perf_counter() - started, cpu_s() - before
    cpu_here.send("end")
    server_cpu = cpu_here.recv()
    client.close()
    server.join(10)
    if server.is_alive():
        server.kill()
    per_message = 1e6 / (2 * messages)
    return messages / wall, client_cpu * per_message, server_cpu * per_message


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--modes", default="sync,aio,socket")
    args = parser.parse_args()
    print(f"{'mode':>5} {'round trips/s':>14} {'client us/msg':>14} {'server us/msg':>14}")
    for mode in args.modes.split(","):
        rate, client, server = measure(mode, args.messages)
        print(f"{mode:>5} {rate:14.0f} {client:14.1f} {server:14.1f}", flush=True)


if __name__ == "__main__":
    main()
