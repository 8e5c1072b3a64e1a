"""Strict mode (``REQUIRE_ACCESS_RULES``): a site refuses to start while something it serves names no access rule.

By default a declaration with no ``scopes=``, ``permissions=`` or ``check=`` is open to every caller
who may connect (a token's reach, or development mode): secure by default only as far as
authentication goes. Strict mode makes that a decision: every tool, resource, resource template and
prompt must declare a rule, or ``check=public`` (``from django_mcp import public``) to say "anyone"
on purpose. Rules that come from elsewhere count: a ``ModelResource``'s ``view_`` permission, a DRF
view's permission classes other than ``AllowAny``.

Enforced twice: the system check ``django_mcp.E182`` (``manage.py check``, ``runserver``, ``migrate``,
``mcp_stdio``...) and ``mcp_urlpatterns()`` (so ``get_asgi_application()``), which raises
``ImproperlyConfigured``: daphne and uvicorn run no system checks, and refuse to start as well.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.checks import Error
from django.core.exceptions import ImproperlyConfigured

from .conf import mcp_settings
from .server import MCPServer
from .skills import SkillFiles, SkillManifest
from .switches import LABELS, registered

#: A skill is named once, by its path: its SKILL.md and its files carry the skill's rules.
_LABELS = {**LABELS, "skill": "Skill"}


def offenders(servers: Iterable[MCPServer]) -> list[tuple[MCPServer, str, str]]:
    """``(server, kind, name)`` of each declaration that names no access rule."""
    found: list[tuple[MCPServer, str, str]] = []
    for server in servers:
        for (kind, name), obj in registered([server]):
            if isinstance(obj, SkillFiles) or obj.declares_access():
                continue
            if isinstance(obj, SkillManifest):
                kind, name = "skill", obj.skill.path
            found.append((server, kind, name))
    return found


_WHERE = {
    "tool": "@site.tool(...)",
    "prompt": "@site.prompt(...)",
    "resource": '@site.resource("...", ...)',
    "template": '@site.resource("...", ...)',
    "skill": 'site.skill("<path>", folder=...) (a skill found in an app folder is declared so to give it rules)',
}


def _hint(kind: str) -> str:
    return (
        f'Give {_WHERE[kind]} permissions=["app.codename"], scopes=["..."] or check=a_callable '
        "(register_view, register_drf and TemplatePrompt take the same); "
        "check=public (from django_mcp import public) opens it to every caller on purpose."
    )


def errors(servers: Iterable[MCPServer]) -> list[Any]:
    """``django_mcp.E182``, one per offender, with what to write; none unless ``REQUIRE_ACCESS_RULES``."""
    if not mcp_settings.REQUIRE_ACCESS_RULES:
        return []
    return [
        Error(
            f"{_LABELS[kind]} {name!r} declares no access rule (scopes=, permissions= or check=), and "
            "REQUIRE_ACCESS_RULES is on.",
            hint=_hint(kind),
            obj=f"MCP server {server.name!r}",
            id="django_mcp.E182",
        )
        for server, kind, name in offenders(servers)
    ]


def ensure(servers: Iterable[MCPServer]) -> None:
    """Raise ``ImproperlyConfigured`` naming every offender when ``REQUIRE_ACCESS_RULES`` is on (ASGI startup)."""
    found = errors(servers)
    if found:
        listed = "\n".join(f"  {e.obj}: {e.msg}" for e in found)
        raise ImproperlyConfigured(
            f"REQUIRE_ACCESS_RULES is on and {len(found)} declaration(s) name no access rule "
            f"(django_mcp.E182):\n{listed}\nSee docs/operations.md#strict-mode."
        )


__all__ = ["ensure", "errors", "offenders"]
