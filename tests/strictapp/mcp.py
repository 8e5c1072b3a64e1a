"""A site where every declaration names who may use it: what ``REQUIRE_ACCESS_RULES`` lets start."""

from __future__ import annotations

from django_mcp import public, site


@site.tool(check=public, title="Ping", annotations={"readOnlyHint": True})
def ping() -> str:
    """Anyone who may connect, on purpose."""
    return "pong"


@site.tool(permissions=["auth.view_user"], title="Count accounts", annotations={"readOnlyHint": True})
def count_accounts() -> int:
    """Holders of auth.view_user only."""
    from django.contrib.auth import get_user_model

    return int(get_user_model().objects.count())


@site.resource("strict://motd", scopes=["mcp"])
def motd() -> str:
    """Behind the mcp scope."""
    return "hello"


@site.prompt(check=public)
def hello() -> str:
    """Anyone, on purpose."""
    return "Say hello."
