"""The local process supervisor: a cluster of member processes on this machine (the highest
wing of :mod:`jet.cluster`; it starts members and talks to them through the client).

The embedded cluster (:mod:`.local_cluster`), members forked from a server that imported the
member's code once (:mod:`.fork_server`, :mod:`.forked_members`), restarting members that die
as Kubernetes recreates a pod (:mod:`.member_supervisor`) and dying with the parent process
(:mod:`.parent_watch`).
"""

import os

#: Members `jet run` starts by default: one per core, each with one cooperative thread. On the
#: 2-core benchmark machine 2 members ran word count over 100 MB in 6.7 s against 8.8 s for one
#: member in this process (bench/README.md).
DEFAULT_LOCAL_MEMBERS = os.cpu_count() or 1
