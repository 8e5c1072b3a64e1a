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


#: Keys naming the other member of a pair: ``{"name": "password", "value": "…"}``.
_NAME_KEYS = ("name", "key", "field", "header", "param", "parameter")
_NAME_KEY_SET = frozenset(_NAME_KEYS)
_VALUE_KEYS = ("value", "val", "content", "secret")
#: Values copied as they are: nothing inside them to mask.
_SCALARS = frozenset({str, int, float, bool, type(None)})

#: Whether each key seen is sensitive, for the pattern it was judged by: the same argument names come on
#: every call, and a dict lookup is cheaper than a search. Bounded: clients choose the keys.
_verdicts: tuple[re.Pattern[str] | None, dict[str, bool]] = (None, {})
MAX_VERDICTS = 1024


def _sensitive_key(key: str, sensitive: re.Pattern[str]) -> bool:
    global _verdicts
    judged, verdicts = _verdicts
    if judged is not sensitive:
        verdicts = {}
        _verdicts = (sensitive, verdicts)
    verdict = verdicts.get(key)
    if verdict is None:
        verdict = sensitive.search(key) is not None
        if len(verdicts) < MAX_VERDICTS:
            verdicts[key] = verdict
    return verdict


def redact(value: Any, sensitive: re.Pattern[str] | None) -> Any:
    """A copy of the JSON value ``value`` with the values of sensitive keys masked (None: a plain copy).

    Beyond ``{"password": …}``, the pair forms forms and headers take are masked too:
    ``{"name": "password", "value": …}`` and ``["password", …]``. What no key names cannot be
    caught: a secret in free text, or under a key that says nothing (``{"q": "my password is …"}``).
    """
    if isinstance(value, dict):
        if sensitive is None:
            return {k: v if type(v) in _SCALARS else redact(v, None) for k, v in value.items()}
        pair = False
        if not _NAME_KEY_SET.isdisjoint(value):
            named = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
            pair = named is not None and sensitive.search(named) is not None
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if (isinstance(k, str) and _sensitive_key(k, sensitive)) or (pair and k in _VALUE_KEYS):
                out[k] = SUBSTITUTE
            else:
                out[k] = v if type(v) in _SCALARS else redact(v, sensitive)
        return out
    if isinstance(value, list):
        if sensitive is not None and len(value) == 2 and isinstance(value[0], str) and sensitive.search(value[0]):
            return [value[0], SUBSTITUTE]
        return [v if type(v) in _SCALARS else redact(v, sensitive) for v in value]
    return value


__all__ = ["SUBSTITUTE", "pattern", "redact"]
