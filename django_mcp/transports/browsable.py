"""The browsable endpoint: ``GET /mcp/`` from a browser shows the server, as DRF's browsable API does.

A request a browser makes (``GET``/``HEAD`` accepting ``text/html`` without an MCP session, or a
form ``POST``) gets a page in the admin's look instead of the MCP endpoint's answers: the server,
its revisions, auth and extensions, and for the signed-in Django user the tools, resources,
templates, prompts and skills they may use (title, description, annotations, task mode, schemas), with a
form to call a tool, read a resource or render a prompt as that user. The JSON-RPC request and
response of what the form did are shown as they went through the one door (``Call.transport``
"browser": the same scope, permission, kill switch, rate limit and audit as any call).

Who may open it: signed-in staff by default (``BROWSABLE_ENDPOINT = "staff"``), superusers only
(``"superuser"``), nobody (``False``: the endpoint answers as without it). Forms are CSRF-protected
by Django's own middleware checks (the MCP view itself is CSRF-exempt: MCP clients send no cookies).
Served through the project's middleware (sessions, authentication): in ASGI mode by a Django
handler of its own (``handler``), in WSGI mode from the MCP view.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import render
from django.urls import NoReverseMatch, ResolverMatch, reverse
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

from ..conf import mcp_settings
from ..discovery import card_settings
from ..protocol import extensions, jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..protocol.versions import ALL_REVISIONS, LATEST
from ..runtime import dispatch
from ..server import MCPServer

#: The revision the page speaks to the door (stateless: no session to keep).
REVISION = LATEST
#: What the page declares it renders: MCP Apps too, so their helpers and ``_meta.ui`` are shown.
CAPABILITIES = {"extensions": {extensions.UI: {"mimeTypes": [extensions.UI_MIME_TYPE]}}}
CLIENT_INFO = {"name": "django-mcp-browsable", "version": "1"}
FORM_TYPES = (b"application/x-www-form-urlencoded", b"multipart/form-data")
#: The forms' actions: the JSON-RPC method each sends.
ACTIONS = frozenset({"tools/call", "resources/read", "prompts/get"})
_ids = itertools.count(1)


def wants_page(method: str, headers: dict[bytes, bytes]) -> bool:
    """Whether a request to the endpoint is a browser's (a page GET or a form POST), with the page on.

    MCP clients never send these: their GET accepts ``text/event-stream`` (and carries a session), their
    POST is ``application/json``, and what they accept is never HTML alone.
    """
    accept = headers.get(b"accept", b"")
    if b"text/html" not in accept or b"text/event-stream" in accept:
        return False
    if method in ("GET", "HEAD"):
        if b"mcp-session-id" in headers:
            return False
    elif method == "POST":
        # A browser's form: HTML accepted, no Authorization. An API client's form-encoded POST (a bearer
        # token, RFC 6750's access_token body) is not one: it gets the endpoint's 415.
        ctype = headers.get(b"content-type", b"").lower()
        if not ctype.startswith(FORM_TYPES) or b"authorization" in headers:
            return False
    else:
        return False
    return mcp_settings.BROWSABLE_ENDPOINT is not False


# -- the page ----------------------------------------------------------------------------------------------
async def page(request: HttpRequest, server: MCPServer) -> HttpResponse:
    """The page for ``request`` (a Django request that went through the project's middleware)."""
    user = await _user(request)
    if user is None or not user.is_authenticated:
        if request.method in ("GET", "HEAD"):
            return redirect_to_login(request.get_full_path(), _login_url())
        return _refuse(request, 403, "Sign in to use the browsable endpoint.")
    if not allowed(user):
        who = "superusers" if mcp_settings.BROWSABLE_ENDPOINT == "superuser" else "staff"
        return _refuse(request, 403, f"The browsable endpoint is for {who} only.")
    exchange: dict[str, Any] | None = None
    status = 200
    if request.method == "POST":
        refused = await sync_to_async(_csrf_refusal)(request)
        if refused is not None:
            return refused  # the project's CSRF_FAILURE_VIEW: a forged cross-site POST
        exchange, status = await _submit(request, server, user)
    context = await _context(request, server, user)
    context["exchange"] = exchange
    response: HttpResponse = await sync_to_async(render)(request, "django_mcp/browsable/page.html", context)
    response.status_code = status
    return response


def allowed(user: Any) -> bool:
    """Active staff (or superusers). A custom user model without these flags has neither: refused, never a 500."""
    if not getattr(user, "is_active", False):
        return False
    if mcp_settings.BROWSABLE_ENDPOINT == "superuser":
        return bool(getattr(user, "is_superuser", False))
    return bool(getattr(user, "is_staff", False))


async def _user(request: HttpRequest) -> Any:
    auser = getattr(request, "auser", None)
    if auser is not None:
        return await auser()
    return getattr(request, "user", None)  # no AuthenticationMiddleware: nobody is signed in


def _login_url() -> str:
    try:
        return reverse("admin:login")
    except NoReverseMatch:
        return str(settings.LOGIN_URL)


def _refuse(request: HttpRequest, status: int, message: str) -> HttpResponse:
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def _csrf_refusal(request: HttpRequest) -> HttpResponse | None:
    """Django's CSRF check of a form POST, whatever the endpoint's view (CSRF-exempt for MCP clients) says."""
    middleware = CsrfViewMiddleware(_unused)
    middleware.process_request(request)  # the cookie's secret, if the project's middleware has not read it
    refused: HttpResponse | None = middleware.process_view(request, _csrf_marker, (), {})
    return refused


def _unused(request: HttpRequest) -> HttpResponse:  # pragma: no cover - CsrfViewMiddleware needs a get_response
    return HttpResponse()


def _csrf_marker(request: HttpRequest) -> HttpResponse:  # pragma: no cover - a view that is not csrf_exempt
    return HttpResponse()


# -- calls through the door ----------------------------------------------------------------------------------
def _caller(request: HttpRequest, user: Any) -> dispatch.Caller:
    scope = getattr(request, "scope", None)
    client = request.META.get("REMOTE_ADDR")
    if not isinstance(scope, dict):
        scope = {"type": "http", "headers": [], "client": (client, 0) if client else None}
    return dispatch.Caller(user, None, "", request.headers.get("Accept-Language"), scope, transport="browser")


def rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 2026-07-28 request of ``method``, as the page sends it."""
    meta = {
        PROTOCOL_VERSION_META_KEY: REVISION,
        CLIENT_CAPABILITIES_META_KEY: CAPABILITIES,
        CLIENT_INFO_META_KEY: CLIENT_INFO,
    }
    return {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": {**(params or {}), "_meta": meta}}


async def call(server: MCPServer, message: dict[str, Any], caller: dispatch.Caller) -> tuple[dict[str, Any], int]:
    """``message`` through the one door as ``caller``: the response, and the HTTP status it would get."""
    request = jsonrpc.Request(message["id"], message["method"], message["params"])
    try:
        response = await dispatch.handle(server, request, REVISION, None, caller)
    except dispatch.Rejected as exc:
        return exc.message(), exc.status
    if response is None:
        return jsonrpc.error_message(message["id"], ProtocolError(-32800, "Request cancelled")), 200
    return response, 200


async def _all(server: MCPServer, method: str, key: str, caller: dispatch.Caller) -> list[dict[str, Any]]:
    """Every page of a list, as the caller may see it."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(1000):
        response, _status = await call(server, rpc(method, {"cursor": cursor} if cursor else {}), caller)
        result = response.get("result") or {}
        items.extend(result.get(key) or [])
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return items


async def _submit(request: HttpRequest, server: MCPServer, user: Any) -> tuple[dict[str, Any], int]:
    """What the form asked for, sent through the door: the request and response to show, the status."""
    action = request.POST.get("action", "")
    params: dict[str, Any]
    problem = None
    if action not in ACTIONS:
        problem = f"Unknown action {action!r}"
        params = {}
    elif action == "resources/read":
        params = {"uri": request.POST.get("uri", "")}
    else:
        params = {"name": request.POST.get("name", "")}
        try:  # the endpoint's own parser: strict JSON, a nesting limit (json.loads overflowed the stack: a 500)
            arguments = jsonrpc.loads(request.POST.get("arguments") or "{}")
        except ProtocolError as exc:
            arguments, problem = None, f"The arguments are not JSON: {exc.data or exc.message}"
        if problem is None and not isinstance(arguments, dict):
            problem = "The arguments must be a JSON object"
        params["arguments"] = arguments
    message = rpc(action or "?", params)
    if problem is not None:
        error = jsonrpc.error_message(message["id"], ProtocolError(jsonrpc.INVALID_PARAMS, problem))
        return {"request": _pretty(message), "response": _pretty(error), "status": 400, "method": action}, 400
    response, status = await call(server, message, _caller(request, user))
    return {"request": _pretty(message), "response": _pretty(response), "status": status, "method": action}, status


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


async def _context(request: HttpRequest, server: MCPServer, user: Any) -> dict[str, Any]:
    caller = _caller(request, user)
    tools = await _all(server, "tools/list", "tools", caller)
    resources = await _all(server, "resources/list", "resources", caller)
    templates = await _all(server, "resources/templates/list", "resourceTemplates", caller)
    prompts = await _all(server, "prompts/list", "prompts", caller)
    skills = await _all(server, "skills/list", "skills", caller) if server.skills else []
    discover, _status = await call(server, rpc("server/discover"), caller)
    info = server.server_info()
    return {
        "title": f"{info.get('title') or info['name']} · MCP",
        "server": info,
        "instructions": server.instructions,
        "endpoint": request.build_absolute_uri(mcp_settings.ENDPOINT),
        "revisions": list(ALL_REVISIONS),
        "auth": mcp_settings.AUTH,
        "extensions": sorted((discover.get("result") or {}).get("capabilities", {}).get("extensions") or {}),
        "card": card_settings() is not None,
        "user": user,
        "tools": [_tool(t) for t in tools],
        "resources": resources,
        "templates": templates,
        "prompts": [_prompt(p) for p in prompts],
        "skills": skills,
        **_admin_look(),
    }


def _admin_look() -> dict[str, Any]:
    """The admin's base template and header when the admin is installed and routed, else a plain page."""
    if "django.contrib.admin" not in settings.INSTALLED_APPS:
        return {"base_template": None}
    try:
        reverse("admin:index")
    except NoReverseMatch:
        return {"base_template": None}
    from django.contrib import admin  # reason: only with the admin installed (its site's header)

    return {"base_template": "admin/base_site.html", "site_header": admin.site.site_header, "site_url": "/"}


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    ui = (tool.get("_meta") or {}).get(extensions.UI_META) or {}
    return {
        **tool,
        "annotations": tool.get("annotations") or {},
        "task": (tool.get("execution") or {}).get("taskSupport"),
        "app": ui.get("resourceUri"),
        "app_only": ui.get("visibility") == ["app"],
        "input": _pretty(tool.get("inputSchema") or {}),
        "output": _pretty(tool["outputSchema"]) if tool.get("outputSchema") else None,
        "example": _pretty(example(tool.get("inputSchema") or {})),
    }


def _prompt(prompt: dict[str, Any]) -> dict[str, Any]:
    arguments = prompt.get("arguments") or []
    return {**prompt, "example": _pretty({a["name"]: "" for a in arguments if a.get("required")})}


def example(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments to start from that the tool accepts: each required property's default, else a value of its schema.

    The first click should succeed: a value honours ``minimum``/``exclusiveMinimum``/``multipleOf``,
    ``minLength``, ``minItems``, enums, ``const``, ``examples``, ``$ref`` and unions (the first branch).
    """
    value = _sample(schema, schema.get("$defs") or {}, 0)
    return value if isinstance(value, dict) else {}


#: How deep ``_sample`` follows nested schemas (a recursive ``$ref`` stops there).
_SAMPLE_DEPTH = 8


def _sample(schema: Any, defs: dict[str, Any], depth: int) -> Any:
    if not isinstance(schema, dict) or depth > _SAMPLE_DEPTH:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _sample(defs.get(ref.rsplit("/", 1)[1]), defs, depth + 1)
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        branches = [b for b in schema.get(key) or [] if isinstance(b, dict) and b.get("type") != "null"]
        if branches:
            return _sample(branches[0], defs, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties") or {}
        return {name: _sample(properties.get(name) or {}, defs, depth + 1) for name in schema.get("required") or []}
    if kind == "array":
        item = _sample(schema.get("items") or {}, defs, depth + 1)
        return [item] * int(schema.get("minItems") or 0)
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return False
    if kind == "string":
        return "x" * int(schema.get("minLength") or 0)
    return "" if kind is None else None


def _number(schema: dict[str, Any], *, integer: bool) -> int | float:
    """The smallest value the bounds allow near zero: ``ge=1`` gives 1, ``gt=0`` gives 1 (or a small float)."""
    low = schema.get("minimum")
    above = schema.get("exclusiveMinimum")
    value: float = 0
    if isinstance(low, (int, float)) and value < low:
        value = low
    if isinstance(above, (int, float)) and value <= above:
        value = above + 1 if integer else above + (abs(above) or 1) / 2
    high = schema.get("maximum")
    if isinstance(high, (int, float)) and value > high:
        value = high
    step = schema.get("multipleOf")
    if isinstance(step, (int, float)) and step > 0 and value % step:
        value = (value // step + 1) * step
    return int(value) if integer else value


# -- ASGI mode -----------------------------------------------------------------------------------------------
class PageHandler(ASGIHandler):
    """Django's ASGI handler with one view: the project's middleware runs, then the page of ``server``."""

    def __init__(self, server: MCPServer) -> None:
        super().__init__()
        self.server = server

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        async def view(request: HttpRequest) -> HttpResponse:
            return await page(request, self.server)

        match = ResolverMatch(view, (), {}, url_name="mcp-browsable")
        request.resolver_match = match
        return match


_handlers: dict[int, PageHandler] = {}


def handler(server: MCPServer) -> PageHandler:
    """The page's ASGI handler for ``server`` (one per server and process: it loads the middleware once)."""
    found = _handlers.get(id(server))
    if found is None:
        found = _handlers[id(server)] = PageHandler(server)
    return found


__all__ = ["PageHandler", "allowed", "example", "handler", "page", "wants_page"]
