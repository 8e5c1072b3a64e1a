"""One dispatch path between the transports and the engine.

Everything that is the same whatever carries the bytes lives here: the checks of a
2026-07-28 request's envelope and mirrored headers, ``initialize``, finding the
caller's session, batches, and absorbing the client's notifications and responses.
Streamable HTTP, the legacy HTTP+SSE transport and stdio call it; each keeps only
its bytes, streams and status codes. A refusal is a ``Rejected``: the JSON-RPC error
and the HTTP status it gets where there is HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from .conf import mcp_settings
from .engine import UNSET, Outlet, engine, negotiate_initialize
from .protocol import headers, jsonrpc
from .protocol.jsonrpc import ProtocolError
from .protocol.validation import validate_notification, validate_request
from .protocol.versions import BATCH_REVISIONS, STATELESS_REVISIONS
from .server import MCPServer
from .sessions import SessionState, store

#: The HTTP status of each JSON-RPC error a 2026-07-28 request can be refused with.
STATUS = {
    jsonrpc.INVALID_PARAMS: 400,
    jsonrpc.INVALID_REQUEST: 400,
    jsonrpc.PARSE_ERROR: 400,
    jsonrpc.HEADER_MISMATCH: 400,
    jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    jsonrpc.UNSUPPORTED_PROTOCOL_VERSION: 400,
    jsonrpc.METHOD_NOT_FOUND: 404,
}


class Rejected(Exception):
    """A message refused before it reached the engine."""

    def __init__(self, status: int, error: ProtocolError, request_id: Any = None) -> None:
        super().__init__(error.message)
        self.status, self.error, self.request_id = status, error, request_id

    def message(self) -> dict[str, Any]:
        """The JSON-RPC error message a transport without statuses (stdio) writes."""
        return jsonrpc.error_message(self.request_id, self.error)


def reject(status: int, message: str, request_id: Any = None, code: int = jsonrpc.INVALID_REQUEST) -> Rejected:
    return Rejected(status, ProtocolError(code, message), request_id)


def status_for(response: dict[str, Any]) -> int:
    """The HTTP status of a 2026-07-28 response (its errors are statuses too)."""
    err = response.get("error")
    return STATUS.get(err["code"], 200) if err else 200


@dataclass
class Caller:
    """Who sends the messages: the user, the OAuth token (``AuthInfo``) and client, the language."""

    user: Any
    auth: Any = None
    client_id: str = ""
    locale: str | None = None


async def handle(
    server: MCPServer,
    request: jsonrpc.Request,
    revision: str,
    session: SessionState | None,
    caller: Caller,
    outlet: Outlet | None = None,
    target: Any = UNSET,
) -> dict[str, Any] | None:
    """Run one request for ``caller`` through the engine; the response, or None if cancelled."""
    return await engine.handle_request(
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


# -- parsing -------------------------------------------------------------------------------
def parse(body: bytes) -> Any:
    try:
        return jsonrpc.loads(body)
    except ProtocolError as exc:
        raise Rejected(400, exc) from None


def classify(payload: Any) -> jsonrpc.Message:
    try:
        return jsonrpc.classify(payload)
    except ProtocolError as exc:
        raise Rejected(400, exc, jsonrpc.id_of(payload)) from None


def has_request(payload: Any) -> bool:
    """Whether a body holds a JSON-RPC request (notifications and responses are still taken while draining)."""
    items = payload if isinstance(payload, list) else [payload]
    return any(isinstance(m, dict) and "method" in m and "id" in m for m in items)


def has_envelope(params: Any) -> bool:
    """A request belongs to 2026-07-28 when its ``_meta`` names a protocol version (the SDK's rule)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


def stateless_request(
    payload: Any, version: str | None, header: Callable[[str], str | None], server: MCPServer
) -> tuple[jsonrpc.Request, str, Any] | None:
    """A 2026-07-28 POST body: its request, revision and target, or None for a notification (202).

    One message per body; a response is refused (clients send none in this revision).
    """
    if not isinstance(payload, dict):
        raise reject(400, "Invalid request: the body must be a single JSON-RPC message")
    message = classify(payload)
    if isinstance(message, jsonrpc.Response):
        raise reject(400, "Invalid request: 2026-07-28 clients send no responses")
    if isinstance(message, jsonrpc.Notification):
        if version is not None and version.strip() not in STATELESS_REVISIONS:
            raise Rejected(400, unsupported(version))
        return None  # no client notification has an effect over HTTP here (cancelling is closing the stream)
    assert isinstance(message, jsonrpc.Request)
    target = server.target(message.method, message.params or {})
    return message, stateless_revision(message, version, header, target), target


_site: MCPServer | None = None


def default_site() -> MCPServer:
    """``django_mcp.site``, looked up once (the package attribute is lazy, and asked on every request)."""
    global _site
    if _site is None:
        from . import site

        _site = site
    return _site


# -- 2026-07-28: the envelope and its mirrored headers ----------------------------------------
def stateless_revision(
    request: jsonrpc.Request,
    version: str | None = None,
    header: Callable[[str], str | None] | None = None,
    target: Any = None,
) -> str:
    """Check a 2026-07-28 request's envelope and return its revision, or raise ``Rejected``.

    Over HTTP (``header`` given) the ``MCP-Protocol-Version``, ``Mcp-Method``/``Mcp-Name`` and
    tool-parameter headers must mirror the body. The order is the one the conformance suite
    expects: envelope (-32602), header mismatch (-32020), unsupported version (-32022).
    """
    params = request.params or {}
    meta = params.get("_meta")
    rid = request.id

    def fail(exc: ProtocolError) -> Rejected:
        return Rejected(STATUS.get(exc.code, 400), exc, rid)

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
    if header is not None and request.method == "tools/call" and target is not None:
        try:
            headers.check_params(target.input_schema, params.get("arguments"), header)
        except ProtocolError as exc:
            raise fail(exc) from None
    if request.method == "subscriptions/listen":
        # Other requests are validated once, by the engine, with the same error and status.
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


# -- the handshake era --------------------------------------------------------------------------
async def initialize(
    server: MCPServer, request: jsonrpc.Request, caller: Caller, session: SessionState | None = None
) -> tuple[SessionState, dict[str, Any]]:
    """Negotiate a revision and start a session (or fill in ``session``, the legacy transport's).

    Returns the session and the response; a malformed ``initialize`` raises ``Rejected`` (400).
    """
    try:
        revision, params = negotiate_initialize(request)
    except ProtocolError as exc:
        raise Rejected(400, exc, request.id) from None
    client_info = params.get("clientInfo") or {}
    capabilities = params.get("capabilities") or {}
    if session is None:
        session = await store.create(revision, client_info, capabilities, caller.user, caller.client_id)
    else:
        session.revision, session.client_info, session.client_capabilities = revision, client_info, capabilities
        await store.update(
            session, protocol_version=revision, client_info=client_info, client_capabilities=capabilities
        )
    result = engine.finalize("initialize", revision, server.initialize_result(revision))
    return session, jsonrpc.result_message(request.id, result)


async def find_session(
    sid: str | None, caller: Caller, request_id: Any = None, version: str | None = None
) -> SessionState:
    """The caller's live session ``sid`` (its user and OAuth client), or ``Rejected``: 400 without one, 404."""
    if sid is None:
        raise reject(400, "Bad Request: Mcp-Session-Id header is required", request_id)
    session = await store.get_owned(sid, caller.user, caller.client_id)
    if session is None:
        raise reject(404, "Session not found", request_id)
    if version is not None and version != session.revision:
        raise reject(
            400,
            f"Bad Request: MCP-Protocol-Version {version!r} does not match the session's {session.revision!r}",
            request_id,
        )
    return session


async def absorb(
    message: jsonrpc.Message,
    session: SessionState | None,
    revision: str,
    cancel: Callable[[Any], Awaitable[None]] | None = None,
) -> None:
    """A client's notification or response: act on it, answer nothing.

    ``cancel`` stops a request by id (default: the engine's, across workers, for ``session``).
    """
    if isinstance(message, jsonrpc.Response):
        if session is not None:
            await engine.deliver_response(session.id, message)
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
            await engine.cancel(session.id, rid)


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
        raise reject(400, f"Invalid request: batches are not supported in {revision}")
    try:
        jsonrpc.check_batch(items, mcp_settings.MAX_BATCH_SIZE)
    except ProtocolError as exc:
        raise Rejected(400, exc) from None
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
    if requests:
        results = await asyncio.gather(*(run(r) for r in requests))
        responses.extend(r for r in results if r is not None)
    return responses


__all__ = [
    "STATUS",
    "UNSET",
    "Caller",
    "Rejected",
    "absorb",
    "batch",
    "classify",
    "default_site",
    "find_session",
    "handle",
    "has_envelope",
    "has_request",
    "initialize",
    "parse",
    "reject",
    "stateless_request",
    "stateless_revision",
    "status_for",
    "unsupported",
]
