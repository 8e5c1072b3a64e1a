"""How the operations commands print rows: an aligned table, CSV or JSON, each safe whatever the rows hold.

What they print comes partly from callers (tool names, arguments, client names, user names), so:

- every cell is bounded (``MAX_CELL`` characters; a longer value ends with an ellipsis);
- a table replaces control characters (a terminal escape sequence in a tool name) with ``\\xNN``/``\\uNNNN``;
- CSV is Python's ``csv`` quoting, and a text cell beginning with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
  return gets a leading ``'``, so a spreadsheet shows it as text instead of running it as a formula;
- JSON is ``json.dumps`` (a value it cannot encode becomes its ``str``): one array, or one object per line.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, Protocol

from django.core.management.base import CommandError
from django.utils.timezone import is_aware

FORMATS = ("table", "csv", "json", "jsonl")
#: Characters kept of a cell (CSV, JSON text) before it is cut with an ellipsis.
MAX_CELL = 4000
#: Characters of a table cell.
TABLE_CELL = 60
#: What makes a spreadsheet read a cell as a formula (OWASP's list).
_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def cut(text: str, limit: int = MAX_CELL) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain(value: Any) -> Any:
    """A value JSON can carry: datetimes as ISO 8601 (UTC), anything else JSON lacks as its ``str``, bounded."""
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat() if is_aware(value) else value.isoformat()
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return cut(value)
    if isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
        return value if len(text) <= MAX_CELL else cut(text)
    return cut(str(value))


def text(value: Any) -> str:
    """A cell as text (CSV, table): JSON objects as compact JSON, None as empty."""
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def spreadsheet_safe(cell: str) -> str:
    """``cell`` with a leading ``'`` when a spreadsheet would run it as a formula (CSV injection)."""
    return "'" + cell if cell.startswith(_FORMULA) else cell


def csv_cell(value: Any) -> str:
    """A CSV cell: text made spreadsheet-safe; numbers, dates and JSON as they are (they cannot start a formula
    a spreadsheet runs: a negative number is a number)."""
    return spreadsheet_safe(text(value)) if isinstance(value, str) else text(value)


def printable(cell: str) -> str:
    """``cell`` with control and bidirectional characters shown as escapes: nothing reaches the terminal raw."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), cell)


class Out(Protocol):
    """A text stream: ``sys.stdout``, ``io.StringIO``, a command's ``self.stdout``."""

    def write(self, msg: str, /) -> Any: ...


def write(out: Out, rows: Iterable[dict[str, Any]], columns: Sequence[str], fmt: str) -> int:
    """Print ``rows`` (dicts keyed by ``columns``) as ``fmt``; the number of rows printed."""
    if fmt not in FORMATS:
        raise CommandError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    n = 0
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([csv_cell(row.get(c)) for c in columns])
            n += 1
        return n
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps({c: plain(row.get(c)) for c in columns}, default=str) + "\n")
            n += 1
        return n
    if fmt == "json":  # every write ends a line: Django's OutputWrapper would add one
        out.write("[\n")
        for row in rows:
            out.write((", " if n else "  ") + json.dumps({c: plain(row.get(c)) for c in columns}, default=str) + "\n")
            n += 1
        out.write("]\n")
        return n
    table = [[printable(cut(text(row.get(c)), TABLE_CELL)) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in table)]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip() + "\n")
    for r in table:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() + "\n")
    return len(table)


def add_format_argument(parser: Any, default: str = "table") -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=default,
        help="table (aligned, for people), csv (spreadsheet-safe), json (one array) or jsonl (one object a line).",
    )
