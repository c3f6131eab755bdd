"""A member link's writes (jet.cluster.links.tcp_links.TcpLink): frames written by ``send`` itself while
the writer thread is idle, and by the writer when the socket is full, arrive whole and in each
sender's order, and ``send`` never blocks, whatever the peer reads."""

from __future__ import annotations

import random
import socket
import threading

from jet.cluster.links.tcp_links import TcpLink

WAIT_S = 30


def _connected_pair() -> tuple[socket.socket, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0))
    dialled = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    listener.close()
    return dialled, accepted


def _attach(link: TcpLink, sock: socket.socket) -> threading.Thread:
    thread = threading.Thread(target=link.attach, args=(sock, None), daemon=True)
    thread.start()
    return thread


def test_frames_from_two_threads_arrive_whole_and_in_order_while_the_peer_stalls_and_send_never_blocks():
    sending, receiving = _connected_pair()
    sending.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)  # a full socket early on
    receiving.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    senders_done = threading.Event()
    received: list[bytes] = []
    all_received = threading.Event()
    total = 2 * 400

    def on_frame(peer: int, frame: bytes) -> None:
        if not received:
            senders_done.wait(WAIT_S)  # the peer reads nothing until every send returned
        received.append(frame)
        if len(received) == total:
            all_received.set()

    lost: list = []
    writer = TcpLink(1, None, lambda peer, error: lost.append(error))
    reader = TcpLink(0, on_frame, lambda peer, error: lost.append(error))
    _attach(writer, sending)
    _attach(reader, receiving)

    def send_all(sender: int) -> None:
        rng = random.Random(sender)
        for sequence in range(total // 2):
            size = rng.choice([0, 10, 1000, 70_000])  # small frames go straight out, large ones in part
            writer.send(b"%d:%d:" % (sender, sequence) + bytes([sequence % 251]) * size)

    threads = [threading.Thread(target=send_all, args=(sender,)) for sender in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert not any(thread.is_alive() for thread in threads), "send blocked on a socket the peer does not read"
    senders_done.set()
    assert all_received.wait(WAIT_S), f"{len(received)} of {total} frames arrived"
    assert not lost
    per_sender: dict[int, list[int]] = {0: [], 1: []}
    for frame in received:
        sender, sequence, payload = frame.split(b":", 2)
        assert payload == bytes([int(sequence) % 251]) * len(payload)
        per_sender[int(sender)].append(int(sequence))
    assert per_sender == {0: list(range(total // 2)), 1: list(range(total // 2))}
    writer.close()
    reader.close()


def test_frames_sent_before_and_after_idle_spells_keep_their_order():
    sending, receiving = _connected_pair()
    received: list[bytes] = []
    arrived = threading.Condition()

    def on_frame(peer: int, frame: bytes) -> None:
        with arrived:
            received.append(frame)
            arrived.notify_all()

    writer = TcpLink(1, None, None)
    for early in range(5):  # queued before the link has a socket
        writer.send(b"early-%d" % early)
    reader = TcpLink(0, on_frame, None)
    _attach(writer, sending)
    _attach(reader, receiving)
    expected = [b"early-%d" % early for early in range(5)]
    for burst in range(20):
        with arrived:  # the writer goes idle between bursts: the next burst's first frame is written by send
            assert arrived.wait_for(lambda: len(received) == len(expected), WAIT_S)
        for index in range(burst):
            writer.send(b"burst-%d-%d" % (burst, index))
            expected.append(b"burst-%d-%d" % (burst, index))
        writer.send_heartbeat()
    with arrived:
        assert arrived.wait_for(lambda: len(received) == len(expected), WAIT_S)
    assert received == expected
    writer.close()
    reader.close()
