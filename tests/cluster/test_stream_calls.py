"""Control calls between members travel as frames on their stream: a reply for each call, the
status a gRPC call would have failed with, a deadline, a lost peer failing its calls at once."""

import threading

import grpc
import pytest
from jet.cluster.links.packets import FrameType, PacketFormatError
from jet.cluster.links.stream_calls import StreamCalls, decode_call, decode_reply, encode_call, encode_reply
from jet.cluster.links.transport import ControlCallError, decode_control_request, serve_control


def test_call_and_reply_frames_decode_to_what_was_encoded_and_bad_ones_are_refused():
    call_id, request = decode_call(encode_call(2**40, "init", b"\x00payload"))
    assert call_id == 2**40 and decode_control_request(request) == ("init", b"\x00payload")
    assert decode_reply(encode_reply(7, None, b"ok")) == (7, None, b"ok")
    assert decode_reply(encode_reply(7, grpc.StatusCode.PERMISSION_DENIED, "no")) == (
        7, grpc.StatusCode.PERMISSION_DENIED, b"no")
    with pytest.raises(PacketFormatError, match="truncated CONTROL_CALL"):
        decode_call(bytes([FrameType.CONTROL_CALL, 0, 0]))
    with pytest.raises(PacketFormatError, match="unknown status 200"):
        decode_reply(encode_reply(1, None, b"")[:-1] + bytes([200]))
    with pytest.raises(PacketFormatError, match="expected a CONTROL_REPLY frame, got CONTROL_CALL"):
        decode_reply(encode_call(1, "x", b""))


class Pair:
    """Members 0 and 1, each with its StreamCalls, their frames passed straight to the other
    (``cut`` drops what 1 sends, as a stream that went silent would)."""

    def __init__(self, handler):
        self.cut = False
        self.seen = []
        self.calls = {}
        for me, peer in ((0, 1), (1, 0)):
            self.calls[me] = StreamCalls(self._sender(me), lambda caller, request: serve_control(
                lambda c, msg_type, payload: handler(c, msg_type, payload, self), caller, request), threads=4)

    def _sender(self, me):
        def send(peer, frame):
            if me == 1 and self.cut:
                return
            target = self.calls[peer]
            if frame[0] == FrameType.CONTROL_CALL:
                target.on_call_frame(me, frame)
            else:
                target.on_reply_frame(me, frame)
        return send

    def close(self):
        for calls in self.calls.values():
            calls.close()


def handler(caller, msg_type, payload, pair):
    pair.seen.append((caller.index, caller.role.name, msg_type, payload))
    if msg_type == "echo":
        return payload[::-1]
    if msg_type == "refuse":
        raise PermissionError("not for you")
    if msg_type == "fail":
        raise ValueError("exploded")
    if msg_type == "slow":
        threading.Event().wait(1.0)
        return b"late"
    return b""


def test_a_call_gets_its_reply_and_the_callee_sees_the_caller_by_its_stream():
    pair = Pair(handler)
    try:
        assert pair.calls[0].call(1, "echo", b"abc", 5) == b"cba"
        assert pair.calls[1].call(0, "echo", b"xy", 5) == b"yx"
    finally:
        pair.close()
    assert pair.seen == [(0, "COORDINATOR", "echo", b"abc"), (1, "MEMBER", "echo", b"xy")]


def test_a_refusal_a_failure_and_a_silent_peer_fail_the_call_as_grpc_would(caplog):
    pair = Pair(handler)
    try:
        with pytest.raises(ControlCallError) as refused:
            pair.calls[0].call(1, "refuse", b"", 5)
        assert refused.value.code is grpc.StatusCode.PERMISSION_DENIED
        assert "PermissionError: not for you" in str(refused.value)
        with pytest.raises(ControlCallError) as failed:
            pair.calls[0].call(1, "fail", b"", 5)
        assert failed.value.code is grpc.StatusCode.INTERNAL and "ValueError: exploded" in str(failed.value)
        assert "control call 'fail' from member 0 (the coordinator) failed" in caplog.text
        with pytest.raises(ControlCallError) as silent:
            pair.calls[0].call(1, "slow", b"", 0.1)
        assert silent.value.code is grpc.StatusCode.DEADLINE_EXCEEDED
        assert "control call 'slow' to member 1 failed: DEADLINE_EXCEEDED: no answer within 0.1 s" == str(silent.value)
    finally:
        pair.close()


def test_a_lost_peer_fails_the_calls_waiting_on_it_at_once():
    pair = Pair(handler)
    pair.cut = True  # member 1 answers into the void
    result = {}

    def call():
        try:
            pair.calls[0].call(1, "echo", b"abc", 30)
        except ControlCallError as e:
            result["error"] = e

    caller = threading.Thread(target=call)
    caller.start()
    try:
        threading.Event().wait(0.2)
        assert caller.is_alive()
        pair.calls[0].peer_lost(1, ConnectionError("stream broke"))
        caller.join(5)
        assert not caller.is_alive()
    finally:
        pair.close()
    assert result["error"].code is grpc.StatusCode.UNAVAILABLE
    assert "the stream with member 1 was lost: stream broke" in str(result["error"])


def test_a_notice_runs_its_handler_and_sends_nothing_back():
    pair = Pair(handler)
    answers = []
    original = pair.calls[0]._send_frame
    pair.calls[0]._send_frame = lambda peer, frame: (answers.append(frame), original(peer, frame))
    try:
        pair.calls[1].notify(0, "echo", b"report")
        pair.calls[1].notify(0, "fail", b"")
        for _ in range(200):
            if len(pair.seen) == 2:
                break
            threading.Event().wait(0.01)
        threading.Event().wait(0.1)  # time for an answer, if one were sent
    finally:
        pair.close()
    assert sorted(pair.seen) == [(1, "MEMBER", "echo", b"report"), (1, "MEMBER", "fail", b"")]
    assert answers == [], "a notice gets no reply, even when its handler fails"


def test_started_calls_complete_their_futures_with_no_thread_waiting_on_them():
    pair = Pair(handler)
    try:
        futures = [pair.calls[0].start(1, "echo", bytes([i]) * 3, 5) for i in range(20)]
        assert [f.result(5) for f in futures] == [bytes([i]) * 3 for i in range(20)]
        refused = pair.calls[0].start(1, "refuse", b"", 5)
        with pytest.raises(ControlCallError) as error:
            refused.result(5)
        assert error.value.code is grpc.StatusCode.PERMISSION_DENIED
        assert pair.calls[0]._pending == {}, "an answered call is forgotten"
    finally:
        pair.close()


def test_a_started_call_fails_at_its_deadline_even_when_an_earlier_one_comes_after_a_later_one():
    pair = Pair(handler)
    pair.cut = True  # nothing comes back
    try:
        later = pair.calls[0].start(1, "echo", b"", 3.0)
        sooner = pair.calls[0].start(1, "echo", b"", 0.2)
        with pytest.raises(ControlCallError) as error:
            sooner.result(2.0)  # well before the later call's deadline: the sweeper was woken for it
        assert error.value.code is grpc.StatusCode.DEADLINE_EXCEEDED
        assert str(error.value) == "control call 'echo' to member 1 failed: DEADLINE_EXCEEDED: no answer within 0.2 s"
        assert not later.done()
        with pytest.raises(ControlCallError, match="no answer within 3 s"):
            later.result(5)
        assert pair.calls[0]._pending == {}
    finally:
        pair.close()


def test_a_started_call_fails_at_once_when_its_peer_is_lost_or_there_is_no_stream():
    pair = Pair(handler)
    pair.cut = True
    try:
        waiting = pair.calls[0].start(1, "echo", b"", 30)
        pair.calls[0].peer_lost(1, ConnectionError("stream broke"))
        with pytest.raises(ControlCallError, match="the stream with member 1 was lost: stream broke"):
            waiting.result(1)

        def no_stream(peer, frame):
            raise ConnectionError(f"no stream with member {peer}")
        pair.calls[0]._send_frame = no_stream
        with pytest.raises(ConnectionError, match="no stream with member 1"):
            pair.calls[0].start(1, "echo", b"", 30).result(1)
        assert pair.calls[0]._pending == {}
    finally:
        pair.close()
