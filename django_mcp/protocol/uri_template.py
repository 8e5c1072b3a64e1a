"""RFC 6570 URI templates: ``{var}`` (level 1) and ``{+var}`` (level 2 reserved expansion), and their matching.

Matching decodes percent-escapes, so the checks run on the decoded value: a simple
``{var}`` is one path segment and must not become more than one after decoding
(``..%2F..%2Fetc`` is refused, not handed to the handler as ``../../etc``), and no
value may carry a dot-segment or a NUL. A refused value is simply no match, which
the server answers exactly like an unknown URI. A raw ``?`` or ``#`` never matches
a variable: it starts the URI's query or fragment.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

_VAR = re.compile(r"\{(\+?)([A-Za-z0-9_]+)\}")
#: What each operator matches before decoding: a simple value stops at "/", a reserved one does not.
_MATCH = {"": "[^/?#]+", "+": "[^?#]+"}
#: Characters ``{+var}`` expansion leaves as they are: RFC 3986 reserved and unreserved, except "?" and "#",
#: which would start a query or fragment and so never match back.
_RESERVED_SAFE = ":/[]@!$&'()*+,;=-._~"
_DOT_SEGMENTS = frozenset({".", ".."})


def _simple_ok(value: str) -> bool:
    return "/" not in value and "\\" not in value and "\x00" not in value and value not in _DOT_SEGMENTS


def _reserved_ok(value: str) -> bool:
    if "\x00" in value or "\\" in value:
        return False
    return not any(segment in _DOT_SEGMENTS for segment in value.split("/"))


class URITemplate:
    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = [m.group(2) for m in _VAR.finditer(template)]
        self.reserved: frozenset[str] = frozenset(m.group(2) for m in _VAR.finditer(template) if m.group(1))
        pattern, pos = [], 0
        for m in _VAR.finditer(template):
            pattern.append(re.escape(template[pos : m.start()]))
            pattern.append(f"(?P<{m.group(2)}>{_MATCH[m.group(1)]})")
            pos = m.end()
        pattern.append(re.escape(template[pos:]))
        self._regex = re.compile("".join(pattern) + r"\Z")

    def match(self, uri: str) -> dict[str, str] | None:
        """The decoded variables, or None when ``uri`` does not match or a value is refused."""
        m = self._regex.match(uri)
        if m is None:
            return None
        values: dict[str, str] = {}
        for name, raw in m.groupdict().items():
            value = unquote(raw)
            if not (_reserved_ok(value) if name in self.reserved else _simple_ok(value)):
                return None
            values[name] = value
        return values

    def expand(self, **values: object) -> str:
        """Expansion: ``{var}`` percent-encodes all but unreserved characters, ``{+var}`` keeps reserved ones."""

        def one(m: re.Match[str]) -> str:
            safe = _RESERVED_SAFE if m.group(1) else "-._~"
            return quote(str(values[m.group(2)]), safe=safe)

        return _VAR.sub(one, self.template)

    @staticmethod
    def is_template(uri: str) -> bool:
        return bool(_VAR.search(uri))
