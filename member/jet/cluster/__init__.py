"""Across members: a job's DAG run by every member of a cluster, in wings by mechanism.

Each wing is a package whose docstring says what it owns; imports go one way, down this list
(``tests/test_layers.py`` holds the order and fails on a cycle or an arrow going up):

- :mod:`jet.cluster.links` — how members reach each other: auth, frame links over gRPC or TCP,
  packets and control messages, membership, heartbeats, peers;
- :mod:`jet.cluster.edges` — distributed edges: sender and receiver tasklets, flow control, the
  DONE relay, the member's frame router and a member's distributed execution plan;
- :mod:`jet.cluster.executions` — a member's part of each job: its executions, their end reports,
  metrics and observable results;
- :mod:`jet.cluster.coordination` — member 0's job coordination: jobs, executions, snapshots,
  restarts and scaling, the job store;
- the member process (:mod:`~jet.cluster.member`, :mod:`~jet.cluster.member_http`,
  :mod:`~jet.cluster.member_main`, :mod:`~jet.cluster.settings`) and the client
  (:mod:`~jet.cluster.client`);
- :mod:`jet.cluster.local` — the local process supervisor: member processes on this machine.
"""
