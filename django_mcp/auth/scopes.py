"""The site's OAuth scopes, served to django-oauth-toolkit as its scopes backend.

Scopes come from two places: ``DJANGO_MCP["SCOPES"]`` (scope -> human
description) and the ``scopes`` each tool, resource, template and prompt of the
default site declares. DOT's consent page, its RFC 8414 metadata and the RFC 9728
``scopes_supported`` all read this backend, so one declaration shows up everywhere.
"""

from __future__ import annotations

from typing import Any, cast

from django.apps import apps
from oauth2_provider.scopes import BaseScopes

from ..conf import mcp_settings
from .clients import allowed_scopes


def declared_scopes(server: Any = None) -> set[str]:
    """Every scope a tool, resource, resource template or prompt of ``server`` (default: the site) needs."""
    if server is None:  # the app registry has it: the server is a layer above auth
        server = cast(Any, apps.get_app_config("django_mcp")).site
    found: set[str] = set()
    for registry in (server.tools, server.resources, server.templates, server.prompts):
        for obj in registry.values():
            found.update(obj.scopes)
    return found


def all_scopes() -> dict[str, str]:
    """Scope -> description: the ``SCOPES`` setting, plus declared scopes described by their name."""
    described: dict[str, str] = dict(mcp_settings.SCOPES)
    for scope in sorted(declared_scopes()):
        described.setdefault(scope, scope)
    return described


def available_scopes() -> list[str]:
    return list(all_scopes())


class MCPScopes(BaseScopes):  # type: ignore[misc]  # DOT ships no type hints
    """``OAUTH2_PROVIDER["SCOPES_BACKEND_CLASS"]`` for an MCP site.

    A client asking for no scope gets all it may request: the site's scopes, narrowed
    to the client's ``allowed_scopes`` when staff set them; the user still sees each on
    the consent page.
    """

    def get_all_scopes(self) -> dict[str, str]:
        return all_scopes()

    def get_available_scopes(
        self, application: Any = None, request: Any = None, *args: Any, **kwargs: Any
    ) -> list[str]:
        return _for_client(application)

    def get_default_scopes(self, application: Any = None, request: Any = None, *args: Any, **kwargs: Any) -> list[str]:
        return _for_client(application)


def _for_client(application: Any) -> list[str]:
    scopes = available_scopes()
    if application is None:
        return scopes

    allowed = allowed_scopes(application)
    return scopes if allowed is None else [s for s in scopes if s in allowed]


__all__ = ["MCPScopes", "all_scopes", "available_scopes", "declared_scopes"]
