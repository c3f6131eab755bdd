"""A lost member is noticed: a killed one through its broken streams, a stopped (silent) one by the
heartbeat timeout; the local cluster restarts a dead member process."""

import signal

import pytest
from jet.cluster.links.grpc_link import GrpcFrameLink
from jet.cluster.links.heartbeat import HeartbeatMonitor, SilentPeerError
from jet.cluster.links.transport import FrameLink
from jet.cluster.member import Member
from jet.cluster.settings import MemberSettings

from tests.cluster.cluster_support import wait_until
from tests.cluster.member_loss_support import (
    HEARTBEAT_TIMEOUT_MS,
    REJOIN_WAIT_S,
    log_lines,
    quick_cluster,
    run_partitioned_job_on_every_member,
    wait_logged,
    wait_rejoined,
)


def test_a_killed_member_is_lost_through_its_broken_streams_restarted_and_a_new_job_runs_on_all(tmp_path):
    with quick_cluster(tmp_path / "logs") as cluster:
        killed = cluster.kill_member(2)
        assert killed.wait(10) == -signal.SIGKILL
        for index in (0, 1):
            [line] = wait_logged(cluster, index, "lost its connection with member 2", f"member {index} logging the loss")
            assert "broke" in line and "nothing arrived" not in line, line  # the stream, not the heartbeat
        wait_rejoined(cluster, restarts=1)
        assert cluster.members[2] is not killed and cluster.members[2].poll() is None
        for index in (0, 1):
            assert log_lines(cluster, index, r"member 2 \(.*\) rejoined"), f"member {index} saw no rejoin"
        assert len(log_lines(cluster, 2, "member 2 of 3 serving gRPC")) == 2, "one log, appended by the restart"
        run_partitioned_job_on_every_member(cluster, tmp_path / "out")
        assert cluster.member_restarts == 1
        for index in range(3):
            assert not log_lines(cluster, index, " ERROR "), f"member {index} logged an error"


def test_a_stopped_member_is_lost_by_the_heartbeat_timeout_and_rejoins_when_it_continues(tmp_path):
    with quick_cluster(tmp_path / "logs") as cluster:
        stopped = cluster.kill_member(1, signal.SIGSTOP)
        try:
            for index in (0, 2):
                [line] = wait_logged(cluster, index, "lost its connection with member 1",
                                     f"member {index} declaring the silent member 1 lost", timeout_s=30)
                assert f"heartbeat timeout {HEARTBEAT_TIMEOUT_MS} ms" in line, line
            assert not cluster.cluster_ready()
        finally:
            stopped.send_signal(signal.SIGCONT)
        wait_until(cluster.cluster_ready, REJOIN_WAIT_S, "member 1 rejoining after SIGCONT", interval_s=0.2)
        assert cluster.member_restarts == 0 and stopped.poll() is None
        run_partitioned_job_on_every_member(cluster, tmp_path / "out")


def test_a_member_that_stops_in_order_stays_down_and_one_that_crashes_is_restarted_each_time(tmp_path):
    with quick_cluster(tmp_path / "logs", members=2) as cluster:
        for restarts in (1, 2):
            cluster.kill_member(1)
            wait_rejoined(cluster, restarts)
        leaving = cluster.kill_member(1, signal.SIGTERM)
        assert leaving.wait(30) == 0
        wait_logged(cluster, 0, "member 1 has left the cluster", "member 0 seeing member 1 leave")
        assert cluster.members[1] is leaving and cluster.member_restarts == 2
        assert not cluster.cluster_ready()


def test_the_heartbeat_monitor_fails_only_the_links_silent_past_the_timeout():
    now = [100.0]
    lost = []
    quiet, chatty = (GrpcFrameLink(peer, None, lambda peer, error: lost.append((peer, error))) for peer in (1, 2))
    quiet.last_message_at, chatty.last_message_at = 94.9, 99.0
    monitor = HeartbeatMonitor(lambda: [quiet, chatty], interval_ms=1000, timeout_ms=5000, clock=lambda: now[0])
    assert monitor.beat() == [quiet]
    [(peer, error)] = lost
    assert peer == 1 and isinstance(error, SilentPeerError) and quiet.closed and not chatty.closed
    assert "nothing arrived from member 1 for 5.1 s (heartbeat timeout 5000 ms)" in str(error)
    assert chatty.pending_frames() == 1
    assert next(chatty.outgoing_messages()) == b"", "a heartbeat is an empty message"


def test_a_link_that_sent_a_frame_within_the_interval_gets_no_heartbeat():
    now = [100.0]
    busy, idle, long_idle = (FrameLink(peer, None, None) for peer in (1, 2, 3))
    for link in (busy, idle, long_idle):
        link.last_message_at = 99.5
    busy.last_frame_sent_at, idle.last_frame_sent_at = 99.2, 98.9  # long_idle: never sent a frame
    monitor = HeartbeatMonitor(lambda: [busy, idle, long_idle], interval_ms=1000, timeout_ms=5000,
                               clock=lambda: now[0])
    assert monitor.beat() == []
    assert [link.pending_frames() for link in (busy, idle, long_idle)] == [0, 1, 1]
    busy.send(b"frame")
    assert busy.last_frame_sent_at > 0 and busy.pending_frames() == 1


def test_a_heartbeat_timeout_not_above_the_interval_is_refused_naming_both():
    settings = MemberSettings(port=0, http_port=0, host="127.0.0.1", token="t", heartbeat_interval_ms=2000,
                              heartbeat_timeout_ms=2000)
    with pytest.raises(ValueError, match=r"heartbeat_timeout_ms \(2000\) must be greater than "
                                         r"heartbeat_interval_ms \(2000\)"):
        Member(settings)
