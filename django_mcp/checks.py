"""System checks (``django_mcp.E0xx`` errors, ``W0xx`` warnings); each is listed in docs/checks.md."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register

from .conf import DEFAULTS


@register(Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    errors: list[Any] = []
    user = getattr(settings, "DJANGO_MCP", None)
    if user is not None and not isinstance(user, dict):
        return [Error("DJANGO_MCP must be a dict.", id="django_mcp.E001")]
    user = user or {}
    for key in sorted(set(user) - set(DEFAULTS)):
        errors.append(
            Error(
                f"Unknown DJANGO_MCP setting {key!r}.",
                hint="See the settings table in docs/settings.md for the accepted keys.",
                id="django_mcp.E002",
            )
        )
    if "channels" not in settings.INSTALLED_APPS:
        errors.append(
            Error(
                "django_mcp needs 'channels' in INSTALLED_APPS.",
                hint="Add 'daphne' and 'channels' to INSTALLED_APPS (daphne first).",
                id="django_mcp.E003",
            )
        )
    asgi = getattr(settings, "ASGI_APPLICATION", None)
    if not asgi:
        # A warning, not an error: a project may serve MCP over stdio only (manage.py mcp_stdio).
        errors.append(
            Warning(
                "ASGI_APPLICATION is not set, so nothing serves the MCP endpoint over HTTP (stdio still works).",
                hint="Point ASGI_APPLICATION at a module using django_mcp.asgi.get_asgi_application().",
                id="django_mcp.W002",
            )
        )
    else:
        errors.extend(_check_routing(asgi))
    auth = user.get("AUTH", DEFAULTS["AUTH"])
    if auth not in ("none", "oauth"):
        errors.append(Error(f"DJANGO_MCP['AUTH'] must be 'none' or 'oauth', not {auth!r}.", id="django_mcp.E006"))
    for key in ("MAX_BODY_SIZE", "MAX_BATCH_SIZE"):
        size = user.get(key, DEFAULTS[key])
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            errors.append(Error(f"DJANGO_MCP[{key!r}] must be a positive integer.", id="django_mcp.E007"))
    layers = getattr(settings, "CHANNEL_LAYERS", None) or {}
    alias = user.get("CHANNEL_LAYER", DEFAULTS["CHANNEL_LAYER"])
    if alias not in layers:
        errors.append(
            Warning(
                f"No channel layer {alias!r} in CHANNEL_LAYERS: notifications and server requests stay in one process.",
                hint="Configure channels_redis.core.RedisChannelLayer when running several workers.",
                id="django_mcp.W001",
            )
        )
    cache_alias = user.get("EVENT_STORE_CACHE", DEFAULTS["EVENT_STORE_CACHE"])
    if cache_alias not in settings.CACHES:
        errors.append(
            Error(f"DJANGO_MCP['EVENT_STORE_CACHE'] names an unknown cache {cache_alias!r}.", id="django_mcp.E008")
        )
    return errors


def _check_routing(path: str) -> list[Any]:
    from django.utils.module_loading import import_string

    from .conf import mcp_settings

    try:
        app = import_string(path)
    except Exception as exc:  # noqa: BLE001 - any import failure is the finding
        return [Error(f"ASGI_APPLICATION {path!r} cannot be imported: {exc}", id="django_mcp.E005")]
    if _routes_endpoint(app, mcp_settings.ENDPOINT.strip("/") + "/"):
        return []
    return [
        Error(
            f"ASGI_APPLICATION {path!r} does not route {mcp_settings.ENDPOINT!r} to the MCP endpoint.",
            hint="Build it with django_mcp.asgi.get_asgi_application() or include django_mcp.asgi.mcp_urlpatterns().",
            id="django_mcp.E005",
        )
    ]


def _routes_endpoint(app: Any, endpoint: str, depth: int = 0) -> bool:
    from channels.routing import ProtocolTypeRouter, URLRouter

    from .transports.http import MCPConsumer

    if depth > 8:
        return False
    if isinstance(app, ProtocolTypeRouter):
        return any(_routes_endpoint(a, endpoint, depth + 1) for a in app.application_mapping.values())
    if isinstance(app, URLRouter):
        for route in app.routes:
            callback = getattr(route, "callback", None)
            consumer = getattr(callback, "consumer_class", None)
            if consumer is not None and issubclass(consumer, MCPConsumer) and str(route.pattern) == endpoint:
                return True
            if callback is not None and _routes_endpoint(callback, endpoint, depth + 1):
                return True
        return False
    inner = getattr(app, "inner", None) or getattr(app, "application", None)
    return inner is not None and _routes_endpoint(inner, endpoint, depth + 1)


@register(Tags.security, deploy=False)
def check_development_mode(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``AUTH = "none"`` is a development mode: refused unless DEBUG is on.

    At request time the endpoint then also answers loopback connections only
    (``transports.security.unauthenticated_refusal``); outside development
    ``"oauth"`` is the only way to serve it.
    """
    user = getattr(settings, "DJANGO_MCP", None)
    auth = (user if isinstance(user, dict) else {}).get("AUTH", DEFAULTS["AUTH"])
    if auth != "none" or settings.DEBUG:
        return []
    return [
        Error(
            "DJANGO_MCP['AUTH'] is 'none' (no authentication) while DEBUG is off.",
            hint=(
                "Set DJANGO_MCP['AUTH'] = 'oauth' for any deployment. 'none' is a development mode: "
                "it needs DEBUG = True and serves loopback connections only."
            ),
            id="django_mcp.E009",
        )
    ]
