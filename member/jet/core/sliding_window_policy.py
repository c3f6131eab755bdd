"""Jet's SlidingWindowPolicy: how event time is cut into frames and windows.

A frame is ``frame_size`` ms long (the slide) and labelled by its **end**, an exclusive upper
bound; a window is ``window_size / frame_size`` consecutive frames, labelled by its end too.
Frames and windows align to the epoch plus ``frame_offset``: with size 4 and slide 2 the
windows are ..., [-2, 2), [0, 4), [2, 6), ... An event at ``t`` belongs to the frame ending at
``higher_frame_ts(t)``. Arithmetic clamps at the int64 bounds as Java's does.
"""

from __future__ import annotations

from dataclasses import dataclass

from jet.core.special_items import MAX_TIMESTAMP, MIN_TIMESTAMP


def _check_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"SlidingWindowPolicy: {name} must be an int (ms), got {value!r}")


@dataclass(frozen=True)
class SlidingWindowPolicy:
    """Frames of ``frame_size`` ms, offset by ``frame_offset`` ms, windows of ``window_size`` ms."""

    frame_size: int
    frame_offset: int
    window_size: int

    def __post_init__(self) -> None:
        for name in ("frame_size", "frame_offset", "window_size"):
            _check_int(name, getattr(self, name))
        if self.frame_size <= 0:
            raise ValueError(f"SlidingWindowPolicy: frame_size (the slide) must be > 0 ms,"
                             f" got {self.frame_size}")
        if not 0 <= self.frame_offset < self.frame_size:
            raise ValueError(f"SlidingWindowPolicy: frame_offset must be in [0, frame_size ="
                             f" {self.frame_size}), got {self.frame_offset}")
        if self.window_size <= 0 or self.window_size % self.frame_size:
            raise ValueError(f"SlidingWindowPolicy: window_size must be a positive multiple of"
                             f" frame_size = {self.frame_size}, got {self.window_size}")

    def floor_frame_ts(self, timestamp: int) -> int:
        """The end of the frame before the one ``timestamp`` is in (the frame start of ``timestamp``)."""
        floored = timestamp - (timestamp - self.frame_offset) % self.frame_size
        return floored if floored > MIN_TIMESTAMP else MIN_TIMESTAMP

    def higher_frame_ts(self, timestamp: int) -> int:
        """The end of the frame ``timestamp`` belongs to (the lowest frame boundary above it)."""
        higher = self.floor_frame_ts(timestamp) + self.frame_size
        return higher if higher < MAX_TIMESTAMP else MAX_TIMESTAMP

    def is_tumbling(self) -> bool:
        """True when a window is exactly one frame."""
        return self.window_size == self.frame_size

    def to_tumbling_by_frame(self) -> "SlidingWindowPolicy":
        """The same frames, one frame per window (what the first stage of two accumulates)."""
        return SlidingWindowPolicy(self.frame_size, self.frame_offset, self.frame_size)


def sliding_win_policy(size_ms: int, slide_ms: int) -> SlidingWindowPolicy:
    """Windows of ``size_ms`` starting every ``slide_ms``; ``size_ms`` must be a multiple of the slide."""
    _check_int("size_ms", size_ms)
    _check_int("slide_ms", slide_ms)
    if slide_ms <= 0:
        raise ValueError(f"sliding window: slide_ms must be > 0, got {slide_ms}")
    if size_ms <= 0 or size_ms % slide_ms:
        raise ValueError(f"sliding window: size_ms must be a positive multiple of slide_ms ="
                         f" {slide_ms}, got size_ms = {size_ms}")
    return SlidingWindowPolicy(slide_ms, 0, size_ms)


def tumbling_win_policy(size_ms: int) -> SlidingWindowPolicy:
    """Back-to-back windows of ``size_ms`` (a sliding window whose slide is its size)."""
    _check_int("size_ms", size_ms)
    if size_ms <= 0:
        raise ValueError(f"tumbling window: size_ms must be > 0, got {size_ms}")
    return sliding_win_policy(size_ms, size_ms)
