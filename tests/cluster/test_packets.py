"""Codecs of the frames on the member stream: ACK frames and CHUNK data frames."""

import pickle
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jet.cluster.edges.chunk_packets import (
    FLAG_DONE,
    FLAG_PAIRS,
    HEADER_BYTES,
    chunk_footprint,
    decode_chunk,
    decode_chunk_header,
    encode_chunk,
    payload_bytes,
)
from jet.cluster.edges.flow_control import ITEM_FOOTPRINT_OVERHEAD_BYTES
from jet.cluster.links.packets import (
    AckEntry,
    FrameType,
    PacketFormatError,
    decode_ack_packet,
    encode_ack_packet,
    frame_type,
)


def test_ack_round_trip():
    acks = {5: [AckEntry(1, 0, 800), AckEntry(2, 1, -(2**31))], -1: [], 2**62: [(3, 3, 2**31 - 1)]}
    frame = encode_ack_packet(acks)
    assert frame_type(frame) is FrameType.ACK
    assert decode_ack_packet(frame) == {5: acks[5], -1: [], 2**62: [AckEntry(3, 3, 2**31 - 1)]}
    assert decode_ack_packet(encode_ack_packet({})) == {}


def test_chunk_round_trip_with_pairs_and_done():
    entries = [("word", 5), ({"a": [1, 2.5, None]}, 270), (b"\x00bytes", 0)]
    frame = encode_chunk(7, 3, 1, entries, pairs=True)
    assert frame_type(frame) is FrameType.CHUNK
    header, decoded = decode_chunk(frame)
    assert decoded == entries
    assert (header.execution_id, header.dest_vertex_id, header.dest_ordinal) == (7, 3, 1)
    assert header.flags == FLAG_PAIRS and header.count == 3
    assert decode_chunk_header(frame) == header
    done_header, nothing = decode_chunk(encode_chunk(7, 3, 1, [], done=True))
    assert nothing == [] and done_header.flags == FLAG_DONE


def test_footprint_is_pickled_size_plus_56_per_item():
    frame = encode_chunk(1, 1, 0, list(range(100)))
    assert payload_bytes(frame) == len(frame) - HEADER_BYTES > len(pickle.dumps(list(range(100)), 5))
    assert chunk_footprint(payload_bytes(frame), 100) == payload_bytes(frame) + 100 * ITEM_FOOTPRINT_OVERHEAD_BYTES


def _sample_chunk_frame() -> bytes:
    return encode_chunk(9, 2, 0, ["abc", (1, 2)], done=True)


def _sample_ack_frame() -> bytes:
    return encode_ack_packet({5: [AckEntry(1, 0, 800)], 6: [AckEntry(2, 2, 9)]})


@pytest.mark.parametrize("make, decode", [(_sample_chunk_frame, decode_chunk),
                                          (_sample_ack_frame, decode_ack_packet)])
def test_every_truncation_raises_packet_format_error(make, decode):
    frame = make()
    for cut in range(len(frame)):
        with pytest.raises(PacketFormatError):
            decode(frame[:cut])


def test_trailing_bytes_wrong_type_and_unknown_type():
    with pytest.raises(PacketFormatError, match="trailing"):
        decode_ack_packet(_sample_ack_frame() + b"\x00")
    with pytest.raises(PacketFormatError, match="expected a CHUNK frame"):
        decode_chunk(_sample_ack_frame() + b"\x00" * HEADER_BYTES)
    with pytest.raises(PacketFormatError, match="unknown frame type 99"):
        frame_type(b"\x63abc")
    with pytest.raises(PacketFormatError, match="empty"):
        frame_type(b"")


def test_bad_pickle_count_mismatch_and_bad_flags_are_rejected():
    header = struct.pack(">BqiiBi", FrameType.CHUNK, 1, 1, 0, 0, 1)
    with pytest.raises(PacketFormatError, match="does not unpickle"):
        decode_chunk(header + b"\xff\xfe not a pickle")
    with pytest.raises(PacketFormatError, match="not a tuple of 6 columns"):
        decode_chunk(header + pickle.dumps([1], 5))
    with pytest.raises(PacketFormatError, match="is not 1 items"):
        decode_chunk(header + pickle.dumps((None, [1, 2], [], None, None, None), 5))
    with pytest.raises(PacketFormatError, match=r"is not 1 \(item, partition\) pairs"):
        decode_chunk(header[:-5] + bytes([FLAG_PAIRS]) + header[-4:] + pickle.dumps((None, [1], [], None, None, None), 5))
    with pytest.raises(PacketFormatError, match="not a plain namedtuple"):
        decode_chunk(header + pickle.dumps((None, [(1,)], [dict], None, None, None), 5))
    with pytest.raises(PacketFormatError, match="flags"):
        decode_chunk_header(struct.pack(">BqiiBi", FrameType.CHUNK, 1, 1, 0, 0x80, 0))


@settings(max_examples=300)
@given(st.binary(max_size=200), st.sampled_from([b"", b"\x02", b"\x03"]))
def test_garbage_never_raises_anything_but_packet_format_error(garbage, prefix):
    frame = prefix + garbage
    for decode in (decode_chunk, decode_ack_packet, decode_chunk_header, frame_type):
        try:
            decode(frame)
        except PacketFormatError:
            pass


@given(st.lists(st.one_of(st.integers(), st.text(), st.binary(), st.none()), max_size=50))
def test_any_items_round_trip(items):
    assert decode_chunk(encode_chunk(1, 2, 3, items))[1] == items
