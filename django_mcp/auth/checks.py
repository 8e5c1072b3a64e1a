"""System checks for ``AUTH = "oauth"``: every django-oauth-toolkit setting that contradicts MCP.

Ids ``django_mcp.E030``-``E036``, ``W030``-``W031``, ``W260``-``W261``, ``E291``-``E292`` and
``W280``-``W281``, ``W295``, each listed in docs/checks.md.
They run only when ``DJANGO_MCP["AUTH"]`` is ``"oauth"``. ``E221`` and ``W220`` check the
project's own authentication classes (``AUTHENTICATION_CLASSES``) whatever ``AUTH`` is.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.core.exceptions import FieldDoesNotExist
from django.shortcuts import resolve_url
from django.template import TemplateDoesNotExist, TemplateSyntaxError
from django.template.loader import get_template
from django.urls import NoReverseMatch, Resolver404, resolve, reverse
from django.utils.module_loading import import_string

from ..conf import mcp_settings
from . import REQUIRED


@register(Tags.compatibility)
def check_authentication_classes(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``E221``: an entry of ``AUTHENTICATION_CLASSES`` without ``authenticate``; ``W220``: set without OAuth.

    An entry that cannot be imported is ``E220`` (``django_mcp.checks.check_settings``).
    """
    classes = getattr(settings, "DJANGO_MCP", {}).get("AUTHENTICATION_CLASSES") or []
    if not isinstance(classes, (list, tuple)):
        return []  # E220 reports the type
    errors: list[Any] = []
    for entry in classes:
        try:
            cls = import_string(entry) if isinstance(entry, str) else entry
        except Exception:  # noqa: BLE001 - E220 reports an entry that cannot be imported
            continue
        if not isinstance(cls, type) or not callable(getattr(cls, "authenticate", None)):
            errors.append(
                Error(
                    f"DJANGO_MCP['AUTHENTICATION_CLASSES'] lists {entry!r}, which is not a class with an "
                    "authenticate(request) method.",
                    hint="List authentication classes such as rest_framework.authentication.TokenAuthentication: "
                    "authenticate(request) returns (user, auth) or None, or raises AuthenticationFailed.",
                    id="django_mcp.E221",
                )
            )
    if classes and mcp_settings.AUTH != "oauth":
        errors.append(
            Warning(
                "DJANGO_MCP['AUTHENTICATION_CLASSES'] is set but AUTH is not 'oauth': the endpoint checks no "
                "token, so the classes are never used.",
                hint="Set DJANGO_MCP['AUTH'] = 'oauth' (docs/auth.md, \"Your project's own API tokens\").",
                id="django_mcp.W220",
            )
        )
    return errors


#: Longest ``TOKEN_CACHE_MAX_AGE`` (seconds) without ``W295``: a revocation whose broadcast is lost lasts that long.
TOKEN_CACHE_WARN_AGE = 300


@register(Tags.security)
def check_token_cache(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``W295``: ``TOKEN_CACHE_MAX_AGE`` so long that a lost revocation broadcast would leave a token usable for it.

    A value of the wrong type is ``E295`` (``django_mcp.checks.check_settings``).
    """
    age = getattr(settings, "DJANGO_MCP", {}).get("TOKEN_CACHE_MAX_AGE")
    if mcp_settings.AUTH != "oauth" or not isinstance(age, (int, float)) or age <= TOKEN_CACHE_WARN_AGE:
        return []
    return [
        Warning(
            f"DJANGO_MCP['TOKEN_CACHE_MAX_AGE'] is {age} seconds: a revocation whose broadcast is lost (the channel "
            "layer failing at the sender) leaves the token usable on a worker that long.",
            hint=f"Keep it at most {TOKEN_CACHE_WARN_AGE} (the default is 10); each worker then checks a token "
            "in the database once per that many seconds.",
            id="django_mcp.W295",
        )
    ]


@register(Tags.compatibility)
def check_scope_groups(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``W260``: ``SCOPE_GROUPS`` names a scope the site does not have; ``W261``: set without OAuth.

    A value of the wrong shape is ``E260`` (``django_mcp.checks.check_settings``).
    """
    rules = getattr(settings, "DJANGO_MCP", {}).get("SCOPE_GROUPS") or {}
    if not isinstance(rules, dict) or not rules:
        return []
    if mcp_settings.AUTH != "oauth":
        return [
            Warning(
                "DJANGO_MCP['SCOPE_GROUPS'] is set but AUTH is not 'oauth': no token is issued, so no scope is "
                "reserved to anyone.",
                hint="Set DJANGO_MCP['AUTH'] = 'oauth' (docs/auth.md, \"Scopes reserved to groups\").",
                id="django_mcp.W261",
            )
        ]
    from .scopes import all_scopes  # reason: the scopes backend imports DOT, installed with OAuth on

    known = all_scopes()
    return [
        Warning(
            f"DJANGO_MCP['SCOPE_GROUPS'] reserves {scope!r}, which is not a scope of this site: the rule "
            "never applies.",
            hint=f"Use one of {sorted(known)}, or add the scope to DJANGO_MCP['SCOPES'].",
            id="django_mcp.W260",
        )
        for scope in rules
        if isinstance(scope, str) and scope not in known
    ]


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
    from oauth2_provider.settings import oauth2_settings  # reason: DOT loads only once OAuth is on

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
    from .scopes import MCPScopes  # reason: auth.scopes imports DOT, loaded only once OAuth is on
    from .validators import MCPOAuth2Validator  # reason: auth.validators needs DOT's models (OAuth on)

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


@register(Tags.urls)
def check_login(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``E035``/``E036``: the page the consent step redirects anonymous users to must exist.

    django-oauth-toolkit's authorization view sends a signed-out user to ``settings.LOGIN_URL``.
    When that resolves to nothing the first sign-in is a 404; when it is Django's ``LoginView``
    without its template, a 500 (``TemplateDoesNotExist: registration/login.html``). A LOGIN_URL on
    another host (single sign-on), or a view of your own, is not checked further.
    """
    if mcp_settings.AUTH != "oauth" or "oauth2_provider" not in settings.INSTALLED_APPS:
        return []

    login_url = settings.LOGIN_URL
    route_hint = (
        'Route it: path("accounts/login/", django.contrib.auth.views.LoginView.as_view(), name="login") '
        '(or path("accounts/", include("django.contrib.auth.urls"))), or set LOGIN_URL to your own login page.'
    )
    try:
        url = str(resolve_url(login_url))
    except NoReverseMatch:
        return [
            Error(
                f"LOGIN_URL {login_url!r} is neither a path nor the name of a URL in ROOT_URLCONF: "
                "the first OAuth sign-in cannot reach a login page.",
                hint=route_hint,
                id="django_mcp.E035",
            )
        ]
    parts = urlsplit(url)
    if parts.scheme or parts.netloc:
        return []  # a login page on another site: nothing to resolve here
    path = parts.path
    prefix = getattr(settings, "FORCE_SCRIPT_NAME", None)
    if prefix and path.startswith(prefix.rstrip("/") + "/"):
        path = path[len(prefix.rstrip("/")) :]
    try:
        match = resolve(path) if path.startswith("/") else None
    except Resolver404:
        match = None
    if match is None:
        return [
            Error(
                f"LOGIN_URL {url!r} does not resolve in ROOT_URLCONF: signed-out users authorizing an MCP client "
                "are sent to a page that does not exist (404).",
                hint=route_hint,
                id="django_mcp.E035",
            )
        ]
    return _check_login_template(match.func)


def _check_login_template(view: Any) -> list[Any]:
    # reason: needs django.contrib.auth installed; checked only with OAuth on
    from django.contrib.auth.views import LoginView

    view_class = getattr(view, "view_class", None)
    if not (isinstance(view_class, type) and issubclass(view_class, LoginView)):
        return []  # a login view of the project's own: its template is its business
    initkwargs = getattr(view, "view_initkwargs", None) or {}
    name = str(initkwargs.get("template_name") or view_class.template_name or "registration/login.html")
    try:
        get_template(name)
    except TemplateDoesNotExist:
        problem = f"cannot be found: the first OAuth sign-in fails with TemplateDoesNotExist: {name}"
    except TemplateSyntaxError as exc:
        problem = f"does not compile ({exc}): the first OAuth sign-in fails with a server error"
    else:
        return []
    return [
        Error(
            f"LOGIN_URL is Django's LoginView, whose template {name!r} {problem}.",
            hint=(
                f"Add templates/{name} to a directory in TEMPLATES['DIRS'] (or to an app's templates/ with "
                "APP_DIRS on), or pass LoginView.as_view(template_name=...) an existing template."
            ),
            id="django_mcp.E036",
        )
    ]


@register(Tags.compatibility)
def check_jwt(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``E291``-``E292``, ``E294``, ``W280``-``W281``: tokens or identity assertions from an external server.

    The value of each ``JWT_*`` key is checked by ``django_mcp.checks.check_settings`` (``E280``-``E290``);
    these are the combinations that cannot work.
    """
    user = getattr(settings, "DJANGO_MCP", {}) or {}
    if not isinstance(user, dict):
        return []
    issuer = user.get("JWT_ISSUER")
    errors: list[Any] = _check_id_jag(user)
    if not issuer:
        if user.get("JWT_JWKS_URI") or user.get("JWT_ROLE_SCOPES"):
            errors.append(
                Warning(
                    "DJANGO_MCP sets JWT_JWKS_URI or JWT_ROLE_SCOPES but not JWT_ISSUER: no JWT is accepted, so "
                    "they are never used.",
                    hint="Set DJANGO_MCP['JWT_ISSUER'] to your authorization server's issuer URL (docs/auth.md).",
                    id="django_mcp.W281",
                )
            )
        return errors
    if mcp_settings.AUTH != "oauth":
        errors.append(
            Error(
                "DJANGO_MCP['JWT_ISSUER'] is set but AUTH is not 'oauth': the endpoint checks no token.",
                hint="Set DJANGO_MCP['AUTH'] = 'oauth' (docs/auth.md, \"Tokens from your company's authorization "
                'server").',
                id="django_mcp.E291",
            )
        )
    errors.extend(_check_user_field(user.get("JWT_USER_FIELD")))
    errors.extend(_check_role_scopes(user.get("JWT_ROLE_SCOPES")))
    return errors


def _check_id_jag(user: dict[str, Any]) -> list[Any]:
    """``E294``: ID-JAGs are accepted by django-oauth-toolkit's token endpoint, so they need ``AUTH = "oauth"``."""
    if user.get("IDJAG_ISSUERS") and mcp_settings.AUTH != "oauth":
        return [
            Error(
                "DJANGO_MCP['IDJAG_ISSUERS'] is set but AUTH is not 'oauth': no token endpoint accepts the "
                "identity assertions, and the MCP endpoint checks no token.",
                hint="Set DJANGO_MCP['AUTH'] = 'oauth' (docs/auth.md, \"Enterprise-managed authorization\").",
                id="django_mcp.E294",
            )
        ]
    errors: list[Any] = []
    if user.get("IDJAG_ISSUERS"):
        errors.extend(_check_user_field(user.get("JWT_USER_FIELD")) if not user.get("JWT_ISSUER") else [])
    return errors


def _check_user_field(field: Any) -> list[Any]:
    from django.contrib.auth import get_user_model  # reason: the user model is known once apps are loaded

    if not isinstance(field, str) or not field:
        return []  # None: the username field; a wrong type is E285
    model = get_user_model()
    try:
        found = model._meta.get_field(field)
    except FieldDoesNotExist:
        found = None
    if found is None or not getattr(found, "concrete", False) or found.is_relation:
        return [
            Error(
                f"DJANGO_MCP['JWT_USER_FIELD'] is {field!r}, which is not a field of {model._meta.label}.",
                hint="Name the user field the JWT_USER_CLAIM value is stored in, such as 'username' or 'email'.",
                id="django_mcp.E292",
            )
        ]
    return []


def _check_role_scopes(mapping: Any) -> list[Any]:
    if not isinstance(mapping, dict):
        return []
    from .scopes import all_scopes  # reason: auth.scopes imports DOT, loaded only once OAuth is on

    try:
        known = set(all_scopes())
    except LookupError:  # the app registry is not ready for declared scopes (only in odd test setups)
        return []
    unknown = sorted({s for scopes in mapping.values() if isinstance(scopes, (list, tuple)) for s in scopes} - known)
    if not unknown:
        return []
    return [
        Warning(
            f"DJANGO_MCP['JWT_ROLE_SCOPES'] grants {', '.join(map(repr, unknown))}, which this site does not have: "
            "no tool, resource or prompt needs them.",
            hint="Grant scopes listed in DJANGO_MCP['SCOPES'] or declared by a tool, resource or prompt.",
            id="django_mcp.W280",
        )
    ]
