"""A member settles its heap once started: what survives start-up is frozen, young collections are rarer."""

import gc
import weakref

from jet.execution.gc_tuning import YOUNG_GENERATION_THRESHOLD, settle_member_heap


class Cycle:
    """An object that only the cyclic collector can free."""

    def __init__(self) -> None:
        self.me = self


def test_settling_freezes_the_live_heap_raises_the_young_threshold_and_still_collects_new_cycles():
    before = gc.get_threshold()
    try:
        survivor = [object()]
        settle_member_heap()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_GENERATION_THRESHOLD, before[1], before[2])
        assert not any(o is survivor for o in gc.get_objects())  # frozen: no collection walks it
        garbage = Cycle()
        alive = weakref.ref(garbage)
        del garbage
        gc.collect()
        assert alive() is None  # a cycle made after settling is still freed
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
