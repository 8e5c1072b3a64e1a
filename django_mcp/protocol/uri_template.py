"""RFC 6570 level 1 URI templates (``{var}`` simple string expansion) and their matching."""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

_VAR = re.compile(r"\{([A-Za-z0-9_]+)\}")


class URITemplate:
    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = _VAR.findall(template)
        pattern, pos = [], 0
        for m in _VAR.finditer(template):
            pattern.append(re.escape(template[pos : m.start()]))
            pattern.append(f"(?P<{m.group(1)}>[^/?#]+)")
            pos = m.end()
        pattern.append(re.escape(template[pos:]))
        self._regex = re.compile("".join(pattern) + r"\Z")

    def match(self, uri: str) -> dict[str, str] | None:
        m = self._regex.match(uri)
        if m is None:
            return None
        return {k: unquote(v) for k, v in m.groupdict().items()}

    def expand(self, **values: object) -> str:
        """Level 1 expansion: values are percent-encoded except unreserved characters."""
        return _VAR.sub(lambda m: quote(str(values[m.group(1)]), safe="-._~"), self.template)

    @staticmethod
    def is_template(uri: str) -> bool:
        return bool(_VAR.search(uri))
