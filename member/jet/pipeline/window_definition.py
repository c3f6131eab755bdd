"""Window definitions of stream stages: Jet's WindowDefinition.tumbling/sliding/session.

A definition only records what the user asked for; the sizes are checked when the pipeline is
submitted (``Pipeline.validate``), where the message can name the stage that uses it.
"""

from __future__ import annotations

from typing import Any


class WindowDefinition:
    """How a stream stage groups events into windows; build one with :meth:`tumbling`,
    :meth:`sliding` or :meth:`session`. Windows are aligned to the epoch, as in Jet."""

    early_results_period_ms: int = 0

    @staticmethod
    def tumbling(size_ms: int) -> "SlidingWindowDefinition":
        """Back-to-back windows of ``size_ms`` milliseconds: [0, size), [size, 2 size), ..."""
        return SlidingWindowDefinition(size_ms, size_ms)

    @staticmethod
    def sliding(size_ms: int, slide_ms: int) -> "SlidingWindowDefinition":
        """Windows of ``size_ms`` starting every ``slide_ms`` (size a multiple of the slide)."""
        return SlidingWindowDefinition(size_ms, slide_ms)

    @staticmethod
    def session(timeout_ms: int) -> "SessionWindowDefinition":
        """Per key, events closer than ``timeout_ms`` to each other form one window."""
        return SessionWindowDefinition(timeout_ms)

    def set_early_results_period(self, period_ms: int) -> "WindowDefinition":
        """Also emit the current result of each open window every ``period_ms`` of wall time,
        marked ``is_early`` (0: only when the window closes)."""
        self.early_results_period_ms = period_ms
        return self

    def problems(self) -> list[str]:
        """What is wrong with the definition, as phrases (empty when it is usable)."""
        period = self.early_results_period_ms
        if not _is_int(period) or period < 0:
            return [f"the early results period must be an int >= 0 ms, got {period!r}"]
        return []

    @property
    def preferred_watermark_stride_ms(self) -> int:
        """The watermark spacing that suits this window (Jet's preferredWatermarkStride)."""
        raise NotImplementedError


class SlidingWindowDefinition(WindowDefinition):
    """Sliding windows of ``size_ms`` every ``slide_ms``; tumbling when they are equal."""

    def __init__(self, size_ms: int, slide_ms: int) -> None:
        self.size_ms = size_ms
        self.slide_ms = slide_ms

    @property
    def is_tumbling(self) -> bool:
        return self.size_ms == self.slide_ms

    def problems(self) -> list[str]:
        for field_name, value in (("size", self.size_ms), ("slide", self.slide_ms)):
            if not _is_int(value) or value <= 0:
                return [f"the window {field_name} must be an int > 0 ms, got {value!r}"]
        if self.size_ms % self.slide_ms:
            return [f"the window size ({self.size_ms} ms) must be a multiple of its slide"
                    f" ({self.slide_ms} ms)"]
        return super().problems()

    @property
    def preferred_watermark_stride_ms(self) -> int:
        return self.slide_ms

    def __repr__(self) -> str:
        if self.is_tumbling:
            return f"WindowDefinition.tumbling({self.size_ms!r})"
        return f"WindowDefinition.sliding({self.size_ms!r}, {self.slide_ms!r})"


class SessionWindowDefinition(WindowDefinition):
    """Session windows: a key's window closes after ``timeout_ms`` without events."""

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms

    def problems(self) -> list[str]:
        if not _is_int(self.timeout_ms) or self.timeout_ms <= 0:
            return [f"the session timeout must be an int > 0 ms, got {self.timeout_ms!r}"]
        return super().problems()

    @property
    def preferred_watermark_stride_ms(self) -> int:
        return min(100, max(1, self.timeout_ms // 100))

    def __repr__(self) -> str:
        return f"WindowDefinition.session({self.timeout_ms!r})"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
