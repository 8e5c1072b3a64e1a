"""Opaque pagination cursors: an offset plus a fingerprint of the list they page through."""

from __future__ import annotations

import base64
import binascii
import json

from .jsonrpc import INVALID_PARAMS, ProtocolError


def encode(offset: int, kind: str) -> str:
    raw = json.dumps([kind, offset], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str | None, kind: str) -> int:
    """Offset for ``cursor`` (0 when absent); a cursor from elsewhere is -32602."""
    if cursor is None:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        got_kind, offset = json.loads(raw)
    except (ValueError, TypeError, binascii.Error):
        raise ProtocolError(INVALID_PARAMS, "Invalid cursor") from None
    if got_kind != kind or not isinstance(offset, int) or offset < 0:
        raise ProtocolError(INVALID_PARAMS, "Invalid cursor")
    return offset
