"""A backend this request needs (the channel layer, the event store) is down or saturated.

Raised by the hub and the event store instead of the backend's own exception, so the
transport answers ``503`` with ``Retry-After`` (never a 500) and callers that can do
without the backend catch one class and degrade.
"""

from __future__ import annotations


class Unavailable(Exception):
    """The request cannot be served now; the client may retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        if retry_after is None:
            from .conf import mcp_settings

            retry_after = int(mcp_settings.LAYER_RETRY_AFTER)
        self.retry_after = retry_after
