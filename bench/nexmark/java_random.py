"""``java.util.Random`` in Python: Beam's generator seeds one per event id, so the same ids give
the same events here as in Beam."""

from __future__ import annotations

_MULTIPLIER = 0x5DEECE66D
_MASK = (1 << 48) - 1
_INT_RANGE = 1 << 31


class JavaRandom:
    """The 48-bit linear congruential generator of ``java.util.Random``."""

    __slots__ = ("_seed",)

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ _MULTIPLIER) & _MASK

    def _next(self, bits: int) -> int:
        self._seed = seed = (self._seed * _MULTIPLIER + 0xB) & _MASK
        value = seed >> (48 - bits)
        return value - (1 << bits) if bits == 32 and value >= _INT_RANGE else value

    def next_int(self, bound: int) -> int:
        """``nextInt(bound)``: uniform in ``[0, bound)``."""
        if bound & -bound == bound:
            return (bound * self._next(31)) >> 31
        while True:
            bits = self._next(31)
            value = bits % bound
            if bits - value + bound - 1 < _INT_RANGE:  # Java's int overflow test
                return value

    def next_long(self) -> int:
        """``nextLong()``: a signed 64-bit value."""
        value = (self._next(32) << 32) + self._next(32)
        value &= (1 << 64) - 1
        return value - (1 << 64) if value >= 1 << 63 else value

    def next_double(self) -> float:
        """``nextDouble()``: uniform in ``[0, 1)`` with 53 bits."""
        return ((self._next(26) << 27) + self._next(27)) * (1.0 / (1 << 53))
