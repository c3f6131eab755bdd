"""How members reach each other (the lowest wing of :mod:`jet.cluster`; it imports only
``jet.core`` and ``jet.execution``).

Who may talk to a member (:mod:`.auth`: cluster token, member key, TLS), the frame stream
between two members and what carries it (:mod:`.frame_link`, :mod:`.grpc_link`,
:mod:`.tcp_links`, opened by :mod:`.transport`), its frame types (:mod:`.packets`), the control
messages and their encoding (:mod:`.messages`, :mod:`.stream_calls`), where the members are
(:mod:`.peers`), which are joined (:mod:`.membership`), heartbeats that find a silent peer
(:mod:`.heartbeat`) and how the gRPC server shares its threads (:mod:`.server_limits`).
"""
