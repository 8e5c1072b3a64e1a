"""``MCPServer``: the registry of tools, resources and prompts, and the method handlers.

Like ``AdminSite``: a default instance ``site`` collects what apps declare in
their ``mcp.py`` (autodiscovered), and more servers can be mounted at other
paths. The server knows nothing of transports: it answers one request at a time
for an ``Exchange`` that carries the revision, the caller and the outlet.

The server is core (docs/architecture.md): it imports no mapping. ``ModelResource``, view and
DRF tools and MCP tasks plug in through ``hooks`` when their module is imported, and
``DjangoMCPConfig.ready()`` imports them, so ``site.register(ModelResource)``,
``site.register_view`` and ``task="optional"`` work as documented.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from django.core.exceptions import ImproperlyConfigured
from pydantic import ValidationError

from .access import Check, visible
from .audit.declaration import REDACTED, AuditPolicy
from .conf import mcp_settings
from .context import LOG_LEVELS, Context
from .exceptions import BeginTask, InputRequired, InvalidParams, MethodNotFound, ResourceNotFound, handle_exception
from .prompts import Prompt
from .protocol import cursor, extensions
from .protocol import skills as skill_rules
from .protocol.jsonrpc import ProtocolError
from .protocol.uri_template import URITemplate
from .protocol.versions import ALL_REVISIONS, at_least
from .resources import Completer, Resource, ResourceTemplate
from .runtime.sync_pool import drop_shared_connections, in_user_pool
from .runtime.unavailable import database_error
from .skills import HANDLERS as SKILL_HANDLERS
from .skills import Skill, from_folder, from_template, from_text
from .skills import target as skill_target
from .state.hub import hub, long_lived
from .tools import TaskSupport, Tool
from .version import __version__

if TYPE_CHECKING:
    from .model_resources import ModelResource  # annotations only: ModelResource plugs in through hooks.kinds
    from .runtime.engine import Exchange

F = TypeVar("F", bound=Callable[..., Any])
Handler = Callable[["MCPServer", dict[str, Any], "Exchange"], Awaitable[dict[str, Any]]]

CACHEABLE = frozenset(
    {
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "resources/read",
        "server/discover",
        "skills/list",
        "skills/get",
    }
)


#: Servers with task tools, by name: a task worker finds the server of the task it runs here.
servers: dict[str, MCPServer] = {}

ToolMaker = Callable[..., list[Tool]]


@dataclass
class TaskHooks:
    """The task branch of ``tools/call``, installed by ``django_mcp.tasks.methods``."""

    #: The extension ``server/discover`` announces for a server with task tools.
    extension: str
    #: ``(tool, params, exchange) -> bool``: whether this call becomes a task (raises when it cannot).
    wants_task: Callable[[Tool, dict[str, Any], Exchange], bool]
    #: ``(server, tool, kwargs, params, exchange, answers)``: store and enqueue it, the ``CreateTaskResult``.
    create: Callable[..., Awaitable[dict[str, Any]]]


@dataclass
class Hooks:
    """Where the mappings (layer 3) plug into the server, which imports none of them.

    Each mapping fills its part when its module is imported; ``DjangoMCPConfig.ready()``
    imports them all before autodiscovery, so every server sees them.
    """

    #: JSON-RPC methods every server answers beyond (or in place of) the core's: ``tasks/*``,
    #: ``resources/list`` with model objects. ``MCPServer.method`` still overrides them per server.
    methods: dict[str, Handler] = field(default_factory=dict)
    #: What ``MCPServer.register`` accepts beyond tools, resources and prompts, by base class:
    #: ``add(server, obj)`` gets the class or an instance (``ModelResource``).
    kinds: dict[type, Callable[[MCPServer, Any], Any]] = field(default_factory=dict)
    #: ``register_view`` (``"view"``) and ``register_drf`` (``"drf"``): a view to its tools.
    tool_makers: dict[str, ToolMaker] = field(default_factory=dict)
    tasks: TaskHooks | None = None
    #: ``hook(server, tool)`` for each tool added to a server: ``django_mcp.ui`` makes a tool's ``ui=`` an MCP App
    #: (its ``ui://`` resource and the app's render helper), which the core does not know how to render.
    tool_added: list[Callable[[MCPServer, Tool], None]] = field(default_factory=list)


hooks = Hooks()


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


class MCPServer:
    """A named MCP server: what it exposes and how it answers."""

    def __init__(self, name: str | None = None, *, version: str | None = None, instructions: str | None = None):
        self._name = name
        self._version = version
        self._instructions = instructions
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        #: Its skills, by the URI of their ``SKILL.md`` (``skill(...)``; ``django_mcp.site`` also the apps' own).
        self.skills: dict[str, Skill] = {}
        #: This server's own handlers (``method``), before ``hooks.methods`` and the defaults.
        self._handlers: dict[str, Handler] = {}

    @property
    def _registry(self) -> tuple[dict[str, Any], ...]:
        """Snapshot used by ``autodiscover_modules`` to roll back a failed ``mcp.py`` import."""
        return (dict(self.tools), dict(self.resources), dict(self.templates), dict(self.prompts), dict(self.skills))

    @_registry.setter
    def _registry(self, value: tuple[dict[str, Any], ...]) -> None:
        self.tools, self.resources, self.templates, self.prompts, self.skills = (dict(v) for v in value)

    # -- identity ------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name or mcp_settings.SERVER_NAME

    def server_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "name": self.name,
            "version": self._version or mcp_settings.SERVER_VERSION or __version__,
        }
        if mcp_settings.SERVER_TITLE:
            info["title"] = mcp_settings.SERVER_TITLE
        return info

    @property
    def instructions(self) -> str | None:
        return self._instructions or mcp_settings.INSTRUCTIONS

    def capabilities(self) -> dict[str, Any]:
        """What this server offers; in WSGI mode (no held streams) no list or resource notifications."""
        if not long_lived.get():
            return {"tools": {}, "resources": {}, "prompts": {}, "logging": {}, "completions": {}}
        return {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "logging": {},
            "completions": {},
        }

    # -- registration --------------------------------------------------------------
    def _check_new(self, registry: dict[str, Any], key: str, kind: str) -> None:
        if key in registry:
            raise ImproperlyConfigured(f"{kind} {key!r} is already registered on MCP server {self.name!r}")

    def add_tool(self, tool: Tool) -> Tool:
        self._check_new(self.tools, tool.name, "Tool")
        if tool.ui is not None and not hooks.tool_added:
            raise ImproperlyConfigured(
                f"Tool {tool.name!r} names a UI: MCP Apps need django_mcp in INSTALLED_APPS (django_mcp.ui)"
            )
        for hook in hooks.tool_added:
            hook(self, tool)
        self.tools[tool.name] = tool
        if tool.task_support in ("optional", "required"):
            servers.setdefault(self.name, self)
        return tool

    @property
    def has_task_tools(self) -> bool:
        return any(t.task_support in ("optional", "required") for t in self.tools.values())

    @property
    def has_ui_tools(self) -> bool:
        """Whether a tool has an MCP App or a visibility: the server then serves the ``ui`` extension."""
        return any(t.ui is not None or t.visibility is not None for t in self.tools.values())

    def extensions(self, client_capabilities: Any = None, *, stateless: bool = True) -> dict[str, Any]:
        """The extensions this server serves (``capabilities.extensions``), for ``server/discover`` and ``initialize``.

        In the handshake era only for a client that declared ``extensions`` itself (the schemas before
        2026-07-28 have no such member: a client that knows none of them is not sent one).
        """
        found: dict[str, Any] = {}
        if stateless and self.has_task_tools and hooks.tasks is not None:
            found[hooks.tasks.extension] = {}
        if self.has_ui_tools and (stateless or extensions.declared(client_capabilities, extensions.UI) is not None):
            found[extensions.UI] = {}
        if self.skills:  # new methods only, nothing changes for a client that knows none: declared to every client
            found[skill_rules.EXTENSION] = {"directoryRead": True}
        return found

    def tool(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        permissions: Sequence[str] = (),
        check: Check | None = None,
        input_schema: dict[str, Any] | None = None,
        task: TaskSupport | None = None,
        ask_first: bool = False,
        rate_limit: str | None = None,
        timeout: float | None = None,
        audit: AuditPolicy = REDACTED,
        ui: Any = None,
        visibility: Sequence[str] | None = None,
    ) -> Any:
        """Register a callable as a tool: ``@site.tool`` or ``@site.tool(name=..., title=...)``.

        ``input_schema`` publishes a hand-written JSON Schema verbatim in place of
        the one derived from the signature (which still validates the arguments).
        ``task="optional"`` lets a client that supports tasks get a task handle and
        the result later (the call runs on the ``TASKS`` backend's worker);
        ``task="required"`` only ever runs as a task. ``ask_first=True`` runs the tool
        in the request until ``ctx.begin_task()``, so what it asks before is answered
        there (see docs/tasks.md). ``rate_limit="10/minute"`` bounds each caller's calls of this tool and
        ``timeout=30`` its run time, in place of ``RATE_LIMITS["tool"]`` and ``TOOL_TIMEOUT``
        (docs/operations.md). ``audit`` says what the audit log keeps of each call:
        ``"redacted"`` arguments (the default), ``"hidden"`` (none), ``"full"`` (arguments and
        result) or ``False`` (no record; docs/operations.md). ``ui="app/ui/card.html"`` (or a
        ``django_mcp.ui.UI``) shows the result in hosts that render MCP Apps, rendered by that Django
        template; ``visibility=["app"]`` makes a helper only such an app calls (docs/apps.md).
        """

        def register(f: F) -> F:
            self.add_tool(
                Tool(
                    f,
                    name=name or _name(f),
                    title=title,
                    description=description,
                    annotations=annotations,
                    icons=icons,
                    meta=meta,
                    scopes=list(scopes),
                    permissions=list(permissions),
                    check=check,
                    input_schema=dict(input_schema or {}),
                    task_support=task,
                    ask_first=ask_first,
                    rate_limit=rate_limit,
                    timeout=timeout,
                    audit=audit,
                    ui=ui,
                    visibility=None if visibility is None else list(visibility),
                )
            )
            return f

        return register(fn) if fn is not None else register

    def _make_tools(self, kind: str, what: str, view: Any, **options: Any) -> list[Tool]:
        maker = hooks.tool_makers.get(kind)
        if maker is None:
            raise ImproperlyConfigured(f"{what} needs {_MAKERS_NEED[kind]}")
        return [self.add_tool(t) for t in maker(view, **options)]

    def register_drf(self, view: Any, *, action: str | None = None, **options: Any) -> list[Tool]:
        """Register a DRF view, ``@api_view`` function or viewset as tools (see ``contrib.drf``).

        A viewset without ``action`` gives one tool per action (``book_list``,
        ``book_create``...); ``actions=[...]`` picks some. Needs the ``drf`` extra.
        """
        return self._make_tools("drf", "register_drf", view, action=action, **options)

    def drf_tool(self, **options: Any) -> Callable[[F], F]:
        """Decorator form of ``register_drf`` for an ``APIView``, viewset or ``@api_view`` function."""

        def register(view: F) -> F:
            self.register_drf(view, **options)
            return view

        return register

    def register_view(self, view: Callable[..., Any], **options: Any) -> Tool:
        """Register a function-based Django view as a tool (see ``view_tools.view_tool``)."""
        (tool,) = self._make_tools("view", "register_view", view, **options)
        return tool

    def view_tool(self, **options: Any) -> Callable[[F], F]:
        """Decorator form of ``register_view``: ``@site.view_tool(method="POST", arguments={...})``."""

        def register(view: F) -> F:
            self.register_view(view, **options)
            return view

        return register

    def add_resource(self, resource: Resource) -> Resource:
        if isinstance(resource, ResourceTemplate):
            self._check_new(self.templates, resource.uri, "Resource template")
            self.templates[resource.uri] = resource
        else:
            self._check_new(self.resources, resource.uri, "Resource")
            self.resources[resource.uri] = resource
        return resource

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        annotations: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        complete: dict[str, Completer | Sequence[str]] | None = None,
        scopes: Sequence[str] = (),
        permissions: Sequence[str] = (),
        check: Check | None = None,
        audit: AuditPolicy = REDACTED,
    ) -> Callable[[F], F]:
        """Register a function as a resource; a URI with ``{var}`` makes a template.

        ``audit=False`` keeps its reads out of the audit log (a read has no arguments to hide).
        """

        def register(f: F) -> F:
            kwargs: dict[str, Any] = dict(
                uri=uri,
                fn=f,
                name=name or _name(f),
                title=title,
                description=description if description is not None else inspect.getdoc(f),
                mime_type=mime_type,
                icons=icons,
                annotations=annotations,
                meta=meta,
                scopes=list(scopes),
                permissions=list(permissions),
                check=check,
                audit=audit,
            )
            if URITemplate.is_template(uri):
                self.add_resource(ResourceTemplate(**kwargs, complete=dict(complete or {})))
            else:
                self.add_resource(Resource(**kwargs))
            return f

        return register

    def add_skill(self, skill: Skill) -> Skill:
        """Serve ``skill``: its entry in ``skills/list`` and its files as resources (``SKILL.md`` listed)."""
        self._check_new(self.skills, skill.uri, "Skill")
        self._check_new(self.resources, skill.manifest.uri, "Resource")
        self._check_new(self.templates, skill.files.uri, "Resource template")
        self.skills[skill.uri] = skill
        self.resources[skill.manifest.uri] = skill.manifest
        self.templates[skill.files.uri] = skill.files
        return skill

    def skill(
        self,
        path: str,
        *,
        folder: str | Any = None,
        text: str | None = None,
        template: str | None = None,
        context: dict[str, Any] | None = None,
        files: dict[str, bytes | str] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        permissions: Sequence[str] = (),
        check: Check | None = None,
        audit: AuditPolicy = REDACTED,
    ) -> Skill:
        """Serve a skill at ``skill://<path>/SKILL.md``, from a ``folder``, a ``text`` or a Django ``template``.

        ``template`` is rendered once, when the skill is first needed, with ``context``; ``files`` adds
        the other files of a ``text`` or ``template`` skill (path -> content). The last segment of ``path``
        is the skill's name, which its frontmatter's ``name`` must equal. ``scopes``, ``permissions`` and
        ``check`` decide who sees it, as for a tool (docs/skills.md).
        """
        if sum(x is not None for x in (folder, text, template)) != 1:
            raise ImproperlyConfigured(f"Skill {path!r}: give exactly one of folder=, text= or template=")
        options: dict[str, Any] = dict(
            meta=meta, scopes=list(scopes), permissions=list(permissions), check=check, audit=audit
        )
        try:
            if folder is not None:
                made = from_folder(folder, path, **options)
            elif text is not None:
                made = from_text(path, text, files, **options)
            else:
                assert template is not None
                made = from_template(path, template, context, files, **options)
        except skill_rules.SkillError as exc:
            raise ImproperlyConfigured(f"Skill {path!r}: {exc}") from None
        return self.add_skill(made)

    def add_prompt(self, prompt: Prompt) -> Prompt:
        self._check_new(self.prompts, prompt.name, "Prompt")
        self.prompts[prompt.name] = prompt
        return prompt

    def prompt(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        complete: dict[str, Completer | Sequence[str]] | None = None,
        scopes: Sequence[str] = (),
        permissions: Sequence[str] = (),
        check: Check | None = None,
        audit: AuditPolicy = REDACTED,
    ) -> Any:
        """Register a function as a prompt; ``audit`` as for tools (what the audit log keeps of a ``prompts/get``)."""

        def register(f: F) -> F:
            self.add_prompt(
                Prompt(
                    f,
                    name=name or _name(f),
                    title=title,
                    description=description,
                    icons=icons,
                    complete=dict(complete or {}),
                    scopes=list(scopes),
                    permissions=list(permissions),
                    check=check,
                    audit=audit,
                )
            )
            return f

        return register(fn) if fn is not None else register

    def register(self, obj: Any) -> Any:
        """Register a ``Tool``, ``Resource``, ``ResourceTemplate`` or ``Prompt`` object, or a ``ModelResource``.

        A ``ModelResource`` subclass is instantiated once and the class returned,
        so ``@site.register`` works as a class decorator (``hooks.kinds``).
        """
        if isinstance(obj, Tool):
            return self.add_tool(obj)
        if isinstance(obj, Resource):
            return self.add_resource(obj)
        if isinstance(obj, Prompt):
            return self.add_prompt(obj)
        for kind, add in hooks.kinds.items():
            if isinstance(obj, kind) or (isinstance(obj, type) and issubclass(obj, kind)):
                return add(self, obj)
        raise TypeError(f"Cannot register {obj!r} on an MCP server")

    @property
    def model_resources(self) -> list[ModelResource]:
        """Registered ``ModelResource`` instances, in registration order (their templates carry them)."""
        return [t.resource for t in self.templates.values() if t.resource is not None]

    def model_resource_for(self, model: type[Any]) -> ModelResource | None:
        return next((r for r in self.model_resources if r.model is model), None)

    def method(self, name: str) -> Callable[[Handler], Handler]:
        """Register or override the handler of a JSON-RPC method."""

        def register(fn: Handler) -> Handler:
            self._handlers[name] = fn
            return fn

        return register

    # -- change notifications -------------------------------------------------------
    async def notify_list_changed(self, kind: str) -> None:
        """Tell every connected client that the tools/resources/prompts list changed."""
        await hub.broadcast_or_log({"kind": "list_changed", "list": kind})

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell subscribers that the resource at ``uri`` changed."""
        await hub.broadcast_or_log({"kind": "resource_updated", "uri": uri})

    # -- dispatch ------------------------------------------------------------------
    def target(self, method: str, params: dict[str, Any]) -> Any:
        """The tool, prompt, resource or resource template a request names, or None.

        Looked up once per request (by the dispatch path, for header and scope checks) and
        carried on the exchange, so the handler does not look it up again.
        """
        if method == "tools/call":
            name = params.get("name")
            return self.tools.get(name) if isinstance(name, str) else None
        if method == "prompts/get":
            name = params.get("name")
            return self.prompts.get(name) if isinstance(name, str) else None
        if method in skill_rules.METHODS:
            return skill_target(self, method, params)
        if method in ("resources/read", "resources/subscribe"):
            uri = params.get("uri")
            if isinstance(uri, str):
                found = self.resources.get(uri)
                if found is None:
                    found = next((t for t in self.templates.values() if t.template.match(uri) is not None), None)
                return found
        return None

    def completed(self, params: dict[str, Any]) -> Any:
        """The prompt or resource template a ``completion/complete`` request completes an argument of, or None.

        Completing an argument is using that prompt or template: the call needs its scopes (step-up).
        """
        ref = params.get("ref")
        if not isinstance(ref, dict):
            return None
        if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
            return self.prompts.get(ref["name"])
        if ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str):
            return self.templates.get(ref["uri"])
        return None

    def handles(self, method: str) -> bool:
        """Whether this server answers requests of ``method`` (else they get -32601)."""
        return method in self._handlers or method in hooks.methods or method in DEFAULT_HANDLERS

    async def handle(self, method: str, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
        handler = self._handlers.get(method) or hooks.methods.get(method) or DEFAULT_HANDLERS.get(method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}")
        return await handler(self, params, ex)

    def initialize_result(self, revision: str, client_capabilities: Any = None) -> dict[str, Any]:
        capabilities = self.capabilities()
        if at_least(revision, "2025-11-25") and self.has_task_tools:
            capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        served = self.extensions(client_capabilities, stateless=False)
        if served:
            capabilities["extensions"] = served
        result: dict[str, Any] = {
            "protocolVersion": revision,
            "capabilities": capabilities,
            "serverInfo": self.server_info(),
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def page(self, items: list[dict[str, Any]], params: dict[str, Any], kind: str, key: str) -> dict[str, Any]:
        size = mcp_settings.PAGE_SIZE
        offset = cursor.decode(params.get("cursor"), kind)
        result: dict[str, Any] = {key: items[offset : offset + size]}
        if offset + size < len(items):
            result["nextCursor"] = cursor.encode(offset + size, kind)
        return result


# ---------------------------------------------------------------------------------
# Method handlers. Each takes (server, params, exchange) and returns a result dict.


async def _ping(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    return {}


async def _set_level(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    level = params.get("level")
    if level not in LOG_LEVELS:
        raise InvalidParams(f"Unknown log level: {level!r}")
    await ex.set_log_level(level)
    return {}


async def _discover(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    capabilities = server.capabilities()
    served = server.extensions()
    if served:
        capabilities["extensions"] = served
    result: dict[str, Any] = {
        "supportedVersions": list(ALL_REVISIONS),
        "capabilities": capabilities,
        "serverInfo": server.server_info(),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


async def _list_tools(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    if server.has_ui_tools and not extensions.supports_ui(ex.client_capabilities):
        return await _list_tools_without_apps(server, params, [t for t in server.tools.values() if not t.app_only], ex)
    if not server.has_task_tools or ex.stateless:
        items = [t.definition() for t in server.tools.values() if await visible(t, ex) and t.built()]
        return server.page(items, params, "tools", "tools")
    # 2025-11-25 announces each tool's task support; older clients cannot run a task-only tool.
    tasks_era = at_least(ex.revision, "2025-11-25")
    items = []
    for t in server.tools.values():
        if (t.task_support == "required" and not tasks_era) or not await visible(t, ex) or not t.built():
            continue
        d = t.definition()
        if tasks_era and t.task_support:
            d["execution"] = {"taskSupport": t.task_support}
        items.append(d)
    return server.page(items, params, "tools", "tools")


async def _list_tools_without_apps(
    server: MCPServer, params: dict[str, Any], tools: list[Tool], ex: Exchange
) -> dict[str, Any]:
    """``tools/list`` for a client that renders no MCP Apps: no app-only helpers, no ``_meta.ui``."""
    tasks_era = server.has_task_tools and not ex.stateless and at_least(ex.revision, "2025-11-25")
    items = []
    for t in tools:
        if (
            (t.task_support == "required" and not ex.stateless and not tasks_era)
            or not await visible(t, ex)
            or not t.built()
        ):
            continue
        d = t.definition()
        meta = d.get("_meta")
        if meta is not None:
            meta = {k: v for k, v in meta.items() if k not in (extensions.UI_META, extensions.UI_RESOURCE_URI_FLAT)}
            if meta:
                d["_meta"] = meta
            else:
                del d["_meta"]
        if tasks_era and t.task_support:
            d["execution"] = {"taskSupport": t.task_support}
        items.append(d)
    return server.page(items, params, "tools", "tools")


async def _call_tool(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    name = params.get("name")
    tool: Tool | None = ex.target
    if (
        tool is None
        or (tool.app_only and not extensions.supports_ui(ex.client_capabilities))
        or not await visible(tool, ex)
    ):
        raise InvalidParams(f"Unknown tool: {name}", {"name": name})
    if not tool.built():
        return {
            "content": [
                {"type": "text", "text": f"Tool {name!r} is not available: it is misconfigured on the server."}
            ],
            "isError": True,
        }
    try:
        kwargs = tool.parse_arguments(params.get("arguments"))
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        return {
            "content": [{"type": "text", "text": f"Invalid arguments for tool {name!r}: {details}"}],
            "isError": True,
        }
    # A ``task`` parameter on a tool without task support is refused too (-32601, 2025-11-25).
    tasks = hooks.tasks
    if (tool.task_support is not None or "task" in params) and not getattr(ex, "in_task", False):
        if tasks is None:
            raise MethodNotFound(f"Tool {tool.name!r}: task execution is not installed (django_mcp.tasks)")
        as_task = tasks.wants_task(tool, params, ex)
        if as_task and not tool.ask_first:
            return await tasks.create(server, tool, kwargs, params, ex, {})
        ex.task_pending = as_task
    ctx = Context(ex)
    try:
        value = await tool.run(kwargs, ctx)
    except BeginTask as begin:
        if tasks is None:  # begin_task() outside a task tool: wants_task never ran
            raise MethodNotFound(f"Tool {tool.name!r}: task execution is not installed (django_mcp.tasks)") from None
        return await tasks.create(server, tool, kwargs, params, ex, begin.answers)
    except (InputRequired, ProtocolError):
        raise
    except Exception as exc:  # user code: the exception handler turns it into an isError result
        lost = database_error(exc)
        if lost is not None:  # an async tool's ORM call (sync tools' are mapped by the pool): retryable
            await drop_shared_connections()
            raise lost from exc
        result = handle_exception(mcp_settings.EXCEPTION_HANDLER, exc, exception_context(server, tool, kwargs, ctx))
        if result is None:
            raise
        return result
    return tool.to_result(value)


def exception_context(server: MCPServer, tool: Tool, kwargs: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """What ``EXCEPTION_HANDLER(exc, context)`` learns about the failed call (DRF-style ``context``)."""
    return {
        "tool": tool.name,
        "user": ctx.user,
        "session_id": ctx.session_id,
        "request_id": ctx.request_id,
        "client_id": ctx.client_id,
        "revision": ctx.protocol_version,
        "arguments": {k: v for k, v in kwargs.items() if k != tool.ctx_param},
        "server": server,
        "ctx": ctx,
    }


async def _list_resources(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    """The static resources (``model_resources`` replaces this to list model objects after them)."""
    items = [r.definition() for r in server.resources.values() if await visible(r, ex)]
    return server.page(items, params, "resources", "resources")


async def _list_templates(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    items = [t.definition() for t in server.templates.values() if await visible(t, ex)]
    return server.page(items, params, "templates", "resourceTemplates")


async def _find_resource(server: MCPServer, uri: str, ex: Exchange) -> tuple[Resource, dict[str, str]]:
    res = server.resources.get(uri)
    if res is not None and await visible(res, ex):
        return res, {}
    for tpl in server.templates.values():
        variables = tpl.template.match(uri)
        if variables is not None and await visible(tpl, ex):
            return tpl, variables
    raise ResourceNotFound(uri)


async def _read_resource(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    uri = params["uri"]
    res, variables = await _find_resource(server, uri, ex)
    return {"contents": await res.read(uri, variables, Context(ex))}


async def check_subscription(server: MCPServer, uri: str, ex: Exchange) -> None:
    """``ResourceNotFound`` unless ``ex``'s caller may subscribe to ``uri``.

    The one rule for ``resources/subscribe`` and ``subscriptions/listen``: the resource must be
    one the caller could read (token scopes, Django permissions, ``check``; for a model object,
    the object itself), so subscribing never reveals what reading would refuse.
    """
    res, variables = await _find_resource(server, uri, ex)
    await res.ensure_exists(uri, variables, Context(ex))


async def _subscribe(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    uri = params["uri"]
    await check_subscription(server, uri, ex)
    await ex.subscribe(uri, True)
    return {}


async def _unsubscribe(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    await ex.subscribe(params["uri"], False)
    return {}


async def _list_prompts(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    items = [p.definition() for p in server.prompts.values() if await visible(p, ex)]
    return server.page(items, params, "prompts", "prompts")


async def _get_prompt(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    name = params["name"]
    prompt: Prompt | None = ex.target
    if prompt is None or not await visible(prompt, ex):
        raise InvalidParams(f"Unknown prompt: {name}", {"name": name})
    arguments = params.get("arguments") or {}
    missing = prompt.check_arguments(arguments)
    if missing:
        raise InvalidParams(f"Missing required arguments: {', '.join(missing)}", {"missing": missing})
    return await prompt.render(arguments, Context(ex))


async def _complete(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    ref = params["ref"]
    arg = params["argument"]
    completers: dict[str, Completer | Sequence[str]] = {}
    tpl: ResourceTemplate | None = None
    if ref.get("type") == "ref/prompt":
        prompt = server.prompts.get(ref.get("name", ""))
        if prompt is None or not await visible(prompt, ex):
            raise InvalidParams(f"Unknown prompt: {ref.get('name')}")
        completers = prompt.complete
    elif ref.get("type") == "ref/resource":
        tpl = server.templates.get(ref.get("uri", ""))
        if tpl is None or not await visible(tpl, ex):
            raise InvalidParams(f"Unknown resource template: {ref.get('uri')}")
        completers = tpl.complete
    else:
        raise InvalidParams(f"Unknown reference type: {ref.get('type')!r}")
    source = completers.get(arg["name"])
    value = arg.get("value", "")
    context_args = (params.get("context") or {}).get("arguments") or {}
    values: list[str]
    own = None
    if tpl is not None and source is None:  # a template that completes its own variables (a ModelResource)
        own = await tpl.completion_values(Context(ex), arg["name"], str(value), dict(context_args))
    if own is not None:
        values, total = own
        completion: dict[str, Any] = {"values": values, "hasMore": total is None or total > len(values)}
        if total is not None:
            completion["total"] = total
        return {"completion": completion}
    if source is None:
        values = []
    elif callable(source):
        kwargs: dict[str, Any] = {}
        sig = inspect.signature(source)
        if "context" in sig.parameters:
            kwargs["context"] = context_args
        if "ctx" in sig.parameters:
            kwargs["ctx"] = Context(ex)
        # Sync completers run in a thread, like tools: they may query the database.
        got = await in_user_pool(source)(value, **kwargs)
        if inspect.isawaitable(got):
            got = await got
        values = [str(v) for v in got]
    else:
        values = [v for v in source if str(v).startswith(value)]
    total = len(values)
    return {"completion": {"values": values[:100], "total": total, "hasMore": total > 100}}


DEFAULT_HANDLERS: dict[str, Handler] = {
    "ping": _ping,
    "logging/setLevel": _set_level,
    "server/discover": _discover,
    "tools/list": _list_tools,
    "tools/call": _call_tool,
    "resources/list": _list_resources,
    "resources/templates/list": _list_templates,
    "resources/read": _read_resource,
    "resources/subscribe": _subscribe,
    "resources/unsubscribe": _unsubscribe,
    "prompts/list": _list_prompts,
    "prompts/get": _get_prompt,
    "completion/complete": _complete,
    **SKILL_HANDLERS,
}

_MAKERS_NEED = {"view": "django_mcp.view_tools", "drf": "Django REST framework: pip install django-mcp-toolkit[drf]"}

#: The default server, ``django_mcp.site``: what apps' ``mcp.py`` modules declare on (autodiscovered).
#: Making it reads no setting (its name and version are looked up when asked), so this is import-safe.
site = MCPServer()

__all__ = ["CACHEABLE", "Hooks", "InputRequired", "MCPServer", "TaskHooks", "hooks", "site"]
