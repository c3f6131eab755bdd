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


def test_a_malformed_request_is_invalid_argument_naming_the_field_and_logs_no_traceback(tmp_path):
    """They were INTERNAL, with a traceback in member 0's log."""
    import grpc

    import jet
    from jet.cluster.client import JetClient
    from jet.cluster.links.transport import ControlCallError

    with jet.local_cluster(members=1, log_dir=tmp_path) as cluster:
        with JetClient(cluster.addresses, cluster.token) as client:
            for msg_type, header, field in [(messages.JOB_STATUS, {"job_id": 5}, "'job_id'"),
                                            (messages.CANCEL_JOB, {}, "'job_id'"),
                                            (messages.PING, {"wait_s": "soon"}, "wait_s"),
                                            ("no_such_message", {}, "unknown control message")]:
                with pytest.raises(ControlCallError) as refused:
                    client._call(msg_type, header)
                assert refused.value.code is grpc.StatusCode.INVALID_ARGUMENT, refused.value
                assert field in refused.value.details
            with pytest.raises(KeyError, match="unknown job 'j-none'"):
                client._call(messages.JOB_STATUS, {"job_id": "j-none"})
        log = cluster.log_paths[0].read_text()
    assert "Traceback" not in log and " ERROR " not in log, log
