"""What the operations commands accept on their command line, checked before any query: bounded, parsed, or a
``CommandError`` that names the option (never a traceback, never a huge value echoed back)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.core.management.base import CommandError
from django.db.models import Model, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

M = TypeVar("M", bound=Model)

#: Characters of a value shown back in an error message.
SHOWN = 60
#: The shortest id prefix the commands accept: 8 characters tell sessions and tasks apart (the admin shows as many).
MIN_PREFIX = 8
#: Characters of an id the commands print: enough to name a session or task again, too few to use it.
SHOWN_ID = 16
_AGO = re.compile(r"^(\d{1,9})([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def shown(value: str) -> str:
    """``value`` as an error message quotes it: repr, at most ``SHOWN`` characters."""
    return repr(value if len(value) <= SHOWN else value[:SHOWN] + "…")


def bounded(option: str, value: str | None, limit: int) -> str | None:
    """``value`` when it fits the database column it is compared with, else a ``CommandError``."""
    if value is not None and len(value) > limit:
        raise CommandError(f"{option}: at most {limit} characters (got {len(value)})")
    return value


def moment(option: str, value: str | None) -> datetime | None:
    """``--since``/``--until``: an ISO 8601 date or date-time (the current time zone when it names none), or an
    age such as ``90m``, ``24h``, ``7d`` (that long before now)."""
    if value is None:
        return None
    text = value.strip()
    ago = _AGO.match(text.lower())
    try:
        if ago:
            return timezone.now() - timedelta(seconds=int(ago.group(1)) * _UNITS[ago.group(2)])
        when = parse_datetime(text) if len(text) > 10 else None
        if when is None and len(text) <= 10:
            day = parse_date(text)
            when = datetime(day.year, day.month, day.day) if day else None
        if when is not None and timezone.is_naive(when):
            when = timezone.make_aware(when)
    except (ValueError, OverflowError):
        when = None
    if when is None:
        raise CommandError(
            f"{option} {shown(value)}: give an ISO 8601 date or date-time (2026-11-28, 2026-11-28T14:00:00+00:00) "
            "or an age (90m, 24h, 7d)"
        )
    return when


def by_prefix(queryset: QuerySet[M], prefix: str, what: str) -> M:
    """The one row of ``queryset`` whose id begins with ``prefix``; a ``CommandError`` for none or several."""
    if len(prefix) < MIN_PREFIX:
        raise CommandError(f"{what} {shown(prefix)}: give at least {MIN_PREFIX} characters of its id")
    if len(prefix) > 64:
        raise CommandError(f"{what} {shown(prefix)}: no {what} id is longer than 64 characters")
    found: list[M] = list(queryset.filter(pk__startswith=prefix)[:2])
    if not found:
        raise CommandError(f"No {what} whose id begins with {shown(prefix)}")
    if len(found) > 1:
        raise CommandError(f"Several {what}s have ids beginning with {shown(prefix)}: give more characters")
    return found[0]


def add_selection(parser: Any, what: str, state: str) -> None:
    """The arguments of a command that acts on ``what`` (sessions, tasks): id prefixes, or all of a user or client.

    ``state`` says which rows ``--user``/``--client`` reach ("open", "active")."""
    parser.add_argument(
        "prefixes",
        nargs="*",
        metavar="ID_PREFIX",
        help=f"{MIN_PREFIX} or more first characters of an id (after -- when one begins with -).",
    )
    parser.add_argument("--user", metavar="USERNAME", help=f"Every {state} {what} of this user.")
    parser.add_argument("--client", metavar="CLIENT_ID", help=f"Every {state} {what} through this OAuth client.")


def short_id(value: Any) -> str:
    return str(value)[:SHOWN_ID]
