"""Tool declaration: a Python callable becomes an MCP tool.

The signature becomes a pydantic model (JSON Schema 2020-12 with ``$defs`` for
the ``inputSchema``), the docstring the description, and a typed return the
``outputSchema`` plus ``structuredContent``; ``django_mcp.signature`` reads them.
Sync callables run in the bounded sync pool (``django_mcp.runtime.sync_pool``); async ones
run on the event loop.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

import mcp_types
from django.db import DatabaseError, connections
from pydantic import BaseModel, TypeAdapter

from .access import Check, Guard
from .audit.declaration import REDACTED, AuditPolicy, check_policy
from .conf import mcp_settings
from .content import CONTENT_TYPES, dump
from .context import Context
from .limits import rates
from .protocol import extensions
from .runtime import project_middleware
from .runtime.sync_pool import user_pool
from .signature import Signature
from .state.writelock import tool_transaction

R = TypeVar("R")

logger = logging.getLogger("django_mcp.tools")

#: Attributes a deferred tool (``Tool.deferred``) builds on first read.
_DEFERRED = frozenset({"input_schema", "input_model", "output_schema", "output_adapter", "wrap_output"})

#: Held while a deferred tool is built (once per tool and process).
_building = threading.RLock()


def _outside_event_loop(build: Callable[[], R]) -> R:
    """``build()`` on this thread, or, when an event loop runs here (a Channels ``tools/list``), on a thread of
    its own: building may query the database, which Django refuses in async code. The loop waits for it, once
    per tool and process; the thread's connections are closed after."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return build()

    def in_thread() -> R:
        try:
            return build()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1, thread_name_prefix="mcp-schema") as pool:
        return pool.submit(in_thread).result()


#: How a tool runs as an MCP task (``@site.tool(task=...)``; ``django_mcp.tasks`` runs them).
TaskSupport = Literal["optional", "required", "forbidden"]


@dataclass
class Tool(Guard):
    """A registered tool. Build one with ``MCPServer.tool``."""

    fn: Callable[..., Any]
    name: str
    title: str | None = None
    description: str | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    scopes: list[str] = field(default_factory=list)
    #: Django permissions (``"app.codename"``) the caller needs; see ``access``.
    permissions: list[str] = field(default_factory=list)
    check: Check | None = None
    #: Publish this JSON Schema as the ``inputSchema`` instead of the one derived from the
    #: signature (for keywords a signature cannot express); arguments are still validated
    #: against the signature.
    input_schema: dict[str, Any] = field(default_factory=dict)
    #: "optional" or "required": the call may (must) run as an MCP task on the Tasks framework.
    task_support: str | None = None
    #: Run in the request until ``ctx.begin_task()`` (questions asked before it are answered there).
    ask_first: bool = False
    #: Calls each caller may make, in the ``limits`` syntax (``"10/minute"``); None: ``RATE_LIMITS["tool"]``.
    rate_limit: str | None = None
    #: The tool builds the request the project's middleware runs on itself (a view or DRF tool: the view's own
    #: request); ``run`` then adds no plain call request around it.
    own_request: ClassVar[bool] = False
    #: Seconds a call (or a task's run) may take before it answers a timed-out tool error; None: the
    #: ``TOOL_TIMEOUT`` (``TASK_TIMEOUT`` for a task's run) setting, ``math.inf``: none.
    timeout: float | None = None
    #: What the audit log keeps of a call (``django_mcp.audit.declaration``): "redacted", "hidden", "full" or False.
    audit: AuditPolicy = REDACTED
    #: The MCP App that shows this tool's results in a host (``django_mcp.ui.UI``, or a template name that
    #: ``django_mcp.ui`` makes one of when the tool is added to a server); None: text only.
    ui: Any = None
    #: Who may call it (MCP Apps): ``["model", "app"]`` (None, the default), ``["app"]`` for a helper only the
    #: app in the host calls (hidden from clients that render no apps), ``["model"]`` for one the app may not.
    visibility: list[str] | None = None
    ctx_param: str | None = None
    #: How the tool is called (arguments model, Context parameter, output); read from ``fn`` when not given.
    #: View and DRF tools pass one built from their declared arguments.
    signature: Signature | None = None
    #: Builds the signature (and the published input schema, or None for the signature's) on first use, for
    #: tools whose schemas need the project running (DRF tools: views, serializers and filtersets are
    #: introspected then, never while Django starts). ``signature`` and ``input_schema`` stay unset until then.
    deferred: Callable[[], tuple[Signature, dict[str, Any] | None]] | None = field(default=None, repr=False)
    # Set from the signature: in ``__post_init__``, or on first read for a deferred tool (``__getattr__``).
    input_model: type[BaseModel] = field(init=False)
    output_schema: dict[str, Any] | None = field(init=False)
    output_adapter: TypeAdapter[Any] | None = field(init=False)
    wrap_output: bool = field(init=False)
    is_async: bool = field(init=False, default=False)
    _runner: Callable[..., Awaitable[Any]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        fn = self.fn
        self.is_async = inspect.iscoroutinefunction(fn)
        if self.deferred is None:
            self._adopt(self.signature or Signature.from_callable(fn, name=self.name), self.input_schema or None)
        else:
            del self.input_schema  # read through __getattr__, which builds the signature
        if self.task_support not in (None, "optional", "required", "forbidden"):
            raise TypeError(f"Tool {self.name!r}: task must be 'optional', 'required' or 'forbidden'")
        if self.task_support == "forbidden":
            self.task_support = None
        if not rates.valid(self.rate_limit):
            raise TypeError(
                f"Tool {self.name!r}: rate_limit must be a rate such as '10/minute', not {self.rate_limit!r}"
            )
        if self.timeout is not None and (
            isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or not self.timeout > 0
        ):
            raise TypeError(f"Tool {self.name!r}: timeout must be a positive number of seconds, not {self.timeout!r}")
        self.audit = check_policy(self.audit, "Tool", self.name)
        if self.visibility is not None:
            if (
                isinstance(self.visibility, str)
                or not self.visibility
                or not set(self.visibility) <= extensions.VISIBILITIES
            ):
                raise TypeError(
                    f"Tool {self.name!r}: visibility must be a list of 'model' and 'app', not {self.visibility!r}"
                )
            self.visibility = sorted(set(self.visibility), key=["model", "app"].index)
        self._runner = user_pool.wrap(self._call_sync)

    def _adopt(self, sig: Signature, input_schema: dict[str, Any] | None) -> None:
        """Take the arguments model, schemas and output handling from ``sig``."""
        if input_schema is not None and input_schema.get("type") != "object":
            raise TypeError(f"Tool {self.name!r}: input_schema must be a JSON Schema with type 'object'")
        self.signature = sig
        if self.description is None:
            self.description = sig.description
        self.ctx_param = sig.ctx_param
        self.input_model = sig.arguments
        self.input_schema = input_schema if input_schema is not None else sig.input_schema()
        self.output_schema = sig.output_schema
        self.output_adapter = sig.output_adapter
        self.wrap_output = sig.wrap_output

    def __getattr__(self, name: str) -> Any:
        """A deferred tool's schemas, built on the first read of any of them (Python calls this only for an
        attribute the instance lacks, so a built tool pays nothing)."""
        deferred = self.__dict__.get("deferred")
        if deferred is None or name not in _DEFERRED:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        with _building:  # one build, whichever thread asks first; the others wait for it
            if "input_model" not in self.__dict__:
                self._adopt(*_outside_event_loop(deferred))
                self.deferred = None
        return getattr(self, name)

    def prepare(self) -> None:
        """Build a deferred tool's schemas now (``manage.py check`` does, to report what is wrong)."""
        _ = self.input_model

    def build_error(self) -> Exception | None:
        """Build a deferred tool's schemas now: the error that stops it (a write view without a serializer...),
        None once built. A database error is raised: nothing is wrong with the tool, the database is not there."""
        if "input_model" in self.__dict__:
            return None
        try:
            self.prepare()
        except DatabaseError:
            raise
        except Exception as exc:  # noqa: BLE001 - returned, for the caller to log or report
            return exc
        return None

    def built(self) -> bool:
        """Whether the schemas are there, a deferred tool building them now. One whose build fails is logged and
        left out of ``tools/list`` rather than failing every tool's listing (``manage.py check`` reports it as
        ``E010``); it is tried again next time. A database error is raised: the caller answers that the service
        is unavailable, as for any query."""
        error = self.build_error()
        if error is None:
            return True
        logger.error(
            "Tool %r is left out: its schemas cannot be built (manage.py check says why)", self.name, exc_info=error
        )
        return False

    @property
    def read_only(self) -> bool:
        """Annotated ``readOnlyHint: true``: on SQLite its transaction never takes the write lock."""
        return bool(self.annotations and self.annotations.get("readOnlyHint") is True)

    def _call_sync(self, ctx: Context, kwargs: dict[str, Any]) -> Any:
        """Run a sync tool in its thread, in a savepoint when ``ATOMIC_TOOL_CALLS`` is on.

        The savepoint lives on the thread that does the work, so an exception
        (``ToolError`` included) rolls back every write of the call. Async tools
        are not wrapped: their ORM calls hop to asgiref's thread shared with other
        requests, where a transaction spanning ``await`` points cannot live. The
        project's middleware (``project_middleware``) runs inside the savepoint, on
        this thread, so what it records belongs to the call and its thread-locals
        are the tool's.
        """
        if mcp_settings.ATOMIC_TOOL_CALLS:
            with tool_transaction(read_only=self.read_only):
                return self._in_project(ctx, kwargs)
        return self._in_project(ctx, kwargs)

    def _in_project(self, ctx: Context, kwargs: dict[str, Any]) -> Any:
        if self.own_request or not project_middleware.active():
            return self.fn(**kwargs)
        return project_middleware.run_sync(project_middleware.call_request(ctx), lambda _request: self.fn(**kwargs))

    def definition(self) -> dict[str, Any]:
        """The newest-revision wire form; shaping prunes it for older clients."""
        d: dict[str, Any] = {"name": self.name, "inputSchema": self.input_schema}
        if self.title:
            d["title"] = self.title
        if self.description:
            d["description"] = self.description
        if self.output_schema is not None:
            d["outputSchema"] = self.output_schema
        if self.annotations:
            d["annotations"] = self.annotations
        if self.icons:
            d["icons"] = self.icons
        meta = self.meta
        uri = getattr(self.ui, "uri", None)
        if uri is not None or self.visibility is not None:
            ui: dict[str, Any] = {} if uri is None else {"resourceUri": uri}
            if self.visibility is not None:
                ui["visibility"] = list(self.visibility)
            meta = {**(meta or {}), extensions.UI_META: ui}
            if uri is not None:
                meta[extensions.UI_RESOURCE_URI_FLAT] = uri
        if meta:
            d["_meta"] = meta
        return d

    @property
    def app_only(self) -> bool:
        """Only an MCP App calls it (``visibility=["app"]``): clients that render no apps neither see nor call it."""
        return self.visibility is not None and "model" not in self.visibility

    def parse_arguments(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Validate arguments; raises ``pydantic.ValidationError``."""
        model = self.input_model.model_validate(arguments or {})
        return dict(model.__dict__)  # the fields, and only them (extra="forbid"); no model_fields lookup per call

    async def run(self, kwargs: dict[str, Any], ctx: Context) -> Any:
        if self.ctx_param:
            kwargs[self.ctx_param] = ctx
        if not self.is_async:
            return await self._runner(ctx, kwargs)
        if self.own_request or not project_middleware.active():
            return await self.fn(**kwargs)
        request = project_middleware.call_request(ctx)
        return await project_middleware.run_async(request, lambda _request: self.fn(**kwargs))

    def to_result(self, value: Any) -> dict[str, Any]:
        """Turn what the callable returned into a CallToolResult dict."""
        if isinstance(value, mcp_types.CallToolResult):
            return value.model_dump(by_alias=True, exclude_none=True, mode="json")
        if self.output_adapter is not None:
            structured = self.output_adapter.dump_python(value, mode="json")
            if self.wrap_output:
                structured = {"result": structured}
            return {
                "content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
                "structuredContent": structured,
            }
        return {"content": to_content(value)}


def to_content(value: Any) -> list[dict[str, Any]]:
    """Unstructured return values: text, content blocks, lists of them, or JSON text."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, CONTENT_TYPES):
        return [dump(value)]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, CONTENT_TYPES) for v in value):
        return [dump(v) for v in value]
    if isinstance(value, BaseModel):
        return [{"type": "text", "text": value.model_dump_json()}]
    return [{"type": "text", "text": json.dumps(value, ensure_ascii=False, default=str)}]
