"""One dispatch path between the transports and the engine.

Everything that is the same whatever carries the bytes lives here: the era of a
POST, the checks of a 2026-07-28 request's envelope and mirrored headers, the
handshake POST (``initialize``, finding the caller's session, batches, absorbing the
client's notifications and responses), and what a ``subscriptions/listen`` stream
may carry. Streamable HTTP, the WSGI view, the legacy HTTP+SSE transport and stdio
call it; each keeps only its bytes and streams. A refusal is a ``Refused`` (an
``exceptions`` class that knows its JSON-RPC error and HTTP status); the transports
answer it through ``exceptions.to_wire``, so no HTTP status is written here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from django.core.signals import setting_changed
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from .. import middleware
from ..auth.bearer import INSUFFICIENT_SCOPE, insufficient_scope
from ..conf import mcp_settings
from ..exceptions import BadRequest, Refused, SessionNotFound, Unavailable, to_wire
from ..middleware import Call, CallNext
from ..protocol import headers, jsonrpc
from ..protocol import skills as skill_rules
from ..protocol.jsonrpc import ProtocolError
from ..protocol.validation import validate_notification, validate_request
from ..protocol.versions import BATCH_REVISIONS, HANDSHAKE_REVISIONS, STATELESS_REVISIONS
from ..server import MCPServer, site
from ..state.sessions import SessionState, store
from ..state.subscriptions import ListenFilter
from ..tasks import methods as task_methods
from .engine import UNSET, Exchange, Outlet, engine, negotiate_initialize
from .inflight import inflight

logger = logging.getLogger("django_mcp")


@dataclass
class Caller:
    """Who sends the messages: the user, the OAuth token (``AuthInfo``) and client, the language.

    ``scope`` is the ASGI scope of an HTTP caller: a refusal then carries the
    ``WWW-Authenticate`` challenge that points the client at this endpoint's metadata.
    """

    user: Any
    auth: Any = None
    client_id: str = ""
    locale: str | None = None
    scope: dict[str, Any] | None = None
    #: What carries the request (``middleware.TRANSPORTS``): "http", "sse", "stdio", "wsgi", "test", "task",
    #: "browser" (the browsable endpoint's forms).
    transport: str = "http"

    @classmethod
    def authenticated(
        cls,
        user: Any,
        auth: Any,
        locale: str | None = None,
        scope: dict[str, Any] | None = None,
        transport: str = "http",
    ) -> Caller:
        """A caller whose OAuth client is its token's (none without a token)."""
        return cls(user, auth, auth.client_id if auth is not None else "", locale, scope, transport)

    @property
    def address(self) -> str | None:
        """The client's address: the ASGI scope's ``client`` (the WSGI view's ``REMOTE_ADDR``); None without HTTP."""
        client = self.scope.get("client") if self.scope is not None else None
        return str(client[0]) if client else None


async def handle(
    server: MCPServer,
    request: jsonrpc.Request,
    revision: str,
    session: SessionState | None,
    caller: Caller,
    outlet: Outlet | None = None,
    target: Any = UNSET,
    *,
    exchange: Exchange | None = None,
) -> dict[str, Any] | None:
    """The one door into the engine: the response to ``request``, or None if the client cancelled it.

    Every caller comes through here (Streamable HTTP, legacy SSE, stdio, the WSGI view, the
    test client, the task worker), so the same checks run in the same order for all: the
    token's scopes for the tool/resource/prompt named (``Refused``, 403 ``insufficient_scope``),
    then the params against the revision's schema (-32602), then the handler, whose access
    checks (Django permissions, ``check=``) and error mapping are the engine's.
    ``exchange`` is a prepared exchange (a task's run); by default one is built from the rest.
    """
    ex = exchange
    if ex is None:
        ex = Exchange(
            server,
            request,
            revision,
            session,
            caller.user,
            outlet,
            locale=caller.locale,
            auth=caller.auth,
            target=target,
        )
    chain = _chain()
    if chain is None:  # no middleware (or none in use): no Call to build
        return await _enter(ex, caller)
    call = Call(ex, caller.user, caller.auth, caller.client_id, caller.transport, caller.scope, caller.address)
    call.sealed = _built[2]
    call.state[_CALLER] = caller
    response = await chain(call)
    if call.refused is not None and response is not None and "error" in response:
        raise call.refused  # refused with a status: answered as the door's own refusals
    return response


def _guard(handler: CallNext) -> CallNext:
    """Around each middleware (and the door's checks): what it raises becomes the response it stands for."""

    async def guarded(call: Call) -> dict[str, Any] | None:
        ex = call.exchange
        try:
            return await handler(call)
        except Unavailable as exc:  # inside the request: the JSON-RPC error that says so, not a 503
            return jsonrpc.error_message(ex.request_id, engine.protocol_error(ex, exc))
        except Refused as exc:  # the door's (a scope the token lacks) or a middleware's (429 + Retry-After)
            if exc.request_id is None:
                exc.request_id = ex.request_id  # the door raises it again: the transport's answer names the request
            call.refused = exc  # what the middleware around see is the response; the door answers the status
            return to_wire(exc).message
        except ProtocolError as exc:  # a middleware's MCPError
            return jsonrpc.error_message(ex.request_id, engine.protocol_error(ex, exc))
        except Exception:  # a middleware's bug: the client gets what a handler's bug gets
            logger.exception("MCP middleware failed on %s", ex.method)
            return jsonrpc.error_message(ex.request_id, ProtocolError(jsonrpc.INTERNAL_ERROR, "Internal error"))

    return guarded


async def _enter(ex: Exchange, caller: Caller) -> dict[str, Any] | None:
    """Past the middleware: the token's scopes, the params' schema, then the engine."""
    if caller.auth is not None:
        check_scopes(ex, caller)
    request = ex.request
    # The extensions' methods are in no schema: their handlers check their params.
    if request.method not in skill_rules.METHODS and not task_methods.unvalidated(
        request.method, ex.revision, ex.stateless
    ):
        try:
            validate_request(request.method, ex.revision, request.params)
        except ProtocolError as exc:
            return jsonrpc.error_message(request.id, exc)
    return await engine.run(ex)


async def _innermost(call: Call) -> dict[str, Any] | None:
    return await _enter(call.exchange, call.state[_CALLER])


_CALLER = "django_mcp.caller"
#: (the MIDDLEWARE it was built from, the chain, whether every middleware keeps replies as they are).
_built: tuple[Any, CallNext | None, bool] = (None, None, False)


def _chain() -> CallNext | None:
    """``MIDDLEWARE`` built around the door's own checks; rebuilt when ``DJANGO_MCP`` changes (tests).

    Any key may change which middleware is in use (``TELEMETRY`` off raises ``MiddlewareNotUsed``).
    """
    global _built
    paths = mcp_settings.MIDDLEWARE
    if _built[0] is not paths:
        chain = middleware.build(paths, _innermost, _guard) if paths else None
        _built = (paths, chain, middleware.keeps_replies(paths))
    return _built[1]


def _rebuild(*, setting: str, **kwargs: Any) -> None:
    global _built
    if setting == "DJANGO_MCP":
        _built = (None, None, False)


setting_changed.connect(_rebuild)


def check_scopes(ex: Exchange, caller: Caller) -> None:
    """A token lacking the scopes of the tool/resource/prompt a request names: ``Refused`` (403).

    The same refusal for every caller; an HTTP caller's carries the ``WWW-Authenticate``
    challenge a client steps up from (RFC 6750 ``insufficient_scope``). Completing an argument of a
    prompt or resource template needs that object's scopes, as using it does.
    """
    target = ex.target
    if target is None and ex.method == "completion/complete":
        target = ex.server.completed(ex.params or {})
    # Every scope the call needs, not only those the token lacks, nor those it already has (SEP-2350):
    # the client adds them to what it holds when it asks for a new token.
    needed = sorted(set(target.scopes)) if target is not None else []
    if not needed or caller.auth.allows(needed):
        return
    if caller.scope is not None:
        challenge = insufficient_scope(caller.scope, needed)
        challenge.request_id = ex.request_id
        raise challenge
    data = {"error": "insufficient_scope", "scope": " ".join(needed)}
    raise Refused(f"Forbidden: {INSUFFICIENT_SCOPE}", data, request_id=ex.request_id)


# -- parsing -------------------------------------------------------------------------------
def parse(body: bytes) -> Any:
    try:
        return jsonrpc.loads(body)
    except ProtocolError as exc:
        raise Refused.of(exc) from None


def classify(payload: Any) -> jsonrpc.Message:
    try:
        return jsonrpc.classify(payload)
    except ProtocolError as exc:
        raise Refused.of(exc, jsonrpc.id_of(payload)) from None


def has_request(payload: Any) -> bool:
    """Whether a body holds a JSON-RPC request (notifications and responses are still taken while draining)."""
    items = payload if isinstance(payload, list) else [payload]
    return any(isinstance(m, dict) and "method" in m and "id" in m for m in items)


def has_envelope(params: Any) -> bool:
    """A request belongs to 2026-07-28 when its ``_meta`` names a protocol version (the SDK's rule)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


def is_stateless_post(payload: Any, version: str | None, session_id: str | None) -> bool:
    """Which era an HTTP POST belongs to: True for 2026-07-28, False for the handshake era.

    A version header that is not a handshake revision (2026-07-28, or one we don't know)
    takes the stateless path, where an unknown version gets -32022 with the supported
    list. Without the header, a body carrying the 2026 envelope and no session is stateless.
    """
    if version is not None:
        return version.strip() not in HANDSHAKE_REVISIONS
    return session_id is None and isinstance(payload, dict) and has_envelope(payload.get("params"))


def stateless_request(
    payload: Any, version: str | None, header: Callable[[str], str | None], server: MCPServer
) -> tuple[jsonrpc.Request, str, Any] | None:
    """A 2026-07-28 POST body: its request, revision and target, or None for a notification (202).

    One message per body; a response is refused (clients send none in this revision).
    """
    if not isinstance(payload, dict):
        raise BadRequest("Invalid request: the body must be a single JSON-RPC message")
    message = classify(payload)
    if isinstance(message, jsonrpc.Response):
        raise BadRequest("Invalid request: 2026-07-28 clients send no responses")
    if isinstance(message, jsonrpc.Notification):
        if version is not None and version.strip() not in STATELESS_REVISIONS:
            raise Refused.of(unsupported(version))
        return None  # no client notification has an effect over HTTP here (cancelling is closing the stream)
    assert isinstance(message, jsonrpc.Request)
    target = server.target(message.method, message.params or {})
    return message, stateless_revision(message, version, header, target), target


def default_site() -> MCPServer:
    """``django_mcp.site`` (``django_mcp.server.site``: the package attribute is lazy, and asked on every request)."""
    return site


# -- 2026-07-28: the envelope and its mirrored headers ----------------------------------------
def stateless_revision(
    request: jsonrpc.Request,
    version: str | None = None,
    header: Callable[[str], str | None] | None = None,
    target: Any = None,
) -> str:
    """Check a 2026-07-28 request's envelope and return its revision, or raise ``Refused``.

    Over HTTP (``header`` given) the ``MCP-Protocol-Version``, ``Mcp-Method``/``Mcp-Name`` and
    tool-parameter headers must mirror the body. The order is the one the conformance suite
    expects: envelope (-32602), header mismatch (-32020), unsupported version (-32022).
    """
    params = request.params or {}
    meta = params.get("_meta")
    rid = request.id

    def fail(exc: ProtocolError) -> Refused:
        return Refused.of(exc, rid)

    if not isinstance(meta, dict):
        raise fail(
            ProtocolError(
                jsonrpc.INVALID_PARAMS,
                "params._meta must be an object carrying the required "
                f"{PROTOCOL_VERSION_META_KEY!r} and {CLIENT_CAPABILITIES_META_KEY!r} keys",
            )
        )
    missing = [k for k in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if k not in meta]
    if missing:
        raise fail(ProtocolError(jsonrpc.INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}"))
    requested = meta[PROTOCOL_VERSION_META_KEY]
    if header is not None:
        if version is None:
            raise fail(headers.mismatch("MCP-Protocol-Version header is required"))
        if version.strip() != requested:
            raise fail(
                headers.mismatch(f"MCP-Protocol-Version header {version!r} does not match _meta value {requested!r}")
            )
        try:
            headers.check_standard(request.method, params, header)
        except ProtocolError as exc:
            raise fail(exc) from None
    if not isinstance(requested, str):
        raise fail(ProtocolError(jsonrpc.INVALID_PARAMS, "protocolVersion must be a string"))
    if requested not in STATELESS_REVISIONS:
        raise fail(unsupported(requested))
    if header is not None and request.method == "tools/call" and target is not None and target.built():
        try:
            headers.check_params(target.input_schema, params.get("arguments"), header)
        except ProtocolError as exc:
            raise fail(exc) from None
    if request.method == "subscriptions/listen":
        # Other requests are validated once, at the door (``handle``), with the same error and status.
        try:
            validate_request(request.method, requested, request.params)
        except ProtocolError as exc:
            raise fail(exc) from None
    return requested


def unsupported(requested: Any) -> ProtocolError:
    return ProtocolError(
        jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": list(STATELESS_REVISIONS), "requested": requested},
    )


async def listen_filter(server: MCPServer, request: jsonrpc.Request, revision: str, caller: Caller) -> ListenFilter:
    """What a ``subscriptions/listen`` stream will carry: the client's ask, cut to what the caller may follow.

    Resources the caller could not ``resources/subscribe`` to are dropped, and tasks not its
    own; task ids from a client without the tasks extension raise ``ProtocolError`` (-32021).
    Each transport then runs the stream with ``ListenFilter.listen``.
    """
    listening = ListenFilter(request, caller.client_id)
    await listening.restrict(server, Exchange(server, request, revision, None, caller.user, None, auth=caller.auth))
    return listening


# -- the handshake era --------------------------------------------------------------------------
async def initialize(
    server: MCPServer, request: jsonrpc.Request, caller: Caller, session: SessionState | None = None
) -> tuple[SessionState, dict[str, Any]]:
    """Negotiate a revision and start a session (or fill in ``session``, the legacy transport's).

    Returns the session and the response; a malformed ``initialize`` raises ``Refused`` (400).
    """
    try:
        revision, params = negotiate_initialize(request)
    except ProtocolError as exc:
        raise BadRequest(exc.message, exc.data, code=exc.code, request_id=request.id) from None
    client_info = params.get("clientInfo") or {}
    capabilities = params.get("capabilities") or {}
    if session is None:
        session = await store.create(revision, client_info, capabilities, caller.user, caller.client_id)
    else:
        session.revision, session.client_info, session.client_capabilities = revision, client_info, capabilities
        await store.update(
            session, protocol_version=revision, client_info=client_info, client_capabilities=capabilities
        )
    result = engine.finalize("initialize", revision, server.initialize_result(revision, capabilities))
    return session, jsonrpc.result_message(request.id, result)


@dataclass
class HandshakePost:
    """What a handshake-era POST comes to; each HTTP front end only renders it.

    With ``request`` set, one request for the front end to run and answer its own way (JSON,
    a stream, a buffered stream). Otherwise ``body`` is the JSON to answer 200 with (the
    ``initialize`` response, a batch's responses), or None for an empty 202 (notifications
    and responses, absorbed). ``session`` is the one whose ``Mcp-Session-Id`` a 200 carries.
    """

    session: SessionState
    body: Any = None
    request: jsonrpc.Request | None = None


async def handshake_post(
    server: MCPServer,
    payload: Any,
    version: str | None,
    session_id: str | None,
    caller: Caller,
    run: Callable[[jsonrpc.Request, SessionState], Awaitable[dict[str, Any] | None]],
) -> HandshakePost:
    """A handshake-era POST body, the same steps for every HTTP front end.

    ``initialize`` starts a session; anything else needs the caller's session ``session_id``
    (with ``version``, when sent, matching its revision). A batch runs its requests through
    ``run`` (never streamed: they are answered together); a second ``initialize`` is refused.
    Refusals raise ``Refused``.
    """
    if isinstance(payload, dict) and payload.get("method") == "initialize" and "id" in payload:
        request = classify(payload)
        assert isinstance(request, jsonrpc.Request)
        session, response = await initialize(server, request, caller)
        return HandshakePost(session, response)
    session = await find_session(session_id, caller, jsonrpc.id_of(payload), version)
    if isinstance(payload, list):
        return HandshakePost(session, await batch(payload, session, lambda r: run(r, session)) or None)
    message = classify(payload)
    if isinstance(message, jsonrpc.Request):
        if message.method == "initialize":
            raise BadRequest("Session already initialized", request_id=message.id)
        return HandshakePost(session, request=message)
    await absorb(message, session, session.revision)
    return HandshakePost(session)


async def find_session(
    sid: str | None, caller: Caller, request_id: Any = None, version: str | None = None
) -> SessionState:
    """The caller's live session ``sid`` (its user and OAuth client), or ``Refused``: 400 without one, 404."""
    if sid is None:
        raise BadRequest("Bad Request: Mcp-Session-Id header is required", request_id=request_id)
    session = await store.get_owned(sid, caller.user, caller.client_id)
    if session is None:
        raise SessionNotFound(request_id=request_id)
    if version is not None and version != session.revision:
        raise BadRequest(
            f"Bad Request: MCP-Protocol-Version {version!r} does not match the session's {session.revision!r}",
            request_id=request_id,
        )
    return session


async def absorb(
    message: jsonrpc.Message,
    session: SessionState | None,
    revision: str,
    cancel: Callable[[Any], Awaitable[None]] | None = None,
) -> None:
    """A client's notification or response: act on it, answer nothing.

    ``cancel`` stops a request by id (default: ``inflight``'s, across workers, for ``session``).
    """
    if isinstance(message, jsonrpc.Response):
        if session is not None:
            await inflight.deliver_response(session.id, message)
        return
    if not isinstance(message, jsonrpc.Notification) or not validate_notification(
        message.method, revision, message.params
    ):
        return
    if message.method == "notifications/initialized":
        if session is not None and not session.initialized:
            session.initialized = True
            await store.update(session, initialized=True)
    elif message.method == "notifications/cancelled":
        rid = (message.params or {}).get("requestId")
        if rid is None:
            return
        if cancel is not None:
            await cancel(rid)
        elif session is not None:
            await inflight.cancel(session.id, rid)


async def batch(
    items: list[Any],
    session: SessionState | None,
    run: Callable[[jsonrpc.Request], Awaitable[dict[str, Any] | None]],
    cancel: Callable[[Any], Awaitable[None]] | None = None,
) -> list[dict[str, Any]]:
    """A 2025-03-26 batch: requests run concurrently (``run``), their responses come back in one list.

    Notifications and responses in it are absorbed; ``initialize`` cannot be batched. At most
    ``MAX_BATCH_SIZE`` items, or one -32600 for the whole batch and nothing runs.
    """
    if session is None or session.revision not in BATCH_REVISIONS:
        revision = session.revision if session else "this connection"
        raise BadRequest(f"Invalid request: batches are not supported in {revision}")
    try:
        jsonrpc.check_batch(items, mcp_settings.MAX_BATCH_SIZE)
    except ProtocolError as exc:
        raise BadRequest(exc.message, exc.data, code=exc.code) from None
    responses: list[dict[str, Any]] = []
    requests: list[jsonrpc.Request] = []
    for item in items:
        try:
            message = jsonrpc.classify(item)
        except ProtocolError as exc:
            responses.append(jsonrpc.error_message(jsonrpc.id_of(item), exc))
            continue
        if not isinstance(message, jsonrpc.Request):
            await absorb(message, session, session.revision, cancel)
        elif message.method == "initialize":
            err = ProtocolError(jsonrpc.INVALID_REQUEST, "initialize cannot be batched")
            responses.append(jsonrpc.error_message(message.id, err))
        else:
            requests.append(message)

    async def one(request: jsonrpc.Request) -> dict[str, Any] | None:
        try:
            return await run(request)
        except Refused as exc:  # refused at the door: that item's error, the others still run
            return to_wire(exc, request.id).message

    if requests:
        results = await asyncio.gather(*(one(r) for r in requests))
        responses.extend(r for r in results if r is not None)
    return responses


__all__ = [
    "UNSET",
    "Caller",
    "Exchange",
    "HandshakePost",
    "absorb",
    "batch",
    "check_scopes",
    "classify",
    "default_site",
    "find_session",
    "handle",
    "handshake_post",
    "has_envelope",
    "has_request",
    "initialize",
    "is_stateless_post",
    "listen_filter",
    "parse",
    "stateless_request",
    "stateless_revision",
    "unsupported",
]
