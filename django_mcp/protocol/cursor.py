"""Opaque pagination cursors: an offset plus a fingerprint of the list they page through."""

from __future__ import annotations

import base64
import binascii
import json

from .jsonrpc import INVALID_PARAMS, ProtocolError

#: The largest offset a cursor may carry: far past any real list, and every offset up to it (plus a page)
#: still fits a database's 64-bit ``OFFSET``/``LIMIT``, so a forged huge offset never reaches a query.
MAX_OFFSET = 2**53 - 1
#: Longer than any cursor ``encode`` makes; a longer one is refused before it is decoded.
MAX_LENGTH = 256


def encode(offset: int, kind: str) -> str:
    raw = json.dumps([kind, offset], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: object, kind: str) -> int:
    """Offset for ``cursor`` (0 when absent); anything this module did not make for ``kind`` is -32602.

    The value comes straight from the client: it may be of any JSON type, any size, any shape.
    """
    if cursor is None:
        return 0
    if not isinstance(cursor, str) or len(cursor) > MAX_LENGTH:
        raise invalid()
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        got = json.loads(raw)
    except (ValueError, TypeError, binascii.Error, RecursionError):
        raise invalid() from None
    if not isinstance(got, list) or len(got) != 2:
        raise invalid()
    got_kind, offset = got
    # ``type() is int``: not a bool (``true`` is no offset), not a float.
    if got_kind != kind or type(offset) is not int or not 0 <= offset <= MAX_OFFSET:
        raise invalid()
    return offset


def invalid() -> ProtocolError:
    return ProtocolError(INVALID_PARAMS, "Invalid cursor")
