"""System checks for ``AUTH = "oauth"``: every django-oauth-toolkit setting that contradicts MCP.

Ids ``django_mcp.E030``-``E035`` and ``W030``-``W031``, each listed in docs/checks.md.
They run only when ``DJANGO_MCP["AUTH"]`` is ``"oauth"``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register

from ..conf import mcp_settings


@register(Tags.compatibility)
def check_oauth(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    if mcp_settings.AUTH != "oauth":
        return []
    if "oauth2_provider" not in settings.INSTALLED_APPS:
        return [
            Error(
                "DJANGO_MCP['AUTH'] is 'oauth' but 'oauth2_provider' is not in INSTALLED_APPS.",
                hint="Add 'oauth2_provider' (django-oauth-toolkit) to INSTALLED_APPS.",
                id="django_mcp.E030",
            )
        ]
    from oauth2_provider.settings import oauth2_settings

    from . import REQUIRED

    errors: list[Any] = []
    hint = "Build OAUTH2_PROVIDER with django_mcp.auth.oauth2_provider_settings() and do not override this key."
    for key, wanted in REQUIRED.items():
        value = getattr(oauth2_settings, key)
        if value != wanted and not (key == "PKCE_REQUIRED" and callable(value)):
            errors.append(
                Error(f"OAUTH2_PROVIDER[{key!r}] is {value!r}; MCP needs {wanted!r}.", hint=hint, id="django_mcp.E031")
            )
    schemes = set(oauth2_settings.ALLOWED_REDIRECT_URI_SCHEMES) - {"http", "https"}
    if schemes:
        errors.append(
            Error(
                f"OAUTH2_PROVIDER['ALLOWED_REDIRECT_URI_SCHEMES'] allows {sorted(schemes)}; "
                "MCP clients redirect to https or loopback http only.",
                hint='Set it to ["http", "https"] (http is limited to loopback hosts by the validator).',
                id="django_mcp.E032",
            )
        )
    from .scopes import MCPScopes
    from .validators import MCPOAuth2Validator

    backend = oauth2_settings.SCOPES_BACKEND_CLASS
    if not (isinstance(backend, type) and issubclass(backend, MCPScopes)):
        errors.append(
            Warning(
                "OAUTH2_PROVIDER['SCOPES_BACKEND_CLASS'] is not django_mcp.auth.scopes.MCPScopes: the scopes "
                "declared by tools, resources and prompts are not offered, described or advertised.",
                hint="Use django_mcp.auth.scopes.MCPScopes or a subclass.",
                id="django_mcp.W030",
            )
        )
    validator = oauth2_settings.OAUTH2_VALIDATOR_CLASS
    if not (isinstance(validator, type) and issubclass(validator, MCPOAuth2Validator)):
        errors.append(
            Warning(
                "OAUTH2_PROVIDER['OAUTH2_VALIDATOR_CLASS'] is not django_mcp.auth.validators.MCPOAuth2Validator: "
                "redirect URIs are not limited to https and loopback http at authorization time.",
                hint="Subclass django_mcp.auth.validators.MCPOAuth2Validator.",
                id="django_mcp.W031",
            )
        )
    # DJANGO_MCP["SCOPES"] (E033) is checked with every other setting, by django_mcp.checks.check_settings.
    errors.extend(_check_urls())
    return errors


def _check_urls() -> list[Any]:
    from django.urls import NoReverseMatch, reverse

    missing = []
    for name in ("oauth-resource-metadata", "oauth-resource-metadata-path", "oauth-server-metadata", "authorize"):
        try:
            reverse(f"oauth2_provider:{name}", kwargs={"resource_path": "x"} if name.endswith("-path") else None)
        except NoReverseMatch:
            missing.append(name)
    if not missing:
        return []
    return [
        Error(
            f"The OAuth URLs are not routed (no {', '.join(missing)}): clients cannot discover or authorize.",
            hint='Add path("", include("django_mcp.urls")) to ROOT_URLCONF (at the root: well-known URLs must be).',
            id="django_mcp.E034",
        )
    ]
