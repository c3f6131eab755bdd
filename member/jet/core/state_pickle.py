"""How snapshot state is pickled: the standard library's pickle first, cloudpickle for what it refuses.

Snapshot state is mostly data (keys, accumulators, window frames, offsets), which the C pickler
writes several times faster than cloudpickle, whose ``reducer_override`` runs in Python for every
object. State that holds a lambda, a local function or a class shipped by value with the job (a
class of the user's pipeline file) makes pickle raise, and those chunks go through cloudpickle.
Either way the bytes load with ``pickle.loads``.
"""

from __future__ import annotations

import pickle
from typing import Any

import cloudpickle

_REFUSED = (pickle.PicklingError, AttributeError, TypeError)
"""What pickle raises for an object it cannot write by reference (a lambda, a local or shipped class)."""


def dumps_state(state: Any) -> bytes:
    """``state`` pickled at the highest protocol, by pickle where it can and cloudpickle where not."""
    try:
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    except _REFUSED:
        return cloudpickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
