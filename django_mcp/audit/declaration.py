"""What a tool, resource or prompt declares about its audit record (``@site.tool(audit=...)``).

The declaration lives with the object, like its scopes; the audit middleware
(``django_mcp.audit.middleware``) reads it on every call. Kept apart from both so
that declarations need not import the middleware, nor the middleware every kind of
declaration.
"""

from __future__ import annotations

from typing import Any, Literal

#: ``"redacted"`` (the default): arguments stored with sensitive keys masked; ``"hidden"``: the call is
#: recorded without its arguments; ``"full"``: arguments as sent and the result; ``False``: no record.
AuditPolicy = Literal["redacted", "hidden", "full", False]

REDACTED: AuditPolicy = "redacted"
HIDDEN: AuditPolicy = "hidden"
FULL: AuditPolicy = "full"
POLICIES: tuple[AuditPolicy, ...] = (REDACTED, HIDDEN, FULL, False)


def check_policy(value: Any, kind: str, name: str) -> AuditPolicy:
    """``value`` if it is a policy, else ``TypeError`` at registration (as ``task=`` is checked)."""
    if value is False or (isinstance(value, str) and value in POLICIES):
        return value
    raise TypeError(f"{kind} {name!r}: audit must be 'redacted', 'hidden', 'full' or False, not {value!r}")


__all__ = ["FULL", "HIDDEN", "POLICIES", "REDACTED", "AuditPolicy", "check_policy"]
