"""Rate strings in the ``limits`` library's syntax: ``"120/minute"``, ``"10 per second"``, ``"5/2 hours"``.

Several rates may be joined with ``;``, ``,`` or ``|`` (``"10/second; 600/hour"``): each is counted
on its own and the first exhausted refuses. Parsed here, in the foundations, so that the settings
checks, a tool's ``rate_limit=`` declaration and the limits middleware read one grammar.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

#: Seconds per unit (a month is 30 days and a year 365, as in ``limits``).
UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "month": 30 * 86400, "year": 365 * 86400}
_ONE = re.compile(r"\s*([0-9]+)\s*(?:/|\s+per\s+)\s*([0-9]+)?\s*(second|minute|hour|day|month|year)s?\s*", re.I)
_SEPARATORS = re.compile(r"[,;|]")


@dataclass(frozen=True)
class Rate:
    """``amount`` calls per ``seconds`` (one fixed window)."""

    amount: int
    seconds: int

    def __str__(self) -> str:
        return f"{self.amount}/{self.seconds}s"


@functools.lru_cache(maxsize=256)
def parse(text: str) -> tuple[Rate, ...]:
    """The rates ``text`` names; ``ValueError`` saying what is wrong for anything else."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{text!r} is not a rate such as '120/minute'")
    rates = []
    for part in _SEPARATORS.split(text):
        match = _ONE.fullmatch(part)
        if match is None:
            raise ValueError(f"{part.strip()!r} is not a rate such as '120/minute' or '5 per 2 hours'")
        amount, multiple, unit = int(match[1]), int(match[2] or 1), match[3].lower()
        if amount < 1 or multiple < 1:
            raise ValueError(f"{part.strip()!r}: the count and the period must be positive")
        rates.append(Rate(amount, multiple * UNITS[unit]))
    return tuple(rates)


def valid(text: object) -> bool:
    """Whether ``text`` is None or a rate string ``parse`` accepts."""
    if text is None:
        return True
    try:
        parse(text)
    except (TypeError, ValueError):
        return False
    return True


__all__ = ["UNITS", "Rate", "parse", "valid"]
