"""Django views as MCP tools: a real ``HttpRequest`` whose ``user`` is the MCP caller.

A view is already an API with its own checks (``login_required``,
``permission_required``, DRF permission classes...). Calling it with a request
built from the tool's arguments keeps all of them in force, instead of copying
them into the tool. The response is mapped back: 2xx is the result, 401/403 and
redirects to the login page are refusals, other 4xx/5xx are ``isError`` results
with the view's message. ``contrib.drf`` builds on the same request and mapping.

Importing this module gives ``MCPServer.register_view`` its tool maker (``server.hooks``).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, get_type_hints
from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.handlers.wsgi import WSGIRequest
from django.http import Http404, HttpResponseBase
from django.urls import NoReverseMatch, reverse
from django.utils.html import strip_tags
from pydantic import BaseModel, TypeAdapter

from .access import Check
from .audit.declaration import REDACTED, AuditPolicy
from .content import image
from .context import Context
from .exceptions import ToolError
from .runtime import project_middleware
from .runtime.project_middleware import build_request
from .server import hooks
from .signature import EMPTY, Parameter, Signature, arguments_model, model_name, model_parameters, parse_docstring
from .tools import TaskSupport, Tool

#: Keyword under which generated tool functions receive the ``Context``.
CTX = "mcp_ctx__"
#: Longest error text taken from a response body.
MAX_ERROR_TEXT = 2000
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})


def error_text(data: Any, prefix: str = "") -> list[str]:
    """Field messages of a DRF-style error body: ``{"title": ["This field is required."]}``."""
    if isinstance(data, Mapping):
        lines: list[str] = []
        for key, value in data.items():
            where = prefix if key in ("detail", "non_field_errors") else f"{prefix}{key}"
            lines.extend(error_text(value, f"{where}." if where else ""))
        return lines
    if isinstance(data, (list, tuple)):
        if all(not isinstance(v, (Mapping, list, tuple)) for v in data):
            label = prefix.rstrip(".")
            text = " ".join(str(v) for v in data)
            return [f"{label}: {text}" if label else text] if data else []
        lines = []
        for i, item in enumerate(data):
            lines.extend(error_text(item, f"{prefix}{i}."))
        return lines
    label = prefix.rstrip(".")
    return [f"{label}: {data}" if label else str(data)]


def body_text(response: HttpResponseBase) -> str:
    """A response body as plain text (HTML tags stripped), for messages."""
    raw = response_bytes(response)
    text = raw.decode(response.charset or "utf-8", errors="replace")
    if "html" in response.get("Content-Type", ""):
        text = re.sub(r"\s+", " ", strip_tags(text)).strip()
    return text[:MAX_ERROR_TEXT]


def response_bytes(response: HttpResponseBase) -> bytes:
    render = getattr(response, "render", None)
    if render is not None and not getattr(response, "is_rendered", True):
        render()
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)  # type: ignore[attr-defined]
    return bytes(response.content)  # type: ignore[attr-defined]


def refuse_or_fail(response: HttpResponseBase, message: str | None = None) -> None:
    """Raise for a response that is not a success; ``message`` overrides the body's text."""
    status = response.status_code
    if status < 300:
        return
    if status in (401, 403):
        raise PermissionDenied(message or body_text(response) or "Permission denied")
    if 300 <= status < 400:
        location = response.get("Location", "")
        if location.split("?")[0] == str(settings.LOGIN_URL).split("?")[0] or "login" in location:
            raise PermissionDenied("Authentication required")
        raise ToolError(f"The view redirected to {location}")
    if status >= 500:
        raise ToolError(f"The view failed (HTTP {status})")
    raise ToolError(message or body_text(response) or f"HTTP {status}")


def _arguments(arguments: type[BaseModel] | Mapping[str, Any] | None) -> list[Parameter]:
    """Declared arguments: a pydantic model or ``{name: type | (type, default)}``."""
    if arguments is None:
        return []
    if isinstance(arguments, type) and issubclass(arguments, BaseModel):
        return model_parameters(arguments)
    params: list[Parameter] = []
    for name, spec in arguments.items():
        ann, default = spec if isinstance(spec, tuple) else (spec, EMPTY)
        params.append(Parameter(name, ann, default))
    return params


def handler(body: Callable[[Context, dict[str, Any]], Any], *, is_async: bool = False) -> Callable[..., Any]:
    """The tool function: receives the arguments and the ``Context`` (under ``CTX``), calls ``body(ctx, args)``."""
    if is_async:

        async def call(**kwargs: Any) -> Any:
            ctx = kwargs.pop(CTX)
            return await body(ctx, kwargs)

        return call

    def call_sync(**kwargs: Any) -> Any:
        ctx = kwargs.pop(CTX)
        return body(ctx, kwargs)

    return call_sync


class ViewTool(Tool):
    """A tool that calls a Django view; see ``view_tool``."""

    view: Callable[..., Any]
    http_method: str
    url_kwargs: list[str]
    own_request = True


def view_tool(
    view: Callable[..., Any],
    *,
    name: str | None = None,
    method: str = "GET",
    arguments: type[BaseModel] | Mapping[str, Any] | None = None,
    output: Any = None,
    path: str | None = None,
    body: Literal["form", "json"] = "form",
    title: str | None = None,
    description: str | None = None,
    annotations: dict[str, Any] | None = None,
    scopes: Sequence[str] = (),
    permissions: Sequence[str] = (),
    check: Check | None = None,
    task: TaskSupport | None = None,
    audit: AuditPolicy = REDACTED,
) -> ViewTool:
    """Expose a function-based view as a tool.

    The view's own parameters after ``request`` become URL arguments (typed by
    their annotations, ``str`` by default); ``arguments`` declares the rest,
    sent as the query string for GET/DELETE and as the body (``form`` or
    ``json``) otherwise. ``output`` (a pydantic-compatible type) parses a JSON
    response into ``structuredContent`` and publishes its ``outputSchema``.
    ``task`` ("optional"/"required") runs the view as an MCP task (docs/tasks.md). ``annotations``
    add to (and override) the hints the HTTP method implies (``default_annotations``).
    ``audit`` says what the audit log keeps of a call (as for ``@site.tool``).
    """
    method = method.upper()
    sig = inspect.signature(view)
    hints = get_type_hints(view)
    doc, arg_docs = parse_docstring(inspect.getdoc(view))
    url_params = [
        Parameter(p.name, hints.get(p.name, str), p.default)
        for p in list(sig.parameters.values())[1:]
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    url_kwargs = [p.name for p in url_params]
    tool_name = name or view.__name__
    adapter = TypeAdapter(output) if output is not None else None
    is_async = inspect.iscoroutinefunction(view)

    def prepare(ctx: Context, args: dict[str, Any]) -> tuple[WSGIRequest, dict[str, Any]]:
        kwargs = {k: args.pop(k) for k in url_kwargs if k in args}
        data = {k: _plain(v) for k, v in args.items() if v is not None}
        try:
            where = path or reverse(view, kwargs=kwargs)
        except NoReverseMatch:
            where = "/"
        if method in WRITE_METHODS:
            if body == "json":
                request = build_request(
                    method, where, ctx, body=json.dumps(data).encode(), content_type="application/json"
                )
            else:
                encoded = urlencode(data, doseq=True).encode()
                request = build_request(
                    method, where, ctx, body=encoded, content_type="application/x-www-form-urlencoded"
                )
        else:
            request = build_request(method, where, ctx, query=data)
        return request, kwargs

    def finish(response: HttpResponseBase) -> Any:
        refuse_or_fail(response)
        if adapter is not None:
            return adapter.validate_json(response_bytes(response))
        content_type = response.get("Content-Type", "")
        if content_type.startswith("image/"):
            return image(response_bytes(response), content_type.split(";")[0])
        raw = response_bytes(response)
        return raw.decode(response.charset or "utf-8", errors="replace")

    def run_sync(ctx: Context, args: dict[str, Any]) -> Any:
        request, kwargs = prepare(ctx, args)
        try:
            response = project_middleware.run_sync(request, lambda r: view(r, **kwargs))
        except Http404 as exc:
            raise ToolError(str(exc) or "Not found") from None
        return finish(response)

    async def run_async(ctx: Context, args: dict[str, Any]) -> Any:
        request, kwargs = prepare(ctx, args)
        try:
            response = await project_middleware.run_async(request, lambda r: view(r, **kwargs))
        except Http404 as exc:
            raise ToolError(str(exc) or "Not found") from None
        return finish(response)

    params = [*url_params, *_arguments(arguments)]
    signature = Signature(
        arguments_model(model_name(tool_name), [replace(p, description=arg_docs.get(p.name)) for p in params]),
        ctx_param=CTX,
        returns=output if output is not None else Any,
        description=doc,
    )
    tool = ViewTool(
        handler(run_async if is_async else run_sync, is_async=is_async),
        name=tool_name,
        signature=signature,
        title=title,
        description=description,
        annotations={**default_annotations(method), **(annotations or {})},
        scopes=list(scopes),
        permissions=list(permissions),
        check=check,
        task_support=task,
        audit=audit,
    )
    tool.view, tool.http_method, tool.url_kwargs = view, method, url_kwargs
    return tool


def _plain(value: Any) -> Any:
    """Argument values as a view receives them (models dumped, lists kept for ``getlist``)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def default_annotations(method: str) -> dict[str, Any]:
    """Tool hints implied by the HTTP method (a client may show or confirm accordingly).

    All three hints host directories want (check ``W042``) are set: a view
    works on this site's own data, so ``openWorldHint`` is False (pass
    ``annotations={"openWorldHint": True}`` for a view that reaches other sites).
    """
    method = method.upper()
    if method in ("GET", "HEAD", "OPTIONS"):
        return {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}
    if method in ("DELETE", "PUT"):
        return {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
    return {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}


def _view_tools(view: Callable[..., Any], **options: Any) -> list[Tool]:
    return [view_tool(view, **options)]


hooks.tool_makers["view"] = _view_tools

__all__ = ["ViewTool", "build_request", "default_annotations", "error_text", "refuse_or_fail", "view_tool"]
