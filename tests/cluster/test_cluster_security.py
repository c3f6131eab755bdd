"""Who may talk to the members: token checks, coordinator-only messages, garbage on the data stream."""

import pathlib
import pickle
import time

import grpc
import pytest

import jet
from jet.cluster import messages
from jet.cluster.auth import MEMBER_METADATA_KEY
from jet.cluster.client import JetClient
from jet.cluster.coordinator import JobStatus
from jet.cluster.transport import ControlCallError, PeerConnection
from jet.core import DAG, Edge
from jet.core.processors import map_p
from jet.execution.errors import JobFailedError
from tests.cluster.cluster_support import endless_source, wait_until


class TouchFile:
    """A payload that creates a marker file when it is unpickled."""

    def __init__(self, path: pathlib.Path):
        self.path = path

    def __reduce__(self):
        return (pathlib.Path.touch, (self.path,))


def endless_job(started_dir) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", endless_source(started_dir), 1)
    sink = dag.new_vertex("sink", map_p(lambda x: x), 1)
    dag.edge(Edge.between(source, sink).distributed())
    return dag


@pytest.mark.parametrize("token", ["wrong-token", None], ids=["wrong-token", "no-token"])
def test_a_client_without_the_token_is_refused_and_nothing_is_unpickled(cluster2, tmp_path, token):
    marker = tmp_path / "unpickled"
    connection = PeerConnection(cluster2.addresses[0], messages.CLIENT_INDEX, 0, token or "x", open_stream=False)
    if token is None:  # no token metadata at all
        connection._metadata = ((MEMBER_METADATA_KEY, str(messages.CLIENT_INDEX)),)
    try:
        for msg_type in (messages.SUBMIT, messages.INIT):
            with pytest.raises(ControlCallError) as refused:
                connection.control(msg_type, messages.encode_message({}, pickle.dumps(TouchFile(marker))), 5)
            assert refused.value.code is grpc.StatusCode.UNAUTHENTICATED
    finally:
        connection.close()
    lost = []
    stream = PeerConnection(cluster2.addresses[1], 0, 1, "wrong-token",
                            on_connection_lost=lambda peer, error: lost.append(error))
    try:
        stream.send(pickle.dumps(TouchFile(marker)))
    except ConnectionError:
        pass  # refused already, before the frame was queued
    wait_until(lambda: lost, 10, "the unauthenticated stream to be refused")
    assert "UNAUTHENTICATED" in str(lost[0])
    stream.close()
    assert not marker.exists()
    assert cluster2.client.ping(cluster=True)["cluster_ready"]


def test_a_client_with_the_token_cannot_send_coordinator_messages(cluster2, tmp_path):
    marker = tmp_path / "unpickled"
    with JetClient(cluster2.addresses[1:], cluster2.token) as client:  # talks to member 1
        for msg_type in (messages.INIT, messages.START, messages.CANCEL, messages.COMPLETE):
            with pytest.raises(ControlCallError, match="coordinator") as refused:
                client._call(msg_type, {"execution_id": 1}, pickle.dumps(TouchFile(marker)))
            assert refused.value.code is grpc.StatusCode.INTERNAL
        with pytest.raises(ControlCallError, match="not the coordinator"):
            client._call(messages.SUBMIT, {}, pickle.dumps(TouchFile(marker)))
    assert not marker.exists()


def test_a_garbage_frame_from_an_authenticated_peer_closes_it_and_fails_the_job(tmp_path):
    with jet.local_cluster(members=2, log_dir=tmp_path / "logs") as cluster:
        job = cluster.new_job(endless_job(tmp_path))
        wait_until(lambda: len(list(tmp_path.glob("started-*"))) == 2, what="the job running on both members")
        lost = []
        # Member 0 dials member 1, so member 0's server holds no stream from member 1: this one is new.
        impostor = PeerConnection(cluster.addresses[0], 1, 0, cluster.token,
                                  on_connection_lost=lambda peer, error: lost.append(error))
        sent = time.monotonic()
        impostor.send(b"\xff garbage, not a frame")
        with pytest.raises(JobFailedError) as failure:
            job.join(timeout=20)
        assert time.monotonic() - sent < 10
        assert "unknown frame type" in str(failure.value)
        wait_until(lambda: lost, 10, "member 0 to close the stream that sent garbage")
        impostor.close()
        assert job.status is JobStatus.FAILED
        assert all(process.poll() is None for process in cluster.members)
        assert cluster.client.ping()["member"] == 0
