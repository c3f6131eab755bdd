"""Session windows: the clicks of each user's visits, a visit ending after 30 s of silence.

    jet run examples/stream_sessions.py --timeout 10s

A timestamped source (SourceBuilder.timestamped_stream) replays USERS' click events of one
simulated hour, in event time, slightly out of order (within the allowed lag), then closes:
a stream that ends, so its last windows are flushed and the job completes with exact results.
Each session is KeyedWindowResult(start, end, user, clicks, is_early): start is the first
click, end the last click + the session timeout.

timestamped_stream (clicks) -> session window 30 s per user, counting
"""

import random

from jet import AggregateOperations, Pipeline, Sinks, SourceBuilder, WindowDefinition

EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: the simulated hour starts here
SESSION_TIMEOUT_MS = 30_000
ALLOWED_LAG_MS = 2_000


def clicks(users=20, seed=11):
    """Every user's clicks over an hour as (timestamp, (user, page)), in the order they arrive:
    visits with gaps under 15 s, silences of 60 s or more between them, each click delayed by up
    to 1 s on its way (so arrival is not quite event-time order)."""
    rng = random.Random(seed)
    events = []
    for user in range(users):
        t = EPOCH_MS + rng.randrange(60_000)
        while t < EPOCH_MS + 3_600_000:
            for _ in range(rng.randrange(1, 12)):
                events.append((t, (f"user-{user}", f"/page/{rng.randrange(30)}")))
                t += rng.randrange(1_000, 15_000)
            t += rng.randrange(60_000, 600_000)
    arrival = sorted(events, key=lambda event: event[0] + rng.randrange(1_000))
    return arrival


def fill(state, buffer):
    """Up to 500 clicks a call; the buffer closes after the last one (the source ends)."""
    for timestamp, click in state["clicks"][state["next"]:state["next"] + 500]:
        buffer.add(click, timestamp)
    state["next"] += 500
    if state["next"] >= len(state["clicks"]):
        buffer.close()


def pipeline(users="20"):
    source = (SourceBuilder.timestamped_stream("clicks", lambda ctx: {"clicks": clicks(int(users)), "next": 0})
              .fill_buffer_fn(fill)
              .build())
    p = Pipeline.create()
    sessions = (p.read_from(source)
                .with_native_timestamps(ALLOWED_LAG_MS)
                .grouping_key(lambda click: click[0])
                .window(WindowDefinition.session(SESSION_TIMEOUT_MS))
                .aggregate(AggregateOperations.counting()))
    sessions.write_to(Sinks.list("sessions"))
    return p
