"""Snapshot state goes through pickle when pickle can write it and through cloudpickle when it
refuses (a lambda, a class shipped by value); either way ``pickle.loads`` gives the state back."""

from __future__ import annotations

import pickle
from collections import Counter

import cloudpickle

from jet.core.state_pickle import dumps_state


def test_plain_data_is_written_by_pickle_itself():
    state = ("window", [((1, "k"), Counter(a=2)), ("x", [1.5, None, b"raw"])])
    data = dumps_state(state)
    assert data == pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    assert pickle.loads(data) == state


def test_a_lambda_in_the_state_goes_through_cloudpickle_and_still_works():
    data = dumps_state(("stateful", [("key", lambda x: x * 3)]))
    vertex, [(key, function)] = pickle.loads(data)
    assert (vertex, key, function(7)) == ("stateful", "key", 21)


def test_an_instance_of_a_class_shipped_by_value_round_trips():
    # A class as a job's pickled functions bring it to a member: by value, found in no module.
    namespace: dict = {}
    exec("class Bidder:\n    def __init__(self, n):\n        self.n = n\n", namespace)
    shipped = pickle.loads(cloudpickle.dumps(namespace["Bidder"]))
    restored = pickle.loads(dumps_state([("k", shipped(41))]))
    assert restored[0][1].n == 41 and type(restored[0][1]).__name__ == "Bidder"
