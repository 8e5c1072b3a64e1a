"""``EXCEPTION_HANDLER(exc, context)``: the handler learns who called which tool (in process, through the one door).

Also ``Context``'s request-level API (``auth``, ``client_id``, ``server``, ``read_resource``).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.test import override_settings

from django_mcp import Context
from django_mcp.auth.bearer import AuthInfo
from django_mcp.exceptions import InputRequired, exception_handler, is_legacy_handler
from django_mcp.protocol.jsonrpc import Request
from django_mcp.runtime import dispatch
from django_mcp.server import MCPServer
from django_mcp.state.hub import hub
from django_mcp.state.sessions import SessionState

# The calls pass the kill switches middleware, which reads its switches from the database on first use.
pytestmark = pytest.mark.django_db(transaction=True)

server = MCPServer("exceptions")
seen: list[tuple[BaseException, dict[str, Any]]] = []
legacy_seen: list[tuple[BaseException, str | None]] = []


@server.tool
async def boom(ctx: Context, n: int = 1) -> str:
    """Fails with an unexpected error."""
    raise RuntimeError(f"boom {n}")


@server.tool
async def refused() -> str:
    """Fails with PermissionDenied."""
    raise PermissionDenied("not for you")


@server.tool
async def about(ctx: Context) -> dict[str, Any]:
    """What the Context says about the request."""
    return {
        "client_id": ctx.client_id,
        "scopes": sorted(ctx.auth.scopes) if ctx.auth else None,
        "same_server": ctx.server is server,
        "hello": await ctx.read_resource("exc://hello"),
    }


@server.tool
async def secret_read(ctx: Context) -> str:
    """Reads a resource the caller may not see."""
    await ctx.read_resource("exc://secret")
    return "read"


@server.resource("exc://hello", mime_type="text/plain")
def hello() -> str:
    return "hi"


@server.resource("exc://secret", mime_type="text/plain", check=lambda ctx: False)
def secret() -> str:
    return "hidden"


def recording_handler(exc: BaseException, context: dict[str, Any]) -> dict[str, Any] | None:
    seen.append((exc, context))
    if isinstance(exc, PermissionDenied):
        return None  # let it become a JSON-RPC error
    return {"content": [{"type": "text", "text": f"{context['tool']} failed for {context['user']}"}], "isError": True}


def legacy_handler(exc: BaseException, *, tool: str | None = None) -> dict[str, Any] | None:
    legacy_seen.append((exc, tool))
    return {"content": [{"type": "text", "text": f"legacy {tool}"}], "isError": True}


HANDLER = {"EXCEPTION_HANDLER": "tests.test_exception_handler.recording_handler"}
LEGACY = {"EXCEPTION_HANDLER": "tests.test_exception_handler.legacy_handler"}


def _session(user: Any) -> SessionState:
    return SessionState("sess-1", "2025-11-25", {"name": "test", "version": "1"}, {}, user.pk, initialized=True)


async def _call(
    tool: str,
    arguments: dict[str, Any] | None = None,
    *,
    user: Any = None,
    session: SessionState | None = None,
    revision: str = "2025-11-25",
    auth: Any = None,
    request_id: int = 7,
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": arguments or {}}
    if session is None and revision >= "2026":
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        }
    request = Request(request_id, "tools/call", params)
    caller = dispatch.Caller(user, auth, auth.client_id if auth is not None else "")
    try:
        got = await dispatch.handle(server, request, revision, session, caller)
    finally:
        # A session's call may join the hub (its session group), which then receives on this test's loop:
        # with the Redis layer, a receive cancelled by a closing loop may never end (routing.Hub.stop).
        await hub.stop()
    assert got is not None
    return got


@pytest.fixture(autouse=True)
def _fresh() -> None:
    seen.clear()
    legacy_seen.clear()


async def test_handler_receives_the_call_context() -> None:
    user = User(pk=41, username="ann")
    auth = AuthInfo(user=user, client_id="client-abc", scopes=frozenset({"mcp"}))
    with override_settings(DJANGO_MCP=HANDLER):
        response = await _call("boom", {"n": 3}, user=user, session=_session(user), auth=auth)
    assert response["result"] == {"content": [{"type": "text", "text": "boom failed for ann"}], "isError": True}
    exc, context = seen[0]
    assert isinstance(exc, RuntimeError) and str(exc) == "boom 3"
    assert context["tool"] == "boom" and context["user"] is user
    assert context["session_id"] == "sess-1" and context["request_id"] == 7
    assert context["client_id"] == "client-abc" and context["revision"] == "2025-11-25"
    assert context["arguments"] == {"n": 3} and context["server"] is server
    ctx = context["ctx"]
    assert isinstance(ctx, Context) and ctx.user is user and ctx.session_id == "sess-1" and ctx.auth is auth


async def test_stateless_call_context_and_none_reraises() -> None:
    with override_settings(DJANGO_MCP=HANDLER):
        response = await _call("refused", revision="2026-07-28", request_id=9)
    assert response["error"]["code"] == -32603  # the handler returned None: the exception propagated
    exc, context = seen[0]
    assert isinstance(exc, PermissionDenied) and context["tool"] == "refused"
    assert isinstance(context["user"], AnonymousUser)
    assert context["session_id"] is None and context["client_id"] is None
    assert context["request_id"] == 9 and context["revision"] == "2026-07-28" and context["arguments"] == {}


async def test_legacy_handler_is_called_the_old_way_with_a_warning() -> None:
    from django_mcp.exceptions import _legacy_cached

    _legacy_cached.cache_clear()
    user = User(pk=42, username="bob")
    with override_settings(DJANGO_MCP=LEGACY), pytest.warns(DeprecationWarning, match=r"\(exc, \*, tool\)"):
        response = await _call("boom", user=user, session=_session(user))
    assert response["result"]["content"][0]["text"] == "legacy boom"
    assert legacy_seen[0][1] == "boom"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # read once: no second warning
        assert is_legacy_handler(legacy_handler) is True
    assert is_legacy_handler(recording_handler) is False and is_legacy_handler(exception_handler) is False


async def test_default_handler_is_unchanged() -> None:
    user = User(pk=43, username="cy")
    response = await _call("boom", user=user, session=_session(user))
    text = response["result"]["content"][0]["text"]
    assert text == "Tool 'boom' failed with an internal error (RuntimeError)" and response["result"]["isError"]
    response = await _call("refused", user=user, session=_session(user))
    assert response["result"] == {"content": [{"type": "text", "text": "not for you"}], "isError": True}
    assert exception_handler(ValueError("x"), {"tool": "t"}) == {
        "content": [{"type": "text", "text": "Tool 't' failed with an internal error (ValueError)"}],
        "isError": True,
    }
    with pytest.warns(DeprecationWarning, match="tool=.... is deprecated"):
        old = exception_handler(ValueError("x"), tool="t")
    assert old == exception_handler(ValueError("x"), {"tool": "t"})


async def test_context_api_for_the_request() -> None:
    user = User(pk=44, username="dee")
    auth = AuthInfo(user=user, client_id="client-xyz", scopes=frozenset({"a", "b"}))
    response = await _call("about", user=user, session=_session(user), auth=auth)
    got = response["result"]["structuredContent"]
    assert got == {
        "client_id": "client-xyz",
        "scopes": ["a", "b"],
        "same_server": True,
        "hello": [{"uri": "exc://hello", "text": "hi", "mimeType": "text/plain"}],
    }
    refused = await _call("secret_read", user=user, session=_session(user))
    assert refused["error"]["code"] == -32002  # the caller may not read it: not found


def test_input_required_is_still_importable_from_server() -> None:
    from django_mcp.server import InputRequired as FromServer

    assert FromServer is InputRequired
