"""A member-like peer process for transport tests and the transport benchmark.

    python peer_process.py serve <token>            serve; echo every frame back; print "PORT <n>"
    python peer_process.py dial <address> <token>   open a stream to <address>; print "READY"
    python peer_process.py sink <token>             serve; count frames; a frame b"END" is answered
                                                    with the count and byte total (benchmark)

Runs until killed or until its stdin closes.
"""

import sys
import threading

from jet.cluster.transport import MemberServer, PeerConnection


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "dial":
        connection = PeerConnection(argv[1], 5, 0, argv[2], on_frame=lambda peer, frame: None)
        connection.send(b"hello")
        print("READY", flush=True)
    else:
        server = MemberServer(0, argv[1], host="127.0.0.1")
        if mode == "serve":
            server.on_frame = lambda peer, frame: server.send(peer, frame)
            server.on_control = lambda peer, msg_type, payload: payload
        else:
            totals = [0, 0]

            def count(peer: int, frame: bytes) -> None:
                if frame == b"END":
                    server.send(peer, b"%d %d" % tuple(totals))
                else:
                    totals[0] += 1
                    totals[1] += len(frame)

            server.on_frame = count
        server.start()
        print(f"PORT {server.port}", flush=True)
    sys.stdin.read()  # until the parent closes our stdin (or kills us)


if __name__ == "__main__":
    threading.current_thread().name = "peer-main"
    main(sys.argv[1:])
