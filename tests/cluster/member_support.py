"""One real member (gRPC server, coordinator, execution service) in the test's own process."""

from contextlib import contextmanager
from typing import Iterator

from jet.cluster.member import Member
from jet.cluster.settings import MemberSettings
from jet.core import DAG


@contextmanager
def member_in_this_process(cooperative_threads: int = 1) -> Iterator[Member]:
    """A one-member cluster on loopback ports of the system's choosing, stopped afterwards."""
    member = Member(MemberSettings(port=0, http_port=0, host="127.0.0.1", cooperative_threads=cooperative_threads,
                                   token="in-process-member")).start()
    try:
        yield member
    finally:
        member.stop()


def submit_one_vertex(member: Member, name: str, processor_class: type) -> str:
    """Submit a job of one vertex with one ``processor_class`` processor; its job id."""
    dag = DAG()
    dag.new_vertex(name, processor_class, 1)
    return member.submit(dag)
