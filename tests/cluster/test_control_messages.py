"""Control payloads: a JSON header and a binary blob; one header encoded for many members."""

import pytest
from jet.cluster.links import messages
from jet.cluster.links.packets import PacketFormatError


def test_a_message_decodes_to_its_header_and_blob():
    header = {"job_id": "j1", "owners": [0, 1, 0], "name": 'a "quoted" \u00e9 name', "restore": None}
    assert messages.decode_message(messages.encode_message(header, b"\x00blob")) == (header, b"\x00blob")


@pytest.mark.parametrize("header", [
    {"job_id": "j1", "owners": list(range(271)), "restore": {"job_id": "j0", "snapshot_id": 3}},
    {},
    {"member_index": 99, "x": 1.5},  # the key's own value is replaced
], ids=["plan", "empty", "key-present"])
def test_one_header_per_value_decodes_as_if_encoded_for_each(header):
    payloads = messages.encode_message_per_value(header, b"dag", "member_index", [0, 3, 15])
    assert set(payloads) == {0, 3, 15}
    for member, payload in payloads.items():
        assert messages.decode_message(payload) == ({**header, "member_index": member}, b"dag")


def test_a_truncated_message_is_refused():
    payload = messages.encode_message({"a": 1})
    with pytest.raises(PacketFormatError, match="does not fit"):
        messages.decode_message(payload[:-2])
