"""The retry schedule after failed start-up attempts (L4), as a pure function."""

from __future__ import annotations

__all__ = ["backoff_delay"]

BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0


def backoff_delay(
    failures: int, *, first: float = BACKOFF_FIRST, maximum: float = BACKOFF_MAX
) -> float:
    """Seconds to wait after ``failures`` consecutive failures (``failures >= 1``).

    1, 2, 4, 8, 16, 32, 60, 60, … with the defaults.
    """
    if failures < 1:
        raise ValueError("failures must be at least 1")
    # Cap the exponent so huge failure counts never build huge integers.
    exponent = min(failures - 1, 64)
    return float(min(first * (2**exponent), maximum))
