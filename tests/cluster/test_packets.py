"""Binary codec of data and ack packets."""

import pickle
import struct
from collections import deque

from hypothesis import given, settings, strategies as st
import pytest

from jet.cluster.flow_control import SendLimit, item_footprint
from jet.cluster.packets import (
    DONE_ITEM,
    AckEntry,
    DataPacketHeader,
    FrameType,
    PacketBuilder,
    PacketFormatError,
    decode_ack_packet,
    decode_data_header,
    decode_data_packet,
    encode_ack_packet,
    frame_type,
)


def _build_all(items, limit=16384, **header):
    builder = PacketBuilder(header.get("execution_id", 7), header.get("vertex", 3), header.get("ordinal", 1), limit)
    pending = deque(items)
    packets = []
    while (packet := builder.build(pending)) is not None:
        packets.append(packet)
    return packets


def test_round_trip_items_partitions_and_done():
    items = [("word", 5), ({"a": [1, 2.5, None]}, -1), (b"\x00bytes", 270), (DONE_ITEM, -1)]
    [packet] = _build_all(items, execution_id=-(2**63), vertex=2**31 - 1, ordinal=0)
    assert frame_type(packet.frame) is FrameType.DATA
    footprints: list[int] = []
    header, decoded, done = decode_data_packet(packet.frame, footprints)
    assert header == DataPacketHeader(-(2**63), 2**31 - 1, 0)
    assert decode_data_header(packet.frame) == header
    assert decoded == items[:3]
    assert done and packet.done
    assert footprints == packet.footprints
    assert footprints == [item_footprint(len(pickle.dumps(item, 5))) for item, _ in items[:3]]


def test_size_limit_is_checked_before_each_item_so_one_may_overshoot():
    item = "x" * 1000
    items = [(item, i % 271) for i in range(100)]
    packets = _build_all(items, limit=16384)
    assert len(packets) > 1
    total = []
    for packet in packets[:-1]:
        assert len(packet.frame) >= 16384
        last_item_bytes = len(pickle.dumps(item, 5)) + 9
        assert len(packet.frame) - last_item_bytes < 16384
        total += decode_data_packet(packet.frame)[1]
    total += decode_data_packet(packets[-1].frame)[1]
    assert total == items


def test_one_huge_item_goes_alone():
    [packet] = _build_all([("y" * 100_000, -1)], limit=16384)
    assert decode_data_packet(packet.frame)[1] == [("y" * 100_000, -1)]


def test_flow_control_predicate_stops_the_packet():
    limit = SendLimit()  # no ack yet: may send while the sequence is under 64 KiB
    sent = 0
    builder = PacketBuilder(1, 1, 0, packet_size_limit=10**9)
    pending = deque(("z" * 944, -1) for _ in range(1000))  # footprint 1000 + pickle overhead
    packet = builder.build(pending, lambda added: limit.may_send(sent + added))
    sent += sum(packet.footprints)
    assert 65_536 <= sent < 65_536 + packet.footprints[0]
    assert builder.build(pending, lambda added: limit.may_send(sent + added)) is None
    limit.on_ack(800)
    assert builder.build(pending, lambda added: limit.may_send(sent + added)) is not None


def test_nothing_to_send_gives_none():
    assert PacketBuilder(1, 1, 0).build(deque()) is None


def test_done_ends_the_packet_and_leaves_the_rest_pending():
    pending = deque([(1, -1), (DONE_ITEM, -1), (2, -1)])
    packet = PacketBuilder(1, 1, 0).build(pending)
    assert packet.done and list(pending) == [(2, -1)]
    assert decode_data_packet(packet.frame)[1:] == ([(1, -1)], True)


def test_ack_round_trip():
    acks = {5: [AckEntry(1, 0, 800), AckEntry(2, 1, -(2**31))], -1: [], 2**62: [(3, 3, 2**31 - 1)]}
    frame = encode_ack_packet(acks)
    assert frame_type(frame) is FrameType.ACK
    assert decode_ack_packet(frame) == {5: acks[5], -1: [], 2**62: [AckEntry(3, 3, 2**31 - 1)]}
    assert decode_ack_packet(encode_ack_packet({})) == {}


def test_bad_packet_size_limit_is_named():
    with pytest.raises(ValueError, match="packet_size_limit"):
        PacketBuilder(1, 1, 0, packet_size_limit=0)


def _sample_data_frame() -> bytes:
    return _build_all([("abc", 1), ((1, 2), -1), (DONE_ITEM, -1)])[0].frame


def _sample_ack_frame() -> bytes:
    return encode_ack_packet({5: [AckEntry(1, 0, 800)], 6: [AckEntry(2, 2, 9)]})


@pytest.mark.parametrize("make, decode", [
    (_sample_data_frame, decode_data_packet), (_sample_data_frame, decode_data_header),
    (_sample_ack_frame, decode_ack_packet),
])
def test_every_truncation_raises_packet_format_error(make, decode):
    frame = make()
    for cut in range(len(frame)):
        if decode is decode_data_header and cut >= 21:
            continue  # the header alone is intact
        with pytest.raises(PacketFormatError):
            decode(frame[:cut])


def test_trailing_bytes_wrong_type_and_unknown_type():
    with pytest.raises(PacketFormatError, match="trailing"):
        decode_data_packet(_sample_data_frame() + b"\x00")
    with pytest.raises(PacketFormatError, match="trailing"):
        decode_ack_packet(_sample_ack_frame() + b"\x00")
    with pytest.raises(PacketFormatError, match="expected a DATA frame"):
        decode_data_packet(_sample_ack_frame())
    with pytest.raises(PacketFormatError, match="unknown frame type 99"):
        frame_type(b"\x63abc")
    with pytest.raises(PacketFormatError, match="empty"):
        frame_type(b"")


def test_item_after_done_and_bad_pickle_are_rejected():
    header = struct.pack(">Bqiii", FrameType.DATA, 1, 1, 0, 2)
    done = struct.pack(">Bi", 1, -1)
    with pytest.raises(PacketFormatError, match="follows the DONE"):
        decode_data_packet(header + done + done)
    garbage = b"\xff\xfe not a pickle"
    bad = struct.pack(">Bqiii", FrameType.DATA, 1, 1, 0, 1) + struct.pack(">BI", 0, len(garbage)) + garbage + b"\0\0\0\0"
    with pytest.raises(PacketFormatError, match="does not unpickle"):
        decode_data_packet(bad)


@settings(max_examples=300)
@given(st.binary(max_size=200), st.sampled_from([b"", b"\x01", b"\x02"]))
def test_garbage_never_raises_anything_but_packet_format_error(garbage, prefix):
    frame = prefix + garbage
    for decode in (decode_data_packet, decode_ack_packet, decode_data_header, frame_type):
        try:
            decode(frame)
        except PacketFormatError:
            pass


@given(st.lists(st.tuples(st.one_of(st.integers(), st.text(), st.binary(), st.none()),
                          st.integers(-1, 270)), max_size=50),
       st.integers(64, 4096))
def test_any_items_round_trip_through_packets(items, limit):
    decoded = []
    for packet in _build_all(items, limit=limit):
        decoded += decode_data_packet(packet.frame)[1]
    assert decoded == items
