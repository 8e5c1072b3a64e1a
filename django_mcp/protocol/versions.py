"""Protocol revisions, their eras, and version negotiation."""

from __future__ import annotations

from typing import Final

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

HANDSHAKE_REVISIONS: Final[tuple[str, ...]] = tuple(HANDSHAKE_PROTOCOL_VERSIONS)
STATELESS_REVISIONS: Final[tuple[str, ...]] = tuple(MODERN_PROTOCOL_VERSIONS)
ALL_REVISIONS: Final[tuple[str, ...]] = HANDSHAKE_REVISIONS + STATELESS_REVISIONS
LATEST_HANDSHAKE: Final[str] = HANDSHAKE_REVISIONS[-1]
LATEST: Final[str] = ALL_REVISIONS[-1]
#: The revision assumed for a handshake-era HTTP request without ``MCP-Protocol-Version``
#: (the 2025-06-18 transport spec says to assume 2025-03-26).
DEFAULT_HTTP_REVISION: Final[str] = "2025-03-26"
#: JSON-RPC batches exist in exactly one revision.
BATCH_REVISIONS: Final[frozenset[str]] = frozenset({"2025-03-26"})


def negotiate(requested: object) -> str:
    """Answer a client's ``initialize`` revision: its own when supported, else the newest."""
    if isinstance(requested, str) and requested in HANDSHAKE_REVISIONS:
        return requested
    return LATEST_HANDSHAKE


def is_stateless(revision: str) -> bool:
    return revision in STATELESS_REVISIONS


def at_least(revision: str, minimum: str) -> bool:
    """True when ``revision`` is a known revision no older than ``minimum``."""
    if revision not in ALL_REVISIONS:
        return False
    return ALL_REVISIONS.index(revision) >= ALL_REVISIONS.index(minimum)
