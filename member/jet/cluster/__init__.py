"""Across members: flow control, packets, gRPC transport and auth, peers, member settings.

- :mod:`jet.cluster.flow_control` — Jet's adaptive receive window (``ReceiveWindow``, ``SendLimit``)
- :mod:`jet.cluster.packets` — frame types, the ACK frame codec, ``PacketFormatError``
- :mod:`jet.cluster.chunk_packets` — CHUNK data frames (one pickled chunk of items)
- :mod:`jet.cluster.auth` — cluster token, auth interceptor, ``TlsConfig``
- :mod:`jet.cluster.transport` — ``MemberServer``, ``PeerConnection``, ``FrameLink``
- :mod:`jet.cluster.peers` — ``--peers`` forms, pod ordinals, ``wait_for_peers``
- :mod:`jet.cluster.membership` — joined peers and their streams, ``PeerDialer`` (rejoin)
- :mod:`jet.cluster.heartbeat` — heartbeats on member streams, silent peers declared lost
- :mod:`jet.cluster.member_supervisor` — the local cluster restarts members that die
- :mod:`jet.cluster.settings` — ``MemberSettings`` (flags > env > YAML > defaults)
"""
