"""Who may talk to the members: the token, the member key, the callers' roles, one stream per index.

Every attack here sends what a member would accept from an authenticated member: a data frame
for the sink's receiver of a running execution (which unpickles it), or a coordinator call with
the real execution id. So if a check were missing, the marker file would appear or the job
would be cancelled; each test then opens the job's gate and checks its full output.
"""

import pickle
import struct
import threading

import grpc
import jet
import pytest
from jet.cluster.client import JetClient
from jet.cluster.coordination.coordinator import JobStatus
from jet.cluster.links import messages
from jet.cluster.links.auth import MEMBER_METADATA_KEY, MEMBER_PROOF_METADATA_KEY, call_metadata, member_proof
from jet.cluster.links.stream_calls import encode_call
from jet.cluster.links.transport import OPEN_LINK_METHOD, STREAM_METHOD, ControlCallError, PeerConnection
from jet.cluster.settings import MemberSettings
from jet.core import DAG, Edge
from jet.core.processors import items_source_p, map_p
from jet.execution.errors import JobFailedError

from tests.cluster.cluster_support import deliveries, endless_source, wait_until
from tests.cluster.security_support import (
    ITEMS_PER_MEMBER,
    TouchFile,
    execution_id,
    gated_job,
    open_gate,
    poisoned_data_frame,
    wait_running,
)

STREAM_DEADLINE_S = 15


class RunningJob:
    """A gated job on a cluster of two, and the poisoned data frame for its execution."""

    def __init__(self, cluster, directory):
        self.cluster = cluster
        self.directory = directory
        self.dag = gated_job(directory)
        self.job = cluster.new_job(self.dag)
        wait_running(directory, 2)
        self.execution_id = execution_id(cluster.log_paths[0], self.job.id)
        self.marker = directory / "unpickled"
        self.data_frame = poisoned_data_frame(self.dag, self.execution_id, self.marker)

    def finish_unaffected(self) -> None:
        """Open the gate: the job completes with every item exactly once, nothing was unpickled."""
        open_gate(self.directory)
        self.job.join(timeout=60)
        assert self.job.status is JobStatus.COMPLETED
        got = sorted(item for items in deliveries(self.directory, "sink").values() for item in items)
        assert got == list(range(2 * ITEMS_PER_MEMBER))
        assert not self.marker.exists()


@pytest.fixture
def running(cluster2, tmp_path):
    job = RunningJob(cluster2, tmp_path)
    yield job
    open_gate(tmp_path)  # a failed test must not leave the job holding the shared cluster


def stream_refusal(address: str, metadata, frame: bytes) -> str:
    """Open a frame stream with ``metadata`` and send ``frame``, keeping the stream open: the
    status the member ends it with (a stream it accepted runs into the deadline instead). A
    caller claiming a member index asks for a link with ``OpenLink``, as a member does: the status
    it is refused with, or ``ACCEPTED``."""
    if int(dict(metadata).get(MEMBER_METADATA_KEY, "-1")) >= 0:
        with grpc.insecure_channel(address) as channel:
            try:
                channel.unary_unary(OPEN_LINK_METHOD)(b"", metadata=metadata, timeout=STREAM_DEADLINE_S)
            except grpc.RpcError as refused:
                return f"{refused.code().name}: {refused.details()}"
        return "ACCEPTED"
    hold = threading.Event()

    def requests():
        yield struct.pack(">I", len(frame)) + frame
        hold.wait(STREAM_DEADLINE_S)

    with grpc.insecure_channel(address) as channel:
        call = channel.stream_stream(STREAM_METHOD)(requests(), metadata=metadata, timeout=STREAM_DEADLINE_S)
        try:
            with pytest.raises(grpc.RpcError) as refused:
                list(call)
        finally:
            hold.set()
    return f"{refused.value.code().name}: {refused.value.details()}"


@pytest.mark.parametrize("token", ["wrong-token", None], ids=["wrong-token", "no-token"])
def test_a_caller_without_the_token_is_refused_where_a_member_would_be_heard(running, token):
    cluster, marker = running.cluster, running.marker
    # Everything but the token is right: member 1's index and proof, which member 0 (which
    # dialled member 1 itself) holds no stream from, and a data frame of the running execution.
    metadata = call_metadata(token or "", 1, cluster.member_key)
    if token is None:  # no token metadata at all
        metadata = ((MEMBER_METADATA_KEY, "1"), (MEMBER_PROOF_METADATA_KEY, member_proof(cluster.member_key, 1)))
    error = stream_refusal(cluster.addresses[0], metadata, running.data_frame)
    assert "UNAUTHENTICATED" in error and "cluster token" in error
    control = PeerConnection(cluster.addresses[0], 1, 0, token or "", open_stream=False)
    control._metadata = metadata
    try:
        for msg_type in (messages.SUBMIT, messages.INIT):
            with pytest.raises(ControlCallError) as refused:
                control.control(msg_type, messages.encode_message({}, pickle.dumps(TouchFile(marker))), 5)
            assert refused.value.code is grpc.StatusCode.UNAUTHENTICATED
    finally:
        control.close()
    running.finish_unaffected()


@pytest.mark.parametrize("member_key", [None, "a-guessed-member-key"], ids=["no-proof", "wrong-proof"])
def test_a_token_holder_claiming_a_member_index_without_its_proof_is_refused(running, member_key):
    cluster = running.cluster
    # As member 1 towards member 0: this data frame would be unpickled if the claim were believed.
    error = stream_refusal(cluster.addresses[0], call_metadata(cluster.token, 1, member_key), running.data_frame)
    assert "UNAUTHENTICATED" in error and "claims member 1 with" in error
    impostor = PeerConnection(cluster.addresses[1], 0, 1, cluster.token, member_key=member_key, open_stream=False)
    try:
        for msg_type in (messages.CANCEL, messages.COMPLETE):
            with pytest.raises(ControlCallError, match="claims member 0 with") as refused:
                impostor.control(msg_type, messages.encode_message({"execution_id": running.execution_id}), 5)
            assert refused.value.code is grpc.StatusCode.UNAUTHENTICATED
    finally:
        impostor.close()
    running.finish_unaffected()
    for log in cluster.log_paths:
        assert "WARNING" in log.read_text() and "claims member" in log.read_text()


def test_a_client_cannot_send_coordinator_or_member_messages_nor_member_frames(running):
    cluster = running.cluster
    header = {"execution_id": running.execution_id, "job_id": running.job.id, "member": 1}
    with JetClient(cluster.addresses[1:], cluster.token) as client:  # talks to member 1
        for msg_type in (messages.INIT, messages.CANCEL, messages.COMPLETE,
                         messages.EXECUTION_METRICS):
            with pytest.raises(ControlCallError) as refused:
                client._call(msg_type, header, pickle.dumps(TouchFile(running.marker)))
            assert refused.value.code is grpc.StatusCode.PERMISSION_DENIED
            assert (f"control message {msg_type!r} is accepted from the coordinator (member 0) only; "
                    f"refused to a client") in str(refused.value)
    with JetClient(cluster.addresses, cluster.token) as client:  # member 0
        with pytest.raises(ControlCallError, match="'execution_done' is accepted from the coordinator "
                                                   "\\(member 0\\) or other members only") as refused:
            client._call(messages.EXECUTION_DONE, {**header, "ok": False, "error": "forged"})
        assert refused.value.code is grpc.StatusCode.PERMISSION_DENIED
    error = stream_refusal(cluster.addresses[0], call_metadata(cluster.token, -12345), running.data_frame)
    assert "PERMISSION_DENIED" in error and "sent a CHUNK frame; only members send those" in error
    forged_init = encode_call(1, messages.INIT, messages.encode_message(header, pickle.dumps(TouchFile(running.marker))))
    error = stream_refusal(cluster.addresses[1], call_metadata(cluster.token, -12345), forged_init)
    assert "PERMISSION_DENIED" in error and "sent a CONTROL_CALL frame; only members send those" in error
    running.finish_unaffected()


def test_a_second_stream_claiming_a_live_members_index_is_refused_and_the_first_keeps_working(running):
    cluster = running.cluster
    # Member 1 serves member 0's stream. A second one as member 0, even with the member key
    # (a duplicated pod), is refused; had it been swapped in, member 1 would unpickle this frame.
    error = stream_refusal(cluster.addresses[1], call_metadata(cluster.token, 0, cluster.member_key),
                           running.data_frame)
    assert "ALREADY_EXISTS" in error and "member 0 (the coordinator) already has a live stream" in error
    wait_until(lambda: "refused a second stream from member 0" in cluster.log_paths[1].read_text(),
               what="member 1 to log the refused stream")
    running.finish_unaffected()
    assert cluster.client.ping(cluster=True)["cluster_ready"]


def test_more_client_streams_than_server_threads_and_a_job_still_runs(cluster2, tmp_path):
    limit = MemberSettings().max_client_streams
    extra = 8
    refused, streams = [], []
    try:
        for address in cluster2.addresses:
            for index in range(limit + extra):  # more than the 64 threads the server once had
                streams.append(PeerConnection(address, -1 - index, 0, cluster2.token,
                                              on_connection_lost=lambda peer, error: refused.append(error)))
        wait_until(lambda: len(refused) >= 2 * extra, what="the streams beyond the limit to be refused")
        assert all("RESOURCE_EXHAUSTED" in str(error) for error in refused)
        dag = DAG()
        source = dag.new_vertex("source", items_source_p(list(range(1000))), 1)
        double = dag.new_vertex("double", map_p(lambda x: 2 * x), 1)
        dag.edge(Edge.between(source, double).distributed())
        job = cluster2.new_job(dag)
        job.join(timeout=60)
        assert job.status is JobStatus.COMPLETED
        assert len(refused) == 2 * extra
    finally:
        for stream in streams:
            stream.close()


def test_a_garbage_frame_from_an_authenticated_member_closes_it_and_fails_the_job(tmp_path):
    with jet.local_cluster(members=2, log_dir=tmp_path / "logs") as cluster:
        dag = DAG()
        source = dag.new_vertex("source", endless_source(tmp_path), 1)
        sink = dag.new_vertex("sink", map_p(lambda x: x), 1)
        dag.edge(Edge.between(source, sink).distributed())
        # Without auto-scaling: a link closed for garbage counts as a lost member, which would
        # otherwise restart the job rather than fail it.
        job = cluster.new_job(dag, {"auto_scaling": False})
        wait_until(lambda: len(list(tmp_path.glob("started-*"))) == 2, what="the job running on both members")
        lost = []
        # Member 0 dials member 1, so member 0's server holds no stream from member 1: this one is new.
        impostor = PeerConnection(cluster.addresses[0], 1, 0, cluster.token, member_key=cluster.member_key,
                                  on_connection_lost=lambda peer, error: lost.append(error))
        impostor.send(b"\xff garbage, not a frame")
        with pytest.raises(JobFailedError) as failure:
            job.join(timeout=20)
        assert "unknown frame type" in str(failure.value)
        wait_until(lambda: lost, 10, "member 0 to close the stream that sent garbage")
        impostor.close()
        assert job.status is JobStatus.FAILED
        assert all(process.poll() is None for process in cluster.members)
        assert cluster.client.ping()["member"] == 0
