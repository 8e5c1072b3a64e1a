"""WSGI mode: the MCP endpoint as a plain Django view, without Channels.

Streamable HTTP in JSON-response mode under a WSGI server (gunicorn sync workers):
``mcp_wsgi_view``, a sync view running the request on an event loop its thread keeps,
mounted at ``ENDPOINT`` by ``path("", include("django_mcp.urls_wsgi"))``; and under
Django's own ASGI handler without Channels: ``mcp_view``, the same as an async view
(``re_path(r"^mcp/?$", mcp_view)``; it also works under WSGI, through ``async_to_sync``).

It shares everything but the bytes with the Channels consumer: the HTTP request guards
(``transports.guards``), what a request comes to (``transports.streamable``: the era,
202s, DELETE, the answer to an exception), the envelope, session and batch rules
(``dispatch``) and the engine. What it does not offer is what needs a stream held open after the response
(see ``docs/transports.md``): a GET stream (405), ``subscriptions/listen`` (-32601,
404), server-to-client requests in the handshake era (the engine's -32600 "cannot
carry"), resource subscriptions (-32601) and the legacy HTTP+SSE transport; the
advertised capabilities say so (no ``listChanged``, no ``subscribe``). Progress and log
notifications a handler emits during a call are kept and sent, in order, before the
result on a ``text/event-stream`` response written when the call is over (the client
accepts it on every POST); a call that emits nothing gets plain JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from http.client import responses
from typing import Any

from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from ..conf import mcp_settings
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..protocol.versions import STATELESS_REVISIONS
from ..runtime import dispatch, gc_freeze
from ..runtime.dispatch import Caller
from ..server import MCPServer
from ..state.hub import long_lived
from ..state.sessions import SessionState, prefetch, prefetched
from . import browsable, guards, streamable
from .base import SSE_CT, sse_event
from .streamable import Answer

#: Methods WSGI mode does not offer: they need a stream held open after the response.
HELD = frozenset({"subscriptions/listen", "resources/subscribe", "resources/unsubscribe"})
ALLOW = b"POST, DELETE, OPTIONS"


def _headers(request: HttpRequest) -> dict[bytes, bytes]:
    """The request headers as the consumer sees them: lower-case names, latin-1 bytes."""
    out: dict[bytes, bytes] = {}
    names = _header_names
    for key, value in request.META.items():
        if key in names:
            name = names[key]
        else:
            name = _header_name(key)
            if len(names) < MAX_HEADER_NAMES:
                names[key] = name
        if name is not None and isinstance(value, str) and (value or name != b"content-length"):
            out[name] = value.encode("latin-1", "replace")
    return out


def _header_name(key: str) -> bytes | None:
    """The header a ``META`` key stands for (``HTTP_MCP_SESSION_ID`` -> ``mcp-session-id``), None if none."""
    if key.startswith("HTTP_"):
        key = key[5:]
    elif key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        return None
    return key.lower().replace("_", "-").encode("latin-1")


#: ``META`` keys seen, and the header each stands for: the same few dozen on every request, so each is
#: converted once (half the cost of the headers' conversion). Bounded: clients choose header names.
_header_names: dict[str, bytes | None] = {}
MAX_HEADER_NAMES = 512


def _scope(request: HttpRequest, headers: dict[bytes, bytes]) -> dict[str, Any]:
    """An ASGI-shaped scope for the shared guards and OAuth (Django's own under its ASGI handler)."""
    asgi = getattr(request, "scope", None)
    if isinstance(asgi, dict):
        return dict(asgi)
    meta = request.META
    try:
        port = int(meta.get("SERVER_PORT") or 0)
    except ValueError:
        port = 0
    protocol = str(meta.get("SERVER_PROTOCOL") or "")
    scope: dict[str, Any] = {
        "type": "http",
        "http_version": protocol.partition("/")[2] or "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "root_path": meta.get("SCRIPT_NAME", ""),
        "query_string": meta.get("QUERY_STRING", "").encode("latin-1", "replace"),
        "headers": list(headers.items()),
        "server": (meta.get("SERVER_NAME", ""), port),
    }
    if meta.get("REMOTE_ADDR"):
        scope["client"] = (meta["REMOTE_ADDR"], 0)
    return scope


class BufferedOutlet:
    """Carries what one call emits before its result (progress, logs), kept in memory.

    WSGI mode cannot stream while the call runs: the view writes them, then the result,
    once the call is over.
    """

    carries_requests = False  # the client cannot answer a server->client request mid-call

    def __init__(self) -> None:
        self.messages: list[bytes] = []

    async def send(self, message: dict[str, Any]) -> None:
        self.messages.append(jsonrpc.dumps(message))


class ViewRequest:
    """One HTTP request to the view: its headers, ASGI-shaped scope and server.

    Not the engine's ``Exchange`` (one JSON-RPC request in flight): one of these may carry
    a batch, a notification or no JSON-RPC at all (DELETE).
    """

    def __init__(self, request: HttpRequest, server: MCPServer) -> None:
        self.request = request
        self.server = server
        self.headers = _headers(request)
        self.scope = _scope(request, self.headers)
        self._caller: Caller | None = None

    def header(self, name: bytes) -> str | None:
        return guards.header(self.headers, name)

    def caller(self) -> Caller:
        """Who sends this request (made once, after ``authenticate``: the core and the run both ask)."""
        caller = self._caller
        if caller is None:
            auth = self.scope.get("mcp_auth")
            transport = "wsgi" if isinstance(self.request, WSGIRequest) else "http"
            language = self.header(b"accept-language")
            caller = Caller.authenticated(self.scope.get("user"), auth, language, self.scope, transport)
            self._caller = caller
        return caller

    def read_body(self) -> bytes:
        limit = mcp_settings.MAX_BODY_SIZE
        body = self.request.read(limit + 1)  # not request.body: DATA_UPLOAD_MAX_MEMORY_SIZE is not ours
        if len(body) > limit:
            raise guards.too_large()
        return body

    # -- POST ----------------------------------------------------------------------------------
    async def post(self) -> Answer:
        guards.check_post(self.headers)
        outcome = await streamable.post(self.server, self.headers, self.read_body(), self.caller(), self.run_batched)
        if isinstance(outcome, Answer):
            return outcome
        early = BufferedOutlet()
        response = await self.run(outcome.request, outcome.session, outcome.revision, outcome.target, early)
        if response is None:
            return streamable.empty_answer(202)
        if early.messages:  # notifications first: the response is an SSE stream, written now the call is over
            return self.sse(response, outcome.session, early)
        return streamable.reply(outcome, response)

    def sse(self, payload: Any, session: SessionState | None, early: BufferedOutlet) -> Answer:
        body = b"".join(sse_event(data) for data in [*early.messages, jsonrpc.dumps(payload)])
        headers = [(b"content-type", SSE_CT), (b"content-length", b"%d" % len(body)), (b"cache-control", b"no-cache")]
        if session is not None:
            headers.append((streamable.SESSION_HEADER, session.id.encode()))
        return Answer(200, headers, body)

    async def run_batched(self, request: jsonrpc.Request, session: SessionState) -> dict[str, Any] | None:
        """One request of a batch: answered inside the batch's JSON array, what it emits dropped."""
        return await self.run(request, session, session.revision)

    async def run(
        self,
        request: jsonrpc.Request,
        session: SessionState | None,
        revision: str,
        target: Any = dispatch.UNSET,
        outlet: BufferedOutlet | None = None,
    ) -> dict[str, Any] | None:
        """One request through the engine; what it emits goes to ``outlet`` (None in a batch: dropped)."""
        if request.method in HELD:
            error = ProtocolError(
                jsonrpc.METHOD_NOT_FOUND,
                f"Method not found: {request.method} needs a held stream, which WSGI mode does not offer",
            )
            return jsonrpc.error_message(request.id, error)
        return await dispatch.handle(self.server, request, revision, session, self.caller(), outlet, target)


#: How Django names the headers the view has always sent (the rest go out as ``streamable`` spells them).
_NAMES = {
    b"content-type": "Content-Type",
    b"content-length": "Content-Length",
    b"mcp-session-id": "Mcp-Session-Id",
    b"cache-control": "Cache-Control",
    b"allow": "Allow",
}


def wsgi_headers(answer: Answer) -> list[tuple[str, str]]:
    """An answer's headers as WSGI's ``start_response`` takes them (and as Django's responses name them)."""
    names = _NAMES
    return [(names.get(name) or name.decode("latin-1"), value.decode("latin-1")) for name, value in answer.headers]


def status_line(status: int) -> str:
    """``"200 OK"``: the status and Django's reason phrase for it, each made once."""
    line = _status_lines.get(status)
    if line is None:
        line = _status_lines[status] = f"{status} {responses.get(status, 'Unknown Status Code')}"
    return line


_status_lines: dict[int, str] = {}


def _response(answer: Answer) -> HttpResponse:
    """A ``streamable`` answer as a Django response: its own headers only, its body with its length."""
    headers = dict(wsgi_headers(answer))
    response = HttpResponse(answer.body, status=answer.status, headers=headers)
    if "Content-Type" not in headers:
        del response["Content-Type"]  # Django's default; the answer says its own (an empty reply has none)
    return response


def _as_response(result: Answer | HttpResponse, method: str | None) -> HttpResponse:
    """``answer``'s result as the view returns it (a Django response), for Django's handlers."""
    if not isinstance(result, Answer):
        return result
    response = _response(result)
    if method == "GET" and result.status == 405:
        # No standalone SSE stream (nor legacy SSE, nor resumption): the spec's answer is 405, which every
        # handshake-era SDK session asks for once; Django would log each as a warning.
        response._has_been_logged = True  # type: ignore[attr-defined]  # django.utils.log.log_response's mark
    return response


async def serve(request: HttpRequest, server: MCPServer | None = None) -> HttpResponse:
    """The endpoint for ``server`` (default ``django_mcp.site``): what ``mcp_view`` and ``mcp_view_for`` run."""
    return _as_response(await answer(request, server), request.method)


async def answer(request: HttpRequest, server: MCPServer | None = None) -> Answer | HttpResponse:
    """What the endpoint answers ``request``: an ``Answer``, or a Django response (a browser's page).

    ``django_mcp.wsgi`` writes an ``Answer`` to the WSGI server as it is; Django's handlers get a response.
    """
    if not gc_freeze.done:  # the first request: the URLconf, hence startup, is loaded only now
        gc_freeze.freeze_startup_heap()
    token = long_lived.set(False)
    try:
        exchange = ViewRequest(request, server or dispatch.default_site())
        method = request.method or "GET"
        if browsable.wants_page(method, exchange.headers):  # a browser's GET or form POST
            return await browsable.page(request, exchange.server)
        try:
            guards.check_origin(exchange.scope, exchange.headers)
            if method == "OPTIONS":
                return streamable.empty_answer(204, [(b"allow", ALLOW)])
            await guards.authenticate(exchange.scope, exchange.headers)
            caller = exchange.scope.get("user")
            if caller is not None:  # what the project's middleware reads after the view (its own calls: per call)
                request.user = caller
            if method == "POST":
                return await exchange.post()
            if method == "DELETE":
                return await streamable.delete(exchange.headers, exchange.caller())
            if method == "GET":  # not logged as a warning under Django's handler (``_as_response``)
                return streamable.failed(guards.method_not_allowed("GET (this server offers no SSE stream)", ALLOW))
            raise guards.method_not_allowed(method, ALLOW)
        except Exception as exc:  # a refusal (its status), else logged by to_wire (503/500)
            with contextlib.suppress(Exception):
                return streamable.failed(exc)
            raise
    finally:
        long_lived.reset(token)


_loops = threading.local()


def reads_session_here(meta: dict[str, Any]) -> bool:
    """Whether ``run`` reads this request's session on the calling thread (a handshake-era session id)."""
    return bool(meta.get("HTTP_MCP_SESSION_ID")) and meta.get("HTTP_MCP_PROTOCOL_VERSION") not in STATELESS_REVISIONS


def run(request: HttpRequest, server: MCPServer | None = None) -> HttpResponse:
    """``serve`` from sync code (a WSGI worker's thread): see ``answer_now``."""
    return _as_response(answer_now(request, server), request.method)


def answer_now(request: HttpRequest, server: MCPServer | None = None) -> Answer | HttpResponse:
    """``answer`` from sync code, on an event loop this thread keeps (a WSGI worker's thread).

    Django would run an async view through ``async_to_sync``, which starts a thread and an
    event loop per request (about half of a small call's cost); this loop lives as long as
    the thread and runs only while a request does (nothing is left on it in between).
    """
    loop: asyncio.AbstractEventLoop | None = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = _loops.loop = asyncio.new_event_loop()
    if not reads_session_here(request.META):
        return loop.run_until_complete(answer(request, server))
    sid = request.META["HTTP_MCP_SESSION_ID"]
    token = prefetched.set(prefetch(sid))  # the session read on this thread, before the loop (sessions.prefetch)
    try:
        return loop.run_until_complete(answer(request, server))
    finally:
        prefetched.reset(token)


@csrf_exempt
def mcp_wsgi_view(request: HttpRequest) -> HttpResponse:
    """The MCP endpoint of ``django_mcp.site`` for WSGI servers (sync view, one event loop per thread)."""
    return run(request)


#: The server a sync view serves (None: ``django_mcp.site``): ``django_mcp.wsgi`` serves such a view's
#: requests directly, without Django's request cycle around them.
mcp_wsgi_view.mcp_wsgi_server = None  # type: ignore[attr-defined]


@csrf_exempt
async def mcp_view(request: HttpRequest) -> HttpResponse:
    """The MCP endpoint of ``django_mcp.site`` as an async view: Django's ASGI handler, or any handler."""
    return await serve(request)


def mcp_view_for(server: MCPServer, *, wsgi: bool = False) -> Any:
    """The view serving another ``MCPServer``: ``re_path(r"^tools/mcp/?$", mcp_view_for(my_server))``.

    ``wsgi=True`` gives the sync view, for WSGI servers (see ``mcp_wsgi_view``).
    """
    if wsgi:

        @csrf_exempt
        def sync_view(request: HttpRequest) -> HttpResponse:
            return run(request, server)

        sync_view.mcp_wsgi_server = server  # type: ignore[attr-defined]  # see mcp_wsgi_view
        return sync_view

    @csrf_exempt
    async def view(request: HttpRequest) -> HttpResponse:
        return await serve(request, server)

    return view


__all__ = [
    "answer",
    "answer_now",
    "mcp_view",
    "mcp_view_for",
    "mcp_wsgi_view",
    "run",
    "serve",
    "status_line",
    "wsgi_headers",
]
