"""The interceptor's member proofs: each accepted once computed, a wrong one refused whatever was
accepted before, and no per-index memory where indexes are unbounded."""

from collections import namedtuple

from jet.cluster.links.auth import ClusterAuthInterceptor, call_metadata, member_proof

TOKEN, KEY = "token", "member-key"
Metadatum = namedtuple("Metadatum", "key value")  # what a gRPC server hands interceptors


def refusal(interceptor: ClusterAuthInterceptor, metadata) -> str | None:
    return interceptor._refusal([Metadatum(key, value) for key, value in metadata])


def test_a_right_proof_is_accepted_again_and_a_wrong_one_refused_after_it():
    interceptor = ClusterAuthInterceptor(TOKEN, lambda method: False, KEY, member_count=4)
    assert refusal(interceptor, call_metadata(TOKEN, 2, KEY)) is None
    assert refusal(interceptor, call_metadata(TOKEN, 2, KEY)) is None
    forged = call_metadata(TOKEN, 2, "another key")
    assert "wrong member proof" in refusal(interceptor, forged)
    borrowed = (*call_metadata(TOKEN, 3), ("x-jet-member-proof", member_proof(KEY, 2)))
    assert "claims member 3 with a wrong member proof" in refusal(interceptor, borrowed)
    assert "claims member 4" in refusal(interceptor, call_metadata(TOKEN, 4, KEY))


def test_without_a_member_count_claims_are_checked_and_nothing_is_kept_per_index():
    interceptor = ClusterAuthInterceptor(TOKEN, lambda method: False, KEY, member_count=None)
    for index in range(50):
        assert refusal(interceptor, call_metadata(TOKEN, index, KEY)) is None
    assert "wrong member proof" in refusal(interceptor, call_metadata(TOKEN, 7, "another key"))
    assert interceptor._proofs == {}
