"""Masking sensitive values in the arguments an audit record keeps.

The idea of Django's ``SafeExceptionReporterFilter``: a key matching
``AUDIT_SENSITIVE_KEYS`` (case-insensitive, searched anywhere in the key) has its value
replaced, at every depth of dicts and lists. The result is always a fresh copy, so a tool
that mutates its arguments cannot change what was recorded.
"""

from __future__ import annotations

import re
from typing import Any

#: What a masked value becomes (Django's ``cleansed_substitute``).
SUBSTITUTE = "********************"

_compiled: tuple[str, re.Pattern[str]] | None = None


def pattern(source: str) -> re.Pattern[str]:
    """``source`` compiled case-insensitively, kept for the next call with the same source."""
    global _compiled
    if _compiled is None or _compiled[0] != source:
        _compiled = (source, re.compile(source, re.IGNORECASE))
    return _compiled[1]


def redact(value: Any, sensitive: re.Pattern[str] | None) -> Any:
    """A copy of the JSON value ``value`` with the values of sensitive keys masked (None: a plain copy)."""
    if isinstance(value, dict):
        if sensitive is None:
            return {k: redact(v, None) for k, v in value.items()}
        return {
            k: SUBSTITUTE if isinstance(k, str) and sensitive.search(k) else redact(v, sensitive)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v, sensitive) for v in value]
    return value


__all__ = ["SUBSTITUTE", "pattern", "redact"]
