"""Per-user objects for the JWT tests: each user's teams (Django groups), visible to their members only."""

from __future__ import annotations

from django.contrib.auth.models import Group

from django_mcp import Context, ToolError, site


@site.tool()
def my_teams(ctx: Context) -> list[str]:
    """The teams (Django groups) the caller belongs to."""
    return sorted(ctx.user.groups.values_list("name", flat=True))


@site.tool()
def team_members(ctx: Context, team: str) -> list[str]:
    """The members of one of the caller's teams; another team is not found."""
    group = Group.objects.filter(name=team, user=ctx.user).first()
    if group is None:
        raise ToolError(f"No team {team!r}.")
    return sorted(group.user_set.values_list("username", flat=True))
