"""Extra declarations for the OAuth server only: a scoped tool, prompt and resource; a permissioned tool."""

from __future__ import annotations

from django_mcp import site


@site.tool(scopes=["secret:read"])
def secret() -> str:
    """Tell the secret (needs the secret:read scope)."""
    return "the secret is 42"


@site.tool(permissions=["auth.view_user"])
def count_users() -> int:
    """Count the users (needs the Django permission auth.view_user)."""
    from django.contrib.auth import get_user_model

    return int(get_user_model().objects.count())


@site.prompt(scopes=["secret:read"])
def secret_prompt() -> str:
    """A prompt behind the secret:read scope."""
    return "Tell me the secret."


@site.resource("secret://vault", scopes=["secret:read"])
def vault() -> str:
    """A resource behind the secret:read scope."""
    return "vault contents"


@site.tool(permissions=["auth.add_group"])
def create_group(name: str) -> str:
    """A write (needs auth.add_group): what an unapproved machine token must never reach."""
    from django.contrib.auth.models import Group

    return Group.objects.create(name=name).name
