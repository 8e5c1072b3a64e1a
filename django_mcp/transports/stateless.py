"""The 2026-07-28 (stateless) side of the HTTP endpoint.

Every request carries its own ``_meta`` envelope and mirrors method, name and
version into headers; there is no session. The checks run before anything is
streamed, in the order the conformance suite expects: envelope (-32602), header
mismatch (-32020), unsupported version (-32022), unknown method (-32601, 404).
``subscriptions/listen`` opens a long-lived SSE stream fed from the hub.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from ..conf import mcp_settings
from ..protocol import headers, jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..protocol.validation import validate_request
from ..protocol.versions import STATELESS_REVISIONS
from ..routing import BROADCAST, hub
from ..subscriptions import ListenFilter

if TYPE_CHECKING:
    from .http import MCPConsumer

STATUS = {
    jsonrpc.INVALID_PARAMS: 400,
    jsonrpc.INVALID_REQUEST: 400,
    jsonrpc.PARSE_ERROR: 400,
    jsonrpc.HEADER_MISMATCH: 400,
    jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    jsonrpc.UNSUPPORTED_PROTOCOL_VERSION: 400,
    jsonrpc.METHOD_NOT_FOUND: 404,
}


def status_for(response: dict[str, Any]) -> int:
    err = response.get("error")
    return STATUS.get(err["code"], 200) if err else 200


def looks_stateless(payload: Any, consumer: MCPConsumer) -> bool:
    """No version header: modern only if the body carries the modern envelope and no session."""
    if consumer.header(b"mcp-session-id") is not None or not isinstance(payload, dict):
        return False
    meta = (payload.get("params") or {}).get("_meta") if isinstance(payload.get("params"), dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


def _fail(status: int, exc: ProtocolError, request_id: Any) -> Exception:
    from .http import HTTPError

    err = HTTPError(status, exc.code, exc.message, exc.data, request_id=request_id)
    return err


def preflight(consumer: MCPConsumer, request: jsonrpc.Request, version: str | None) -> str:
    """Run the envelope and header checks; return the revision or raise an HTTPError."""
    params = request.params or {}
    meta = params.get("_meta")
    rid = request.id

    def header(name: str) -> str | None:
        return consumer.header(name.encode())

    if not isinstance(meta, dict):
        raise _fail(
            400,
            ProtocolError(
                jsonrpc.INVALID_PARAMS,
                "params._meta must be an object carrying the required "
                f"{PROTOCOL_VERSION_META_KEY!r} and {CLIENT_CAPABILITIES_META_KEY!r} keys",
            ),
            rid,
        )
    if PROTOCOL_VERSION_META_KEY not in meta or CLIENT_CAPABILITIES_META_KEY not in meta:
        missing = [k for k in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if k not in meta]
        raise _fail(400, ProtocolError(jsonrpc.INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}"), rid)
    requested = meta[PROTOCOL_VERSION_META_KEY]
    if version is None:
        raise _fail(400, headers.mismatch("MCP-Protocol-Version header is required"), rid)
    if version.strip() != requested:
        raise _fail(
            400,
            headers.mismatch(f"MCP-Protocol-Version header {version!r} does not match _meta value {requested!r}"),
            rid,
        )
    try:
        headers.check_standard(request.method, params, header)
    except ProtocolError as exc:
        raise _fail(400, exc, rid) from None
    if not isinstance(requested, str):
        raise _fail(400, ProtocolError(jsonrpc.INVALID_PARAMS, "protocolVersion must be a string"), rid)
    if requested not in STATELESS_REVISIONS:
        raise _fail(
            400,
            ProtocolError(
                jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                {"supported": list(STATELESS_REVISIONS), "requested": requested},
            ),
            rid,
        )
    if request.method == "tools/call":
        tool = consumer.get_server().tools.get(params.get("name", ""))
        if tool is not None:
            try:
                headers.check_params(tool.input_schema, params.get("arguments"), header)
            except ProtocolError as exc:
                raise _fail(400, exc, rid) from None
    if request.method == "subscriptions/listen":
        # Other requests are validated once, by the engine, with the same error and status.
        try:
            validate_request(request.method, requested, request.params)
        except ProtocolError as exc:
            raise _fail(STATUS.get(exc.code, 400), exc, rid) from None
    return requested


async def handle_post(consumer: MCPConsumer, payload: Any, version: str | None) -> None:
    if not isinstance(payload, dict):
        raise _fail(
            400,
            ProtocolError(jsonrpc.INVALID_REQUEST, "Invalid request: the body must be a single JSON-RPC message"),
            None,
        )
    try:
        message = jsonrpc.classify(payload)
    except ProtocolError as exc:
        raise _fail(400, exc, jsonrpc.id_of(payload)) from None
    if isinstance(message, jsonrpc.Response):
        raise _fail(
            400, ProtocolError(jsonrpc.INVALID_REQUEST, "Invalid request: 2026-07-28 clients send no responses"), None
        )
    if isinstance(message, jsonrpc.Notification):
        if version is not None and version.strip() not in STATELESS_REVISIONS:
            from .http import HTTPError

            raise HTTPError(
                400,
                jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                {"supported": list(STATELESS_REVISIONS), "requested": version},
            )
        # No client notification has an effect over HTTP in this revision (cancellation is closing the stream).
        await consumer.empty_response(202)
        return
    revision = preflight(consumer, message, version)
    if message.method == "subscriptions/listen":
        await listen(consumer, message, revision)
        return
    await consumer.run_request(message, None, revision=revision, cancel_on_close=True)


async def listen(consumer: MCPConsumer, request: jsonrpc.Request, revision: str) -> None:
    """A ``subscriptions/listen`` stream: acknowledgement first, then the opted-in notifications."""
    from ..drain import drain
    from .http import SSE_CT, HTTPError, ended_by_drain, sse_event, stream_slot

    if not consumer.accepts(SSE_CT):
        raise HTTPError(406, jsonrpc.INVALID_REQUEST, "Not Acceptable: subscriptions/listen needs text/event-stream")
    from ..engine import Exchange

    listen_filter = ListenFilter(request)
    server = consumer.get_server()
    user, auth = consumer.scope.get("user"), consumer.scope.get("mcp_auth")
    await listen_filter.restrict(server, Exchange(server, request, revision, None, user, None, auth=auth))
    queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    def on_broadcast(payload: dict[str, Any]) -> None:
        message = listen_filter.notification_for(payload)
        if message is not None:
            queue.put_nowait(message)

    with stream_slot():
        await hub.join(BROADCAST, on_broadcast)
        try:
            await consumer.send_headers(
                status=200,
                headers=[(b"content-type", SSE_CT), (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")],
            )
            await consumer.safe_body(sse_event(jsonrpc.dumps(listen_filter.acknowledgement())), more=True)
            watcher = asyncio.ensure_future(consumer._watch_disconnect(lambda: queue.put_nowait(None)))
            drained = ended_by_drain(queue)  # shutting down: the client listens again on another worker
            try:
                while consumer.connected:
                    try:
                        item = await asyncio.wait_for(queue.get(), mcp_settings.SSE_KEEPALIVE)
                    except asyncio.TimeoutError:
                        await consumer.safe_body(b": keep-alive\n\n", more=True)
                        continue
                    if item is None:
                        break
                    await consumer.safe_body(sse_event(jsonrpc.dumps(item)), more=True)
            finally:
                drain.discard(drained)
                watcher.cancel()
        finally:
            await hub.leave(BROADCAST, on_broadcast)
            await consumer.safe_body(b"")
