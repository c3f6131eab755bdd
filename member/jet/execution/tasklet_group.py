"""TaskletGroup: several cooperative tasklets a worker calls as one.

A distributed edge gives every member one sender and one receiver tasklet per remote member.
Each tasklet the service runs costs a tracker, a slot in every pass of its worker, a polling
check when the worker goes idle and a completion under the job's lock; at 16 members a tiny job
with two distributed edges had 60 of them per member. Grouping the senders (or the receivers) of
one edge keeps their work and drops those per-tasklet costs, while a job's groups still spread
over the cooperative threads.
"""

from __future__ import annotations

from typing import Sequence

from jet.execution.backoff import wants_polling
from jet.execution.tasklet import DONE, DONE_BIT, MADE_PROGRESS, NO_PROGRESS, PROGRESS_BIT, WAS_ALREADY_DONE, Tasklet


class TaskletGroup:
    """Calls each of its cooperative tasklets once per ``call`` until every one is done.

    A member that is done is closed at once and not called again; the group is done with the
    last of them. An error in any member propagates and fails the job, naming the member.
    """

    is_cooperative = True

    def __init__(self, name: str, tasklets: Sequence[Tasklet]) -> None:
        if not tasklets or any(not t.is_cooperative for t in tasklets):
            raise ValueError(f"a tasklet group needs one or more cooperative tasklets, got {list(tasklets)!r}")
        self.name = name
        self.tasklets = tuple(tasklets)
        self._live = list(tasklets)

    def init(self) -> None:
        for tasklet in self.tasklets:
            tasklet.init()

    def wants_polling(self) -> bool:
        for tasklet in self._live:
            if wants_polling(tasklet):
                return True
        return False

    def call(self) -> int:
        live = self._live
        if not live:
            return WAS_ALREADY_DONE
        progress = 0
        finished = None
        for tasklet in live:
            try:
                state = tasklet.call()
            except BaseException as error:
                error.add_note(f"(in {tasklet.name})")
                raise
            if state & DONE_BIT:
                tasklet.close()
                if finished is None:
                    finished = []
                finished.append(tasklet)
            progress |= state
        if finished is not None:
            self._live = live = [t for t in live if t not in finished]
            if not live:
                return DONE
        return MADE_PROGRESS if progress & PROGRESS_BIT else NO_PROGRESS

    def close(self) -> None:
        """The job ended: close the members not yet closed."""
        live, self._live = self._live, []
        for tasklet in live:
            tasklet.close()

    def __repr__(self) -> str:
        return f"TaskletGroup({self.name!r}, {len(self._live)} of {len(self.tasklets)} live)"


def grouped(name: str, tasklets: Sequence[Tasklet], groups: int) -> list:
    """``tasklets`` dealt round-robin into at most ``groups`` groups named ``name`` (a single
    tasklet stays itself)."""
    groups = max(1, min(groups, len(tasklets)))
    shares = [list(tasklets[i::groups]) for i in range(groups)]
    return [share[0] if len(share) == 1 else TaskletGroup(f"{name} ({i + 1} of {groups})" if groups > 1 else name,
                                                          share)
            for i, share in enumerate(shares)]
