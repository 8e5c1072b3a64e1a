"""System checks (``django_mcp.E0xx`` errors, ``W0xx`` warnings); each is listed in docs/checks.md."""

from __future__ import annotations

import difflib
from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.utils.module_loading import import_string

from .conf import DEFAULTS, IMPORT_STRINGS, SETTINGS, Setting, mcp_settings


def _served_by_view(endpoint: Any) -> bool:
    """Whether the URLconf routes the endpoint to ``django_mcp.views`` (WSGI mode: no Channels needed)."""
    if not isinstance(endpoint, str):
        return False
    from django.urls import Resolver404, resolve

    try:
        match = resolve(endpoint)
    except (Resolver404, ImportError, AttributeError):
        return False
    except Exception:  # noqa: BLE001 - a broken URLconf is Django's own check to report
        return False
    return getattr(match.func, "__module__", "") == "django_mcp.views"


@register(Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    errors: list[Any] = []
    user = getattr(settings, "DJANGO_MCP", None)
    if user is not None and not isinstance(user, dict):
        return [
            Error(
                f"DJANGO_MCP must be a dict, not {type(user).__name__}.",
                hint='Make it a dict such as DJANGO_MCP = {"SERVER_NAME": "..."}, or leave it out for the defaults.',
                id="django_mcp.E001",
            )
        ]
    user = user or {}
    for key in sorted((k for k in user if k not in DEFAULTS), key=str):
        errors.append(Error(f"Unknown DJANGO_MCP setting {key!r}.", hint=_unknown_hint(key), id="django_mcp.E002"))
    invalid: set[str] = set()  # keys whose value is refused: the checks that use them are skipped
    for key, spec in SETTINGS.items():
        if key in user:
            error = _setting_error(key, spec, user[key])
            if error is not None:
                errors.append(error)
                invalid.add(key)
    wsgi_mode = _served_by_view(user.get("ENDPOINT", DEFAULTS["ENDPOINT"]))
    if "channels" not in settings.INSTALLED_APPS and not wsgi_mode:
        errors.append(
            Error(
                "django_mcp needs 'channels' in INSTALLED_APPS.",
                hint="Add 'daphne' and 'channels' to INSTALLED_APPS (daphne first).",
                id="django_mcp.E003",
            )
        )
    asgi = getattr(settings, "ASGI_APPLICATION", None)
    if not asgi and not wsgi_mode:
        # A warning, not an error: a project may serve MCP over stdio only (manage.py mcp_stdio).
        errors.append(
            Warning(
                "ASGI_APPLICATION is not set, so nothing serves the MCP endpoint over HTTP (stdio still works).",
                hint="Point ASGI_APPLICATION at a module using django_mcp.asgi.get_asgi_application().",
                id="django_mcp.W002",
            )
        )
    elif asgi and "ENDPOINT" not in invalid:
        errors.extend(_check_routing(asgi))
    if "CHANNEL_LAYER" not in invalid and not wsgi_mode:
        layers = getattr(settings, "CHANNEL_LAYERS", None) or {}
        alias = user.get("CHANNEL_LAYER", DEFAULTS["CHANNEL_LAYER"])
        if alias not in layers:
            errors.append(
                Warning(
                    f"No channel layer {alias!r} in CHANNEL_LAYERS: notifications and server requests stay in one "
                    "process.",
                    hint="Configure channels_redis.core.RedisChannelLayer when running several workers.",
                    id="django_mcp.W001",
                )
            )
    for key in ("EVENT_STORE_CACHE", "REGISTRATION_RATE_CACHE"):
        cache_alias = user.get(key, DEFAULTS[key])
        if key not in invalid and cache_alias not in settings.CACHES:
            errors.append(
                Error(
                    f"DJANGO_MCP[{key!r}] names an unknown cache {cache_alias!r}.",
                    hint=f"{key} must be {SETTINGS[key].expected}; the default is {DEFAULTS[key]!r}. "
                    f"CACHES has {', '.join(map(repr, settings.CACHES)) or 'no alias'}.",
                    id=SETTINGS[key].id,
                )
            )
    return errors


def _unknown_hint(key: Any) -> str:
    close = difflib.get_close_matches(str(key).upper(), DEFAULTS, n=1, cutoff=0.6)
    if close:
        return f"Did you mean {close[0]!r}? The accepted keys are listed in docs/settings.md."
    return "See the settings table in docs/settings.md for the accepted keys."


def _setting_error(key: str, spec: Setting, value: Any) -> Error | None:
    """The error for one ``DJANGO_MCP`` value that is of the wrong type or out of range (``None`` if fine)."""
    problem = spec.problem(value)
    if problem is None and key in IMPORT_STRINGS and isinstance(value, str):
        problem = _import_problem(value)
    if problem is None:
        return None
    return Error(
        f"DJANGO_MCP[{key!r}] {problem}.",
        hint=f"{key} must be {spec.expected}; the default is {DEFAULTS[key]!r}. See docs/settings.md.",
        id=spec.id,
    )


def _import_problem(path: str) -> str | None:
    try:
        target = import_string(path)
    except ImportError as exc:
        return f"is {path!r}, which cannot be imported ({exc})"
    except Exception as exc:  # noqa: BLE001 - an error raised while importing the module is the finding
        return f"is {path!r}, whose module fails to import ({type(exc).__name__}: {exc})"
    if not callable(target):
        return f"is {path!r}, which is not callable"
    return None


def _check_routing(path: str) -> list[Any]:
    from .conf import mcp_settings

    try:
        app = import_string(path)
    except Exception as exc:  # noqa: BLE001 - any import failure is the finding
        return [
            Error(
                f"ASGI_APPLICATION {path!r} cannot be imported: {exc}",
                hint="Fix the dotted path, or the import error in that module.",
                id="django_mcp.E005",
            )
        ]
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


@register(Tags.compatibility)
def check_runserver(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``W003``: in development (DEBUG on) ``manage.py runserver`` must be daphne's, or ``/mcp/`` 404s.

    Django's own ``runserver`` (and ``django.contrib.staticfiles``' override of it) serves WSGI,
    which never reaches ``ASGI_APPLICATION``: the MCP endpoint answers 404. daphne's ``runserver``
    serves ``ASGI_APPLICATION``; it wins only when ``daphne`` comes before ``django.contrib.staticfiles``
    in ``INSTALLED_APPS``. Only checked with DEBUG on and ``ASGI_APPLICATION`` set: a deployment
    runs an ASGI server (daphne, uvicorn) and never ``runserver``.
    """
    if not settings.DEBUG or not getattr(settings, "ASGI_APPLICATION", None):
        return []
    from django.core.management import get_commands

    app = get_commands().get("runserver")
    if app is None or _is_daphne_runserver(str(app)):
        return []
    source = "Django's" if app == "django.core" else f"{app}'s"
    return [
        Warning(
            f"manage.py runserver is {source} WSGI server, which does not serve ASGI_APPLICATION: "
            f"{_endpoint_label()} answers 404 under runserver.",
            hint=(
                'Put "daphne" first in INSTALLED_APPS (before "django.contrib.staticfiles") so runserver serves '
                "ASGI, or serve the project with an ASGI server (daphne, uvicorn) and silence django_mcp.W003."
            ),
            id="django_mcp.W003",
        )
    ]


def _is_daphne_runserver(app: str) -> bool:
    if app == "daphne":
        return True
    try:
        from daphne.management.commands.runserver import Command as DaphneRunserver
        from django.core.management import load_command_class

        return isinstance(load_command_class(app, "runserver"), DaphneRunserver)
    except Exception:  # noqa: BLE001 - daphne absent, or the other app's command fails to load: not daphne's
        return False


def _endpoint_label() -> str:
    from .conf import SETTINGS, mcp_settings

    endpoint = mcp_settings.ENDPOINT
    return repr(endpoint) if SETTINGS["ENDPOINT"].problem(endpoint) is None else "the MCP endpoint"


@register(Tags.compatibility)
def check_tools(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``W004``: one warning per tool with no ``title`` or no ``readOnlyHint``/``destructiveHint``.

    Checks ``django_mcp.site`` and every other ``MCPServer`` mounted by ``ASGI_APPLICATION``
    (``mcp_urlpatterns(server=...)``). For a server served only over stdio, register
    ``tool_warnings(server)`` as a check of your own.
    """
    from . import site

    warnings: list[Any] = []
    for server in _servers(site):
        warnings.extend(tool_warnings(server))
    return warnings


def tool_warnings(server: Any) -> list[Any]:
    """``W004`` for each tool of ``server`` that a host directory would reject for missing metadata."""
    warnings: list[Any] = []
    for name, tool in server.tools.items():
        annotations = tool.annotations or {}
        titled = bool(tool.title or annotations.get("title"))
        hinted = "readOnlyHint" in annotations or "destructiveHint" in annotations
        if titled and hinted:
            continue
        missing = [] if titled else ["no title"]
        reason = "host directories reject such tools"
        if not hinted:
            missing.append("no readOnlyHint or destructiveHint annotation")
            reason += ", and clients cannot tell whether it only reads or changes data"
        warnings.append(
            Warning(
                f"Tool {name!r} has {' and '.join(missing)}: {reason}.",
                hint=(
                    f'Declare them: @site.tool(title="{tool.title or _title(name)}", annotations={{"readOnlyHint": '
                    'True}) for a tool that only reads, or annotations={"readOnlyHint": False, "destructiveHint": '
                    "True} for one that deletes or overwrites (register_view and register_drf take the same title= "
                    "and annotations=)."
                ),
                obj=f"MCP server {server.name!r}",
                id="django_mcp.W004",
            )
        )
    return warnings


def _title(name: str) -> str:
    return name.replace("_", " ").replace("-", " ").strip().capitalize() or name


def _servers(site: Any) -> list[Any]:
    """``site``, then the other servers ``ASGI_APPLICATION`` routes to (each once)."""
    servers = [site]
    path = getattr(settings, "ASGI_APPLICATION", None)
    if not path:
        return servers
    try:
        app = import_string(path)
    except Exception:  # noqa: BLE001 - reported by E005
        return servers
    for server in _mounted_servers(app):
        if all(server is not s for s in servers):
            servers.append(server)
    return servers


def _mounted_servers(app: Any, depth: int = 0) -> list[Any]:
    from channels.routing import ProtocolTypeRouter, URLRouter

    from .server import MCPServer

    if depth > 8:
        return []
    if isinstance(app, ProtocolTypeRouter):
        return [s for a in app.application_mapping.values() for s in _mounted_servers(a, depth + 1)]
    if isinstance(app, URLRouter):
        found = []
        for route in app.routes:
            callback = getattr(route, "callback", None)
            server = (getattr(callback, "consumer_initkwargs", None) or {}).get("server")
            if isinstance(server, MCPServer):
                found.append(server)
            elif callback is not None:
                found.extend(_mounted_servers(callback, depth + 1))
        return found
    inner = getattr(app, "inner", None) or getattr(app, "application", None)
    return [] if inner is None else _mounted_servers(inner, depth + 1)


@register(Tags.compatibility)
def check_tasks(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``E037``/``E038``/``W005``: the ``TASKS`` backend that task tools (``task=...``) are enqueued on.

    A ``task="required"`` tool on ``ImmediateBackend`` would run inside the request and keep
    nothing across a restart, and ``DummyBackend`` never runs anything: both are errors.
    ``task="optional"`` tools on them only warn (development and tests).
    """
    from . import site
    from .tasks import framework

    tools = [(server, tool) for server in _servers(site) for tool in server.tools.values() if tool.task_support]
    if not tools:
        return []
    alias = mcp_settings.TASK_BACKEND
    if framework.backend_path(alias) is None:
        return [
            Error(
                f"DJANGO_MCP['TASK_BACKEND'] is {alias!r}, which is not an alias of the TASKS setting, and "
                f"tool {tools[0][1].name!r} runs as a task.",
                hint='Configure it, e.g. TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}} '
                'with "django_tasks_db" in INSTALLED_APPS, and run `manage.py db_worker`.',
                id="django_mcp.E037",
            )
        ]
    if not framework.runs_in_process(alias):
        return []
    backend = framework.backend_path(alias)
    problems: list[Any] = []
    for server, tool in tools:
        if tool.task_support == "required":
            problems.append(
                Error(
                    f"Tool {tool.name!r} runs only as a task (task='required'), but TASKS[{alias!r}] is {backend}: "
                    "its tasks would run inside the request that starts them, and nothing would survive a restart.",
                    hint="Use a backend with a worker: django_tasks_db.DatabaseBackend and `manage.py db_worker`.",
                    obj=f"MCP server {server.name!r}",
                    id="django_mcp.E038",
                )
            )
    if len(problems) < len(tools):
        problems.append(
            Warning(
                f"Task tools run on TASKS[{alias!r}] = {backend}: each task runs inside the request that starts it.",
                hint="Fine for development and tests; in production use django_tasks_db.DatabaseBackend and "
                "`manage.py db_worker`.",
                id="django_mcp.W005",
            )
        )
    return problems
