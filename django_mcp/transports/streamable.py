"""The Streamable HTTP endpoint without I/O: what a POST, GET or DELETE comes to.

Both HTTP front ends (the Channels consumer in ``transports.http`` and the Django view in
``views``) read the bytes and authenticate with ``transports.guards``; then this module
decides what to answer, and the front end only writes it. An ``Answer`` is a complete
reply (status, headers, body bytes with their ``Content-Length``); a ``Run`` is one
JSON-RPC request for the front end to run its own way: streamed as SSE by the consumer,
buffered by the view, which holds no stream open. Neither touches a socket here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from ..auth.challenge import Challenge
from ..protocol import jsonrpc
from ..protocol.versions import LATEST, STATELESS_REVISIONS
from ..runtime import dispatch
from ..runtime.dispatch import Caller, Rejected
from ..runtime.drain import HEADERS as DRAIN_HEADERS
from ..runtime.drain import drain, shutdown_error
from ..server import MCPServer
from ..state.sessions import SessionState, store
from . import guards
from .base import BODILESS, JSON_CT, HTTPError

SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"
ZERO_LENGTH = (b"content-length", b"0")

Headers = list[tuple[bytes, bytes]]


class Answer(NamedTuple):
    """A whole reply: ``body`` is sent with its length (never chunked: one write on the server)."""

    status: int
    headers: Headers
    body: bytes = b""


class Run(NamedTuple):
    """One request to run, and how its answer is framed (see ``reply``)."""

    request: jsonrpc.Request
    session: SessionState | None
    revision: str
    #: The 2026-07-28 era: a client's disconnect cancels the call; the status follows the error code.
    stateless: bool = False
    target: Any = dispatch.UNSET


def json_answer(status: int, payload: Any, extra: Headers | None = None) -> Answer:
    body = jsonrpc.dumps(payload)
    length = (b"content-length", b"%d" % len(body))
    headers = [(b"content-type", JSON_CT), length, *extra] if extra else [(b"content-type", JSON_CT), length]
    return Answer(status, headers, body)


def empty_answer(status: int, extra: Headers | None = None) -> Answer:
    headers = list(extra or ())
    if status not in BODILESS:  # an explicit empty body (202, 200), not chunked
        headers.append(ZERO_LENGTH)
    return Answer(status, headers)


def refused(exc: Rejected) -> Answer:
    return json_answer(exc.status, exc.message(), getattr(exc, "headers", None))


def failed(exc: Exception) -> Answer:
    """Any exception a request raised, as its answer: a refusal, an auth challenge, or a logged 503/500."""
    if isinstance(exc, Rejected):
        return refused(exc)
    if isinstance(exc, Challenge):
        return refused(dispatch.challenge_rejection(exc))
    return refused(guards.failure(exc))  # 503 + Retry-After for an unavailable backend, else 500


def draining(request_id: Any = None) -> Answer:
    """The retryable 503 of a worker shutting down."""
    return json_answer(503, shutdown_error(request_id), DRAIN_HEADERS)


def revision_of(session: SessionState | None) -> str:
    return session.revision if session else LATEST


def reply(run: Run, response: dict[str, Any]) -> Answer:
    """The JSON answer to a request that ran and streamed nothing."""
    if run.session is not None:
        return json_answer(200, response, [(SESSION_HEADER, run.session.id.encode())])
    return json_answer(dispatch.status_for(response), response)


async def post(
    server: MCPServer,
    headers: dict[bytes, bytes],
    body: bytes,
    caller: Caller,
    run_batched: Callable[[jsonrpc.Request, SessionState], Awaitable[dict[str, Any] | None]],
) -> Answer | Run:
    """A POST body (its size already checked): the answer, or the one request to run.

    The era is chosen here: ``MCP-Protocol-Version: 2026-07-28`` (or its envelope without a
    session) is stateless, anything else goes through the handshake-era session rules.
    """
    payload = dispatch.parse(body)
    if drain.refusing and dispatch.has_request(payload):
        return draining(jsonrpc.id_of(payload))
    version = guards.header(headers, VERSION_HEADER)
    session_id = guards.header(headers, SESSION_HEADER)
    if dispatch.is_stateless_post(payload, version, session_id):
        incoming = dispatch.stateless_request(
            payload, version, lambda name: guards.header(headers, name.encode()), server
        )
        if incoming is None:
            return empty_answer(202)
        message, revision, target = incoming
        message.size = len(body)
        return Run(message, None, revision, True, target)
    handshake = await dispatch.handshake_post(server, payload, version, session_id, caller, run_batched)
    session = handshake.session
    if handshake.request is not None:
        if not isinstance(payload, list):
            handshake.request.size = len(body)
        return Run(handshake.request, session, session.revision)
    if handshake.body is None:
        return empty_answer(202)
    return json_answer(200, handshake.body, [(SESSION_HEADER, session.id.encode())])


def check_get(headers: dict[bytes, bytes]) -> Answer | None:
    """A GET's refusals before its session is looked up (drain, the stateless era); None to go on."""
    if drain.refusing:
        return draining()
    if guards.header(headers, VERSION_HEADER) in STATELESS_REVISIONS:
        raise HTTPError(405, jsonrpc.INVALID_REQUEST, "Method Not Allowed: 2026-07-28 has no GET stream")
    return None


async def find_session(
    headers: dict[bytes, bytes], caller: Caller, request_id: Any = None, version: str | None = None
) -> SessionState:
    """The caller's session named by ``Mcp-Session-Id`` (400 without one, 404 if not the caller's)."""
    return await dispatch.find_session(guards.header(headers, SESSION_HEADER), caller, request_id, version)


async def delete(headers: dict[bytes, bytes], caller: Caller) -> Answer:
    """DELETE ends the caller's session (the stateless era has none: 405)."""
    if guards.header(headers, VERSION_HEADER) in STATELESS_REVISIONS:
        raise HTTPError(405, jsonrpc.INVALID_REQUEST, "Method Not Allowed: 2026-07-28 has no sessions")
    session = await find_session(headers, caller)
    await store.end(session.id, caller.transport)
    return empty_answer(200)


__all__ = ["Answer", "Run", "delete", "empty_answer", "failed", "json_answer", "post", "reply"]
