"""Fixed-window rate counts start again on the clock (each whole multiple of the window since the epoch): a test
whose calls must all fall in one window first waits out a window that is about to end."""

from __future__ import annotations

import time


def within_one_window(seconds: int, needed: float) -> float:
    """Sleep past the current window's end when less than ``needed`` seconds are left of it; what is left now."""
    left = seconds - time.time() % seconds
    if left < needed:
        time.sleep(left + 1)
        left = seconds - time.time() % seconds
    return left
