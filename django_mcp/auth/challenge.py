"""The refusal ``django_mcp.auth`` raises at a transport: a ``Refused``, answered as every other one."""

from __future__ import annotations

from ..exceptions import Refused
from ..protocol import jsonrpc

_LABELS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden"}


class Challenge(Refused):
    """400/401/403 with a ``WWW-Authenticate: Bearer`` header (RFC 6750), the same refusal for every caller.

    ``description``, ``error`` (``invalid_token``, ``insufficient_scope``...) and ``scope`` are the
    header's; the JSON-RPC error's ``data`` says them too (``scope`` only for ``insufficient_scope``).
    ``auth`` never imports a transport: ``to_wire`` makes it HTTP.
    """

    code = jsonrpc.INVALID_REQUEST

    def __init__(self, status: int, description: str, header: str, error: str | None = None, scope: str = "") -> None:
        data: dict[str, str] | None = {"error": error} if error else None
        if data is not None and scope:  # the scopes to step up to, where no header reaches: a batch item, a task
            data["scope"] = scope
        super().__init__(
            f"{_LABELS[status]}: {description}",
            data,
            status=status,
            headers=[(b"www-authenticate", header.encode("latin-1", "replace"))],
        )
        self.description, self.header, self.error = description, header, error


__all__ = ["Challenge"]
