"""The one door (``dispatch.handle``): every caller is refused, checked and answered alike.

In process: the test client against the HTTP endpoint (the Django view, OAuth on, a real
django-oauth-toolkit token), and a task's run against a direct call of the same tool.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import signal
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from django_mcp import Context, MCPServer
from django_mcp.exceptions import InvalidParams, MCPError, ToolError
from django_mcp.models import MCPTask
from django_mcp.tasks import EXTENSION, jobs
from django_mcp.test import MCPClientError, MCPTestClient
from tests.support.door import ENDPOINT, HTTP, _oauth_settings, _token, server

ERAS = ["2025-11-25", "2026-07-28"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize(
    ("method", "params"),
    [("tools/call", {"name": "vault_write", "arguments": {"text": "x"}}), ("prompts/get", {"name": "vault_prompt"})],
)
def test_test_client_refuses_a_missing_scope_exactly_as_http(version: str, method: str, params: dict[str, Any]) -> None:
    alice = User.objects.create_user("alice")
    with _oauth_settings():
        http = HTTP(_token(alice, "mcp"), version)
        http.open()
        r = http.post({"jsonrpc": "2.0", "id": 5, "method": method, "params": dict(params)})
        assert r.status_code == 403
        assert 'error="insufficient_scope"' in r["WWW-Authenticate"]
        over_http = r.json()["error"]

        client = MCPTestClient(server, protocol_version=version)
        client.force_authenticate(alice, scopes=["mcp"])
        with pytest.raises(MCPClientError) as refused:
            client.request(method, dict(params))
    error = refused.value
    assert (error.status, {"code": error.code, "message": error.message, "data": error.data}) == (403, over_http)
    needs = "vault:write" if method == "tools/call" else "vault:read"
    assert over_http["data"] == {"error": "insufficient_scope", "scope": needs}
    # With the scope, both let the call in.
    client.force_authenticate(alice, scopes=["mcp", "vault:write", "vault:read"])
    assert client.request(method, dict(params))


@pytest.mark.django_db(transaction=True)
def test_a_refused_item_of_a_batch_is_its_error_and_the_others_run() -> None:
    alice = User.objects.create_user("alice")
    with _oauth_settings():
        http = HTTP(_token(alice, "mcp"), "2025-03-26")
        http.open()
        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "vault_write", "arguments": {}}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "open_tool", "arguments": {}}},
        ]
        r = http.client.post(
            "/mcp/",
            json.dumps(batch),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {http.token}",
            HTTP_ACCEPT="application/json, text/event-stream",
            HTTP_MCP_SESSION_ID=http.sid,
            HTTP_MCP_PROTOCOL_VERSION="2025-03-26",
        )
    assert r.status_code == 200
    answers = {a["id"]: a for a in r.json()}
    # No header can carry the scopes of one item of a batch: its error data names them, to step up to.
    assert answers[1]["error"]["data"] == {"error": "insufficient_scope", "scope": "vault:write"}
    assert answers[2]["result"]["content"][0]["text"] == "open"


# -- a task's run maps errors as a direct call does ----------------------------------------------------

tasks_server = MCPServer("door-task-tests")


@tasks_server.tool(task="optional")
def needs_int(n: int) -> int:
    return n


@tasks_server.tool(task="optional")
def refuses(ctx: Context) -> str:
    raise InvalidParams("n must be even", {"field": "n"})


@tasks_server.tool(task="optional")
def custom_code() -> str:
    raise MCPError("not now", {"retry": False}, code=-32042)


@tasks_server.tool(task="optional")
def crashes() -> str:
    raise RuntimeError("a bug")


@tasks_server.tool(task="optional")
def tool_error() -> str:
    raise ToolError("not today")


_unfinished: list[Any] = []


@tasks_server.tool(task="optional")
async def leaves_a_generator() -> str:
    """Its generator's ``finally`` runs in ``asyncio.run``'s teardown, after the task's outcome is stored."""

    async def tail() -> Any:
        try:
            yield 1
            yield 2
        finally:
            signal.raise_signal(signal.SIGTERM)

    generator = tail()
    await generator.__anext__()
    _unfinished.append(generator)
    return "done"


def _backend(name: str) -> str:
    try:
        import django.tasks  # noqa: F401
    except ImportError:
        return f"django_tasks.backends.{name}"
    return f"django.tasks.backends.{name}"


def _immediate() -> str:
    return _backend("immediate.ImmediateBackend")


def _outcome_of_direct_call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        result = MCPTestClient(tasks_server).request("tools/call", {"name": tool, "arguments": arguments})
    except MCPClientError as exc:
        error = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return {"error": error}
    result.pop("_meta", None)
    result.pop("resultType", None)
    return {"result": result}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("tool", "arguments", "kind"),
    [
        ("needs_int", {"n": "x"}, "inline"),  # invalid arguments: refused before a task is made
        ("refuses", {}, "error"),
        ("custom_code", {}, "error"),
        ("crashes", {}, "result"),  # the exception handler: an isError result
        ("tool_error", {}, "result"),
    ],
)
def test_task_run_maps_errors_as_a_direct_call(tool: str, arguments: dict[str, Any], kind: str) -> None:
    with override_settings(TASKS={"default": {"BACKEND": _immediate()}}):
        direct = _outcome_of_direct_call(tool, arguments)
        as_task = MCPTestClient(tasks_server, capabilities={"extensions": {EXTENSION: {}}})
        created = as_task.request("tools/call", {"name": tool, "arguments": arguments})
        if kind == "inline":
            assert created.pop("resultType") == "complete" and created.pop("_meta")
            assert {"result": created} == direct and created["isError"] is True
            return
        assert created["resultType"] == "task", created
        task = as_task.request("tasks/get", {"taskId": created["taskId"]})
    assert created["status"] == ("failed" if kind == "error" else "completed")
    got = {"error": task["error"]} if kind == "error" else {"result": task["result"]}
    if kind == "result":
        got["result"].pop("_meta", None)
        got["result"].pop("resultType", None)
        assert got["result"]["isError"] is True
    assert got == direct


@pytest.mark.django_db(transaction=True)
def test_a_stop_signal_after_the_run_is_stored_only_tells_the_worker() -> None:
    """db_worker's SIGTERM during the loop's teardown: the worker stops after this task, which stays done.

    Before, the signal interrupted the teardown (channels_redis flushes its layer in ``loop.close``): a
    finished task was requeued and the worker's log showed a KeyboardInterrupt traceback.
    """
    with override_settings(TASKS={"default": {"BACKEND": _backend("dummy.DummyBackend")}}):
        client = MCPTestClient(tasks_server, capabilities={"extensions": {EXTENSION: {}}})
        task_id = client.request("tools/call", {"name": "leaves_a_generator", "arguments": {}})["taskId"]
    told: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: told.append(signum))  # as db_worker's
    try:
        jobs.run_tool_call.call(task_id)  # on the main thread, as db_worker runs it
    except KeyboardInterrupt:
        pytest.fail("the stop signal interrupted a finished run")
    finally:
        signal.signal(signal.SIGTERM, previous)
        _unfinished.clear()
    assert told == [signal.SIGTERM]
    row = MCPTask.objects.get(pk=task_id)
    assert (row.status, row.attempts) == (MCPTask.COMPLETED, 1)


# -- a task's run: the rights of the token behind it, as they are when it runs --------------------------


def _family(user: User, scope: str) -> tuple[str, Any]:
    """An access token with a refresh token (one family), as DOT issues them; the bearer and the refresh token."""
    from oauth2_provider.models import RefreshToken

    raw = _token(user, scope)
    access = _access(raw)
    refresh = RefreshToken.objects.create(
        user=user, application=access.application, access_token=access, token=secrets.token_urlsafe(30),
        token_family=uuid.uuid4(),
    )  # fmt: skip
    return raw, refresh


def _access(raw: str) -> Any:
    from oauth2_provider.models import AccessToken

    return AccessToken.objects.get(token_checksum=hashlib.sha256(raw.encode()).hexdigest())


def _rotate(refresh: Any, scope: str) -> Any:
    """DOT's refresh with rotation: the old pair revoked (its access token deleted), a new pair in the family."""
    from oauth2_provider.models import AccessToken, RefreshToken

    refresh.revoke()
    access = AccessToken.objects.create(
        user=refresh.user, application=refresh.application, token=secrets.token_urlsafe(30), scope=scope,
        expires=timezone.now() + timedelta(hours=1), source_refresh_token=refresh, resource=[ENDPOINT],
    )  # fmt: skip
    return RefreshToken.objects.create(
        user=refresh.user, application=refresh.application, access_token=access, token=secrets.token_urlsafe(30),
        token_family=refresh.token_family,
    )  # fmt: skip


def _queue(http: HTTP, text: str) -> str:
    """A task of ``vault_task`` created over HTTP with the bearer token (it waits: the Dummy backend runs nothing)."""
    call = {"name": "vault_task", "arguments": {"text": text}, "task": {}}
    r = http.post({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call})
    assert r.status_code == 200, r.content
    return str(r.json()["result"]["task"]["taskId"])


@pytest.mark.django_db(transaction=True)
def test_a_task_follows_its_token_through_refreshes_until_its_family_is_revoked() -> None:
    """A refresh keeps a task's grant (with the refreshed scopes); reuse protection revoking the family ends it."""
    from oauth2_provider.models import RefreshToken

    alice = User.objects.create_user("alice")
    with _oauth_settings(), override_settings(TASKS={"default": {"BACKEND": _backend("dummy.DummyBackend")}}):
        raw, refresh = _family(alice, "mcp vault:write")
        http = HTTP(raw, "2025-11-25")
        http.open()
        kept, narrowed, ended = _queue(http, "a"), _queue(http, "b"), _queue(http, "c")
        refresh = _rotate(refresh, "mcp vault:write")  # the creating token is deleted
        jobs.run_tool_call.call(kept)
        refresh = _rotate(refresh, "mcp")
        jobs.run_tool_call.call(narrowed)
        RefreshToken.revoke_family(refresh.token_family)  # a replayed refresh token: the whole family goes
        jobs.run_tool_call.call(ended)
    rows = {t.pk: t for t in MCPTask.objects.all()}
    assert (rows[kept].status, rows[kept].result["content"][0]["text"]) == (MCPTask.COMPLETED, "stored a")
    assert rows[narrowed].status == MCPTask.FAILED
    assert rows[narrowed].error["data"] == {"error": "insufficient_scope", "scope": "vault:write"}
    assert rows[ended].status == MCPTask.FAILED
    assert rows[ended].error == {"code": -32600, "message": "The access token that created this task was revoked"}
