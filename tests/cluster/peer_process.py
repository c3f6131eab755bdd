"""A member-like peer process for transport tests and the transport benchmark.

    python peer_process.py serve <token> <member key>           serve; echo every frame back; print "PORT <n>"
    python peer_process.py dial <address> <token> <member key>  open a stream as member 5; print "READY"

Runs until killed or until its stdin closes.
"""

import sys
import threading

from jet.cluster.links.transport import MemberServer, PeerConnection


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "dial":
        connection = PeerConnection(argv[1], 5, 0, argv[2], member_key=argv[3], on_frame=lambda peer, frame: None)
        connection.send(b"hello")
        print("READY", flush=True)
    else:
        server = MemberServer(0, argv[1], host="127.0.0.1", member_key=argv[2])
        server.on_frame = lambda peer, frame: server.send(peer, frame)
        server.on_control = lambda peer, msg_type, payload: payload
        server.start()
        print(f"PORT {server.port}", flush=True)
    sys.stdin.read()  # until the parent closes our stdin (or kills us)


if __name__ == "__main__":
    threading.current_thread().name = "peer-main"
    main(sys.argv[1:])
