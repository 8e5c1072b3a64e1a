"""The one exception ``django_mcp.auth`` raises at a transport: no imports, so any transport can catch it."""

from __future__ import annotations


class Challenge(Exception):
    """A refusal at the HTTP level: 400/401/403 with a ``WWW-Authenticate: Bearer`` header.

    The transport turns it into its own answer; ``auth`` never imports a transport.
    """

    def __init__(self, status: int, description: str, header: str, error: str | None = None) -> None:
        super().__init__(description)
        self.status, self.description, self.header, self.error = status, description, header, error


__all__ = ["Challenge"]
