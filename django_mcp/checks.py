"""System checks (``django_mcp.E0xx`` errors, ``W0xx`` warnings); each is listed in docs/checks.md."""

from __future__ import annotations

import difflib
import re
from datetime import timedelta
from importlib.util import find_spec
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.core.management import get_commands, load_command_class
from django.db import DatabaseError, router
from django.urls import NoReverseMatch, Resolver404, resolve, reverse
from django.utils import timezone
from django.utils.module_loading import import_string

from . import skills, strict
from .conf import DEFAULTS, IMPORT_STRINGS, SETTINGS, Setting, mcp_settings
from .protocol import skills as skill_rules
from .server import MCPServer, site
from .server import servers as task_servers
from .tasks import framework
from .telemetry import middleware as telemetry


def _served_by_view(endpoint: Any) -> bool:
    """Whether the URLconf routes the endpoint to ``django_mcp.transports.wsgi`` (WSGI mode: no Channels needed)."""
    if not isinstance(endpoint, str):
        return False

    try:
        match = resolve(endpoint)
    except (Resolver404, ImportError, AttributeError):
        return False
    except Exception:  # noqa: BLE001 - a broken URLconf is Django's own check to report
        return False
    return getattr(match.func, "__module__", "") == "django_mcp.transports.wsgi"


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
                hint="Add 'daphne' and 'channels' to INSTALLED_APPS (daphne first)."
                if find_spec("channels") is not None
                else "Install them (pip install 'django-mcp-toolkit[asgi]') and add 'daphne' and 'channels' to "
                "INSTALLED_APPS (daphne first); or serve the endpoint as a Django view (WSGI mode: "
                "django_mcp.urls_wsgi), which needs neither.",
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
    for key in ("EVENT_STORE_CACHE", "REGISTRATION_RATE_CACHE", "RATE_LIMIT_CACHE"):
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
    if problem is None and key in ("MIDDLEWARE", "AUTHENTICATION_CLASSES"):  # each entry, as Django reports a
        # middleware it cannot import
        problem = next((p for p in map(_import_problem, (m for m in value if isinstance(m, str))) if p), None)
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


#: Middleware that replaces ``request.user`` with the session's user: in a call's chain it would hide the caller.
_REPLACES_USER = ("django.contrib.auth.middleware.AuthenticationMiddleware",)


@register(Tags.compatibility)
def check_project_middleware(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``E212``: a middleware a call runs in cannot be imported; ``W050``: one would replace the caller."""
    from .runtime import project_middleware  # reason: the check needs the effective list, not the raw setting

    if SETTINGS["PROJECT_MIDDLEWARE"].problem(mcp_settings.PROJECT_MIDDLEWARE) is not None:
        return []  # E210 says what is wrong with the setting itself
    found: list[Any] = []
    for path in project_middleware.middleware_paths():
        problem = _import_problem(path)
        if problem is not None:
            found.append(
                Error(
                    f"A middleware MCP calls run in (DJANGO_MCP['PROJECT_MIDDLEWARE'] or MIDDLEWARE) {problem}.",
                    hint="Fix the path, or leave it out of calls with DJANGO_MCP['PROJECT_MIDDLEWARE_EXCLUDE'].",
                    id="django_mcp.E212",
                )
            )
        elif path in _REPLACES_USER:
            found.append(
                Warning(
                    f"DJANGO_MCP['PROJECT_MIDDLEWARE'] lists {path}: it replaces request.user with the session's "
                    "user, so the project's middleware after it would not see the MCP caller.",
                    hint="Leave it out: the request of an MCP call already carries the caller as request.user.",
                    id="django_mcp.W050",
                )
            )
    return found


def _check_routing(path: str) -> list[Any]:
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


def _routers() -> tuple[Any, Any] | None:
    """Channels' ``ProtocolTypeRouter`` and ``URLRouter``; None without Channels (the ``asgi`` extra)."""
    try:
        # reason: optional dependency (the asgi extra); only when ASGI_APPLICATION is set
        from channels.routing import ProtocolTypeRouter, URLRouter
    except ImportError:
        return None
    return ProtocolTypeRouter, URLRouter


def _routes_endpoint(app: Any, endpoint: str, depth: int = 0) -> bool:
    routers = _routers()
    if routers is None:  # without Channels no application routes to the Channels consumer
        return False
    ProtocolTypeRouter, URLRouter = routers
    from .transports.http import MCPConsumer  # reason: Channels transport only when ASGI_APPLICATION is set

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
    in ``INSTALLED_APPS``. Only checked with DEBUG on and ``ASGI_APPLICATION`` set (a deployment
    runs an ASGI server and never ``runserver``), and not when the URLconf routes the endpoint to
    ``django_mcp.transports.wsgi`` (WSGI mode: any ``runserver`` serves it).
    """
    if not settings.DEBUG or not getattr(settings, "ASGI_APPLICATION", None):
        return []
    if _served_by_view(mcp_settings.ENDPOINT):  # WSGI mode: Django's runserver serves the view itself
        return []
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
        # reason: in the try: daphne failing to import means not its runserver
        from daphne.management.commands.runserver import Command as DaphneRunserver

        return isinstance(load_command_class(app, "runserver"), DaphneRunserver)
    except Exception:  # noqa: BLE001 - daphne absent, or the other app's command fails to load: not daphne's
        return False


def _endpoint_label() -> str:
    endpoint = mcp_settings.ENDPOINT
    return repr(endpoint) if SETTINGS["ENDPOINT"].problem(endpoint) is None else "the MCP endpoint"


#: ``manage.py check --tag mcp_hosts``: what the hosts' directories ask (W004, W040-W043).
HOSTS_TAG = "mcp_hosts"


@register(Tags.compatibility, HOSTS_TAG)
def check_tools(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``W004``: one warning per tool with no ``title`` or no ``readOnlyHint``/``destructiveHint``.

    Checks ``django_mcp.site`` and every other ``MCPServer`` mounted by ``ASGI_APPLICATION``
    (``mcp_urlpatterns(server=...)``). For a server served only over stdio, register
    ``tool_warnings(server)`` as a check of your own.
    """
    warnings: list[Any] = []
    for server in _servers(site):
        warnings.extend(tool_warnings(server))
    return warnings


def _unbuildable(tool: Any) -> Exception | bool:
    """Build a deferred tool's schemas (DRF tools: on first use, and here, before a client meets an error):
    the error that stops it, True when the database is not there yet (``migrate`` runs the checks before it
    creates the tables: built on first use then), False when built."""
    try:
        return tool.build_error() or False
    except DatabaseError:
        return True


def tool_warnings(server: Any) -> list[Any]:
    """``E010`` for each tool whose schemas cannot be built; ``W004`` for each that a host directory would reject
    for missing metadata."""
    warnings: list[Any] = []
    for name, tool in server.tools.items():
        problem = _unbuildable(tool)
        if isinstance(problem, Exception):
            exc = problem
            warnings.append(
                Error(
                    f"Tool {name!r}: its input and output schemas cannot be built: {type(exc).__name__}: {exc}",
                    hint="DRF tools are introspected on first use (register_drf(..., input_serializer=...) "
                    "gives a view without a serializer one); fix the view or the arguments of its registration.",
                    obj=f"MCP server {server.name!r}",
                    id="django_mcp.E010",
                )
            )
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
                    'True, "destructiveHint": False, "openWorldHint": False}) for a tool that only reads, or '
                    'annotations={"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False} for one '
                    "that deletes or overwrites (register_view and register_drf take the same title= and annotations=)."
                ),
                obj=f"MCP server {server.name!r}",
                id="django_mcp.W004",
            )
        )
    return warnings


@register(HOSTS_TAG)
def check_host_directories(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``W040``-``W043`` (``manage.py check --tag mcp_hosts``): what the hosts' directories ask of each tool.

    Claude's connector directory and ChatGPT's app submission review every tool for a title, a
    description, explicit ``readOnlyHint``/``destructiveHint``/``openWorldHint``, a name of at most
    64 characters, and reads kept apart from writes. ``W004`` reports a missing title or read/write hint.
    """
    warnings: list[Any] = []
    for server in _servers(site):
        warnings.extend(host_directory_warnings(server))
    return warnings


#: The hints directories want set explicitly (an omitted destructiveHint or openWorldHint means True).
DIRECTORY_HINTS = ("readOnlyHint", "destructiveHint", "openWorldHint")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_READ_WORDS = frozenset({"get", "list", "read", "retrieve", "search", "show", "view", "fetch", "find", "head"})
_WRITE_WORDS = frozenset(
    {"create", "update", "delete", "remove", "write", "post", "put", "patch", "set", "add", "destroy", "edit"}
)


def host_directory_warnings(server: Any) -> list[Any]:
    """``W040``-``W043`` for each tool of ``server`` (register it in a check of your own for a stdio-only server)."""
    warnings: list[Any] = []
    obj = f"MCP server {server.name!r}"
    for name, tool in server.tools.items():
        if _unbuildable(tool):
            continue  # E010 (or no database yet): its schemas are not there to check
        annotations = tool.annotations or {}
        if not (tool.description or "").strip():
            warnings.append(
                Warning(
                    f"Tool {name!r} has no description: the model cannot tell when to use it, and host directories "
                    "reject it.",
                    hint="Give the function a docstring (its first paragraph becomes the description), or "
                    "description=...",
                    obj=obj,
                    id="django_mcp.W040",
                )
            )
        if not _TOOL_NAME.match(name):
            warnings.append(
                Warning(
                    f"Tool {name!r}: host directories take names of 1-64 letters, digits, '_' and '-'.",
                    hint='Rename it: @site.tool(name="...") (register_view and register_drf take name= too).',
                    obj=obj,
                    id="django_mcp.W041",
                )
            )
        titled = bool(tool.title or annotations.get("title"))
        w004 = not titled or not ("readOnlyHint" in annotations or "destructiveHint" in annotations)
        missing = [hint for hint in DIRECTORY_HINTS if not isinstance(annotations.get(hint), bool)]
        if missing and not w004:  # W004 reports the title and the first hint
            warnings.append(
                Warning(
                    f"Tool {name!r} does not set {', '.join(missing)}: host directories want all three set, and a "
                    "client reads an omitted destructiveHint or openWorldHint as True.",
                    hint='annotations={"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False} for a '
                    "tool that only reads this site's own data; openWorldHint True for one that reaches the internet.",
                    obj=obj,
                    id="django_mcp.W042",
                )
            )
        mixed = _mixes_reads_and_writes(tool)
        if mixed:
            warnings.append(
                Warning(
                    f"Tool {name!r} {mixed}: host directories want reads and writes in separate tools.",
                    hint="Split it: one read-only tool, one (or one per kind of change) that writes.",
                    obj=obj,
                    id="django_mcp.W043",
                )
            )
    return warnings


def _mixes_reads_and_writes(tool: Any) -> str | None:
    annotations = tool.annotations or {}
    if annotations.get("readOnlyHint") is True and annotations.get("destructiveHint") is True:
        return "says it only reads (readOnlyHint) and that it destroys (destructiveHint)"
    for prop, schema in ((tool.input_schema or {}).get("properties") or {}).items():
        values = schema.get("enum") if isinstance(schema, dict) else None
        if not isinstance(values, list):
            continue
        words = {str(v).lower() for v in values}
        if words & _READ_WORDS and words & _WRITE_WORDS:
            return f"chooses between reading and writing by its {prop!r} argument ({', '.join(sorted(words))})"
    return None


def _title(name: str) -> str:
    return name.replace("_", " ").replace("-", " ").strip().capitalize() or name


@register(Tags.security)
def check_access_rules(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``E182`` (strict mode, ``REQUIRE_ACCESS_RULES``): each declaration that names no access rule.

    An error, so ``runserver``, ``migrate`` and ``mcp_stdio`` refuse to run; ``get_asgi_application()``
    refuses the same for daphne and uvicorn, which run no checks.
    """
    if SETTINGS["REQUIRE_ACCESS_RULES"].problem(mcp_settings.REQUIRE_ACCESS_RULES) is not None:
        return []  # E181 reports the value itself
    return strict.errors(project_servers())


#: What to do about each rule a skill can break (``SkillError.rule``).
_SKILL_HINTS = {
    "frontmatter": "Start SKILL.md with a YAML block between two '---' lines: name: ..., description: ...",
    "name": "Give the frontmatter name: the skill's folder name (1-64 lowercase letters, digits and hyphens).",
    "path": "Name skill folders and paths with letters, digits, '.', '_', '~' or '-'.",
    "description": "Say in the frontmatter's description what the skill does and when to use it (1-1024 chars).",
    "metadata": "Make metadata a mapping, without keys under io.modelcontextprotocol/ (reserved for MCP).",
    "limits": f"Keep a skill to {skill_rules.MAX_FILES} files and 16 MiB; move large assets elsewhere.",
    "files": "Keep a skill's files inside its folder: no links out of it, regular files only.",
    "manifest": "Put a UTF-8 SKILL.md at the root of the skill's folder.",
    "template": "Fix the template the skill's SKILL.md is rendered from.",
    "meta": "Prefix _meta keys: io.modelcontextprotocol.skills/<key> (or your own reverse domain).",
}


@register(Tags.compatibility)
def check_skills(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``E251``: each skill that breaks a rule of the Skills extension, naming its file and the rule.

    Covers the skills folders of the apps and of ``SKILL_DIRS`` and the skills each project server
    declares in code. Such a skill is not served (the rest are).
    """
    if SETTINGS["SKILL_DIRS"].problem(mcp_settings.SKILL_DIRS) is not None:
        return []  # E250 reports the value itself
    found = [(str(folder), exc) for folder, exc in skills.skipped]
    for server in project_servers():
        for skill in server.skills.values():
            try:
                skill.load()
            except skill_rules.SkillError as exc:
                found.append((skill.where(exc), exc))
    return [
        Error(
            f"Skill {where}: {exc} (rule: {exc.rule}).",
            hint=_SKILL_HINTS.get(exc.rule),
            obj="skills",
            id="django_mcp.E251",
        )
        for where, exc in found
    ]


def project_servers() -> list[Any]:
    """``django_mcp.site``, the servers ``ASGI_APPLICATION`` mounts and those with task tools, each once."""
    found = _servers(site)
    for server in task_servers.values():
        if all(server is not s for s in found):
            found.append(server)
    return found


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
    routers = _routers()
    if depth > 8 or routers is None:  # without Channels no consumer mounts a server
        return []
    ProtocolTypeRouter, URLRouter = routers
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


@register(Tags.compatibility)
def check_telemetry(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``E186``/``E189``: ``TELEMETRY`` on needs OpenTelemetry installed and its middleware in ``MIDDLEWARE``.

    Nothing is checked (or imported) while it is off.
    """
    user = getattr(settings, "DJANGO_MCP", None)
    user = user if isinstance(user, dict) else {}
    if user.get("TELEMETRY", DEFAULTS["TELEMETRY"]) is not True:
        return []
    errors: list[Any] = []
    if telemetry.instruments() is None:
        errors.append(
            Error(
                "DJANGO_MCP['TELEMETRY'] is on, but OpenTelemetry (opentelemetry-api) is not installed.",
                hint=f"Install the otel extra: {telemetry.INSTALL_HINT}.",
                id="django_mcp.E186",
            )
        )
    paths = user.get("MIDDLEWARE", DEFAULTS["MIDDLEWARE"])
    if isinstance(paths, (list, tuple)) and not any(_is_telemetry(p, telemetry.Telemetry) for p in paths):
        errors.append(
            Error(
                "DJANGO_MCP['TELEMETRY'] is on, but no telemetry middleware is in DJANGO_MCP['MIDDLEWARE']: "
                "no span or metric is recorded.",
                hint=f'Put "{_TELEMETRY_PATH}" first in MIDDLEWARE ([*DEFAULT_MIDDLEWARE, ...] keeps it), '
                "or set TELEMETRY = False.",
                id="django_mcp.E189",
            )
        )
    return errors


_TELEMETRY_PATH = "django_mcp.telemetry.middleware.Telemetry"


def _is_telemetry(path: Any, cls: type) -> bool:
    """Whether a ``MIDDLEWARE`` entry is the telemetry middleware or a subclass of it."""
    if path == _TELEMETRY_PATH:
        return True
    try:
        factory = import_string(path) if isinstance(path, str) else path
    except Exception:  # noqa: BLE001 - an entry that cannot be imported is E153's finding
        return False
    return isinstance(factory, type) and issubclass(factory, cls)


# -- manage.py check --deploy: what works in development and hurts in production (W020-W029) --------------

_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_IN_PROCESS_CACHES = ("django.core.cache.backends.locmem.LocMemCache", "django.core.cache.backends.dummy.DummyCache")
_IN_MEMORY_LAYER = "channels.layers.InMemoryChannelLayer"


@register(Tags.compatibility, deploy=True)
def check_deployment(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``W020``-``W025``, ``W032``, on ``manage.py check --deploy`` only: fine on one laptop, not in production.

    Read from the settings alone (no query, no connection); a value other checks refuse is left to them.
    """
    user = getattr(settings, "DJANGO_MCP", None)
    if user is not None and not isinstance(user, dict):
        return []  # E001
    user = user or {}

    def valid(key: str) -> Any:
        value = user.get(key, DEFAULTS[key])
        return value if SETTINGS[key].problem(value) is None else None

    endpoint = valid("ENDPOINT")
    wsgi_mode = endpoint is not None and _served_by_view(endpoint)
    tools = [tool for server in _servers(site) for tool in server.tools.values()]
    warnings: list[Any] = []
    if not wsgi_mode:  # WSGI mode sends nothing across requests and keeps no stream to resume
        warnings += _in_memory_layer(valid("CHANNEL_LAYER"))
        warnings += _event_store_in_process(valid("EVENT_STORE_CACHE"))
    task_tools = [tool for tool in tools if tool.task_support]
    warnings += _sqlite_with_tasks(task_tools)
    warnings += _connection_per_call([tool for tool in tools if not tool.is_async])
    warnings += _development_auth(valid("AUTH"))
    warnings += _tasks_without_worker(task_tools, valid("TASK_BACKEND"))
    warnings += _browsable_in_production(valid("BROWSABLE_ENDPOINT"))
    public_url = user.get("PUBLIC_URL")
    if SETTINGS["PUBLIC_URL"].problem(public_url) is None:  # a refused value is E300's
        warnings += _app_bridge([tool for tool in tools if tool.ui is not None], public_url)
    return warnings


def _app_bridge(app_tools: list[Any], public_url: str | None) -> list[Any]:
    """``W300``: MCP Apps without ``PUBLIC_URL`` (each page inlines the bridge); ``W301``: ``PUBLIC_URL`` over http."""
    if public_url is None:
        if not app_tools:
            return []
        names = ", ".join(sorted(tool.name for tool in app_tools)[:5])
        return [
            Warning(
                f"{len(app_tools)} tool(s) have an MCP App ({names}) and DJANGO_MCP['PUBLIC_URL'] is not set: every "
                "ui:// page inlines the ext-apps bridge (about 240 KB each).",
                hint='Set PUBLIC_URL to where browsers reach this site ("https://books.example.com"): pages then '
                "load the bridge once from <ENDPOINT>apps/ and weigh a few KB "
                "(docs/apps.md#serving-the-bridge-once).",
                id="django_mcp.W300",
            )
        ]
    host = urlsplit(public_url).hostname or ""
    if urlsplit(public_url).scheme == "https" or host in _LOOPBACK_HOSTS or settings.DEBUG:
        return []
    return [
        Warning(
            f"DJANGO_MCP['PUBLIC_URL'] is {public_url!r}, a plain-http URL.",
            hint="Hosts serve their pages over https and block a script from http as mixed content, so MCP App "
            "pages would not load their bridge. Use the site's https URL.",
            id="django_mcp.W301",
        )
    ]


def _browsable_in_production(who: Any) -> list[Any]:
    if who is None or who is False or settings.DEBUG:
        return []
    return [
        Warning(
            f"The browsable endpoint is on (DJANGO_MCP['BROWSABLE_ENDPOINT'] = {who!r}) with DEBUG = False.",
            hint=f"Signed-in {who} can call every tool they may use from a browser at the MCP endpoint "
            "(CSRF-protected, audited as transport 'browser'). Set BROWSABLE_ENDPOINT = False in production "
            "unless you mean it (docs/browsable.md).",
            id="django_mcp.W032",
        )
    ]


def _backend(entry: Any) -> str:
    return str(entry.get("BACKEND", "")) if isinstance(entry, dict) else ""


def _in_memory_layer(alias: Any) -> list[Any]:
    layers = getattr(settings, "CHANNEL_LAYERS", None) or {}
    if alias is None or _backend(layers.get(alias)) != _IN_MEMORY_LAYER:
        return []
    return [
        Warning(
            f"CHANNEL_LAYERS[{alias!r}] is the in-memory channel layer: messages between requests stay in the "
            "worker process that sent them.",
            hint="With more than one worker process a GET stream on one misses the notifications another publishes, "
            "and an elicitation answer or a cancellation that reaches another worker is lost. Use "
            "channels_redis.core.RedisChannelLayer (docs/deployment.md#redis-channel-layer-and-event-store).",
            id="django_mcp.W020",
        )
    ]


def _database(alias: str = "default") -> dict[str, Any]:
    entry = (getattr(settings, "DATABASES", None) or {}).get(alias)
    return entry if isinstance(entry, dict) else {}


def _sqlite_with_tasks(task_tools: list[Any]) -> list[Any]:
    if not task_tools or not str(_database().get("ENGINE", "")).endswith("sqlite3"):
        return []
    return [
        Warning(
            f"The database is SQLite and tool {task_tools[0].name!r} runs as a task.",
            hint="A task worker (manage.py db_worker) and the web workers then write one file: under load, writes "
            "wait for its lock and fail with 'database is locked'. Use PostgreSQL (docs/deployment.md#postgresql).",
            id="django_mcp.W021",
        )
    ]


def _connection_per_call(sync_tools: list[Any]) -> list[Any]:
    database = _database()
    if not sync_tools or "postgresql" not in str(database.get("ENGINE", "")):
        return []
    options = database.get("OPTIONS") or {}
    if database.get("CONN_MAX_AGE", 0) != 0 or (isinstance(options, dict) and options.get("pool")):
        return []
    return [
        Warning(
            f"Sync tools (such as {sync_tools[0].name!r}) run on PostgreSQL with CONN_MAX_AGE = 0 and no connection "
            "pool: each call opens a database connection and closes it.",
            hint='Use Django\'s connection pool: DATABASES["default"]["OPTIONS"]["pool"] = {"min_size": 2, '
            '"max_size": 20, "timeout": 2, "reconnect_timeout": 1} with psycopg[pool] installed '
            "(docs/deployment.md#recommended-settings). Measured: 182 calls/s against 722 with the pool.",
            id="django_mcp.W022",
        )
    ]


def _development_auth(auth: Any) -> list[Any]:
    if auth != "none":
        return []
    hosts = [str(h) for h in getattr(settings, "ALLOWED_HOSTS", None) or []]
    public = [h for h in hosts if h.lower() not in _LOOPBACK_HOSTS]
    if settings.DEBUG and not public:
        return []
    where = "DEBUG is off" if not settings.DEBUG else f"ALLOWED_HOSTS names {', '.join(map(repr, public))}"
    return [
        Warning(
            f"DJANGO_MCP['AUTH'] is 'none' (no authentication) and {where}: this looks like a deployment.",
            hint="Set DJANGO_MCP['AUTH'] = 'oauth' (docs/auth.md). 'none' is a development mode that serves "
            "loopback connections only.",
            id="django_mcp.W023",
        )
    ]


def _event_store_in_process(alias: Any) -> list[Any]:
    caches = getattr(settings, "CACHES", None) or {}
    backend = _backend(caches.get(alias)) if alias is not None else ""
    if backend not in _IN_PROCESS_CACHES:
        return []
    what = "keeps nothing" if backend.endswith("DummyCache") else "lives in one worker process"
    return [
        Warning(
            f"The event store (DJANGO_MCP['EVENT_STORE_CACHE'] = {alias!r}) is {backend.rsplit('.', 1)[-1]}, "
            f"which {what}.",
            hint="A client that reconnects with Last-Event-ID to another worker, or after a restart, finds nothing to "
            "replay, and the notifications published while it was away are lost. Use Redis "
            "(django.core.cache.backends.redis.RedisCache; docs/deployment.md#redis-channel-layer-and-event-store).",
            id="django_mcp.W024",
        )
    ]


def _tasks_without_worker(task_tools: list[Any], alias: Any) -> list[Any]:
    if not task_tools or alias is None or framework.backend_path(alias) is None or not framework.runs_in_process(alias):
        return []
    return [
        Warning(
            f"Tool {task_tools[0].name!r} runs as a task on TASKS[{alias!r}] = {framework.backend_path(alias)}, "
            "which has no worker.",
            hint="Its tasks run inside the request that starts them (ImmediateBackend) or never (DummyBackend), and "
            "nothing survives a restart. In production use django_tasks_db.DatabaseBackend and run "
            "`manage.py db_worker` (docs/tasks.md#deploying-the-worker).",
            id="django_mcp.W025",
        )
    ]


#: A task ready this many seconds with no task started meanwhile means no worker takes them.
TASK_WORKER_SILENCE = 120.0


@register(Tags.database, deploy=True)
def check_task_worker(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[Any]:
    """``W026``: tasks wait in the database backend's queue and no worker has started one for a while.

    A database check: run only when asked for the database, as Django runs its own
    (``manage.py check --deploy --database default``); it reads the queue, never writes.
    """
    tools = [tool for server in _servers(site) for tool in server.tools.values() if tool.task_support]
    alias = mcp_settings.TASK_BACKEND if isinstance(mcp_settings.TASK_BACKEND, str) else None
    if not databases or not tools or alias is None or framework.backend_path(alias) != _DB_TASK_BACKEND:
        return []
    from django_tasks_db.models import DBTaskResult  # reason: only with the database backend installed

    database = router.db_for_read(DBTaskResult)
    if database not in databases:
        return []
    cutoff = timezone.now() - timedelta(seconds=TASK_WORKER_SILENCE)
    results = DBTaskResult.objects.using(database)
    try:
        waiting = results.filter(status="READY", run_after__lte=cutoff, backend_name=alias).count()
        started = results.filter(started_at__gte=cutoff, backend_name=alias).exists()
    except DatabaseError:
        return []  # no queue table yet (before migrate): nothing is waiting
    if not waiting or started:
        return []
    return [
        Warning(
            f"{waiting} task(s) have waited in TASKS[{alias!r}] for more than {TASK_WORKER_SILENCE:.0f} s and no "
            "task started meanwhile: no worker seems to run.",
            hint="Start `manage.py db_worker` (with --queue-name if TASK_QUEUE is not 'default') next to the web "
            "workers (docs/tasks.md#deploying-the-worker).",
            id="django_mcp.W026",
        )
    ]


_DB_TASK_BACKEND = "django_tasks_db.DatabaseBackend"


#: What the MCP spec's discovery order fetches for an issuer: RFC 8414 first, then OpenID discovery.
_AS_WELL_KNOWN = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


@register(Tags.urls)
def check_url_prefix(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """Where the URLconf mounts the package agrees with ``URL_PREFIX`` and ``ENDPOINT`` (E231-E234).

    Read from the URLconf itself (``reverse()``, ``resolve()``), at the root as under a prefix.
    """
    user = getattr(settings, "DJANGO_MCP", None) or {}
    if not isinstance(user, dict) or any(
        SETTINGS[key].problem(user[key]) is not None for key in ("ENDPOINT", "URL_PREFIX") if key in user
    ):
        return []  # E001/E105/E230 say it
    endpoint, prefix = mcp_settings.ENDPOINT, mcp_settings.URL_PREFIX
    errors: list[Any] = []
    if not (endpoint.rstrip("/") + "/").startswith(prefix):
        errors.append(
            Error(
                f"ENDPOINT {endpoint!r} is not under URL_PREFIX {prefix!r}.",
                hint="URL_PREFIX is where the project includes django_mcp.urls (and urls_wsgi); the endpoint lives "
                'under it, e.g. URL_PREFIX = ENDPOINT = "/plugins/mcp/".',
                id="django_mcp.E231",
            )
        )
    view_at = _reversed("mcp-endpoint")
    if view_at is not None and not _served_by_view(endpoint):
        errors.append(
            Error(
                f"django_mcp.urls_wsgi serves the MCP view at {view_at!r}, but ENDPOINT {endpoint!r} does not "
                "resolve to it: the OAuth metadata, the token audience and the Server Card name ENDPOINT.",
                hint="Include django_mcp.urls_wsgi where URL_PREFIX says (path(URL_PREFIX without its leading "
                '"/", include("django_mcp.urls_wsgi"))), or set URL_PREFIX to where it is included.',
                id="django_mcp.E232",
            )
        )
    for name, suffix, what in (
        ("mcp-ai-catalog", ".well-known/ai-catalog.json", "django_mcp.urls (discovery)"),
        ("oauth2_provider:oauth-resource-metadata", ".well-known/oauth-protected-resource", "the OAuth side"),
    ):
        at = _reversed(name)
        if at is not None and at.endswith(suffix) and at[: -len(suffix)] != prefix:
            errors.append(
                Error(
                    f"{what} is mounted under {at[: -len(suffix)]!r}, but URL_PREFIX is {prefix!r}.",
                    hint=f"Set URL_PREFIX = {at[: -len(suffix)]!r} (with ENDPOINT under it), or include "
                    "django_mcp.urls at URL_PREFIX.",
                    id="django_mcp.E233",
                )
            )
    if mcp_settings.AUTH == "oauth":
        errors.extend(_authorization_server_reachable())
    return errors


def _reversed(name: str) -> str | None:
    try:
        return str(reverse(name))
    except NoReverseMatch:
        return None
    except Exception:  # noqa: BLE001 - a broken URLconf is Django's own check to report
        return None


def _authorization_server_reachable() -> list[Any]:
    """E234: a client following the MCP spec from the PRM's issuer finds the authorization-server metadata."""
    from oauth2_provider.settings import oauth2_settings  # reason: DOT loads only once OAuth is on
    from oauth2_provider.views import ConnectDiscoveryInfoView, OAuthServerMetadataView  # reason: as above

    if oauth2_settings.OIDC_ISS_ENDPOINT or oauth2_settings.OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS:
        return []  # the issuer is set by hand (another authorization server, perhaps)
    metadata = _reversed("oauth2_provider:oauth-server-metadata")
    if _reversed("oauth2_provider:oauth-resource-metadata") is None or metadata is None:
        return []
    issuer = metadata[: -len(_AS_WELL_KNOWN[0])] if metadata.endswith(_AS_WELL_KNOWN[0]) else metadata
    if issuer:
        tried = [*(well_known + issuer for well_known in _AS_WELL_KNOWN), issuer + _AS_WELL_KNOWN[1]]
    else:
        tried = list(_AS_WELL_KNOWN)
    for url in tried:
        try:
            view = getattr(resolve(url).func, "view_class", None)
        except Resolver404:
            continue
        except Exception:  # noqa: BLE001 - a broken URLconf is Django's own check to report
            return []
        answers = (
            (OAuthServerMetadataView, ConnectDiscoveryInfoView)
            if oauth2_settings.OIDC_ENABLED
            else OAuthServerMetadataView
        )
        if isinstance(view, type) and issubclass(view, answers):  # DOT's OpenID view is a 404 without OIDC
            return []
    return [
        Error(
            f"The authorization server's metadata is not served where a client looks for issuer {issuer or '/'!r}: "
            f"none of {', '.join(tried)} answers it.",
            hint="Include django_mcp.urls (not oauth2_provider.urls) at URL_PREFIX: it serves the metadata at "
            "<URL_PREFIX>.well-known/openid-configuration under a prefix, and at the root as RFC 8414 says.",
            id="django_mcp.E234",
        )
    ]
