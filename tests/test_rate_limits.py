"""Rate limits and task quotas (``django_mcp.limits.middleware``), in process through the door.

Two users and two OAuth clients: a caller over its limit gets 429 + ``Retry-After`` (the JSON-RPC
error -32029 with the delay in its data) while the others go on; anonymous callers count per address
(the WSGI view's ``REMOTE_ADDR``); a tool's own ``rate_limit=``; the active-task cap holds against a
concurrent flood; the defaults of a fresh install are in force. The counters themselves: two
"workers" leasing from one cache (LocMem, and Redis when it runs) never admit more than the limit.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import re_path

from django_mcp import Context, MCPServer
from django_mcp.conf import DEFAULTS
from django_mcp.limits import middleware as limits
from django_mcp.limits.counting import Counters
from django_mcp.limits.rates import Rate, parse
from django_mcp.models import MCPTask
from django_mcp.tasks import EXTENSION
from django_mcp.test import AsyncMCPTestClient, MCPClientError, MCPTestClient
from django_mcp.transports.wsgi import mcp_view_for
from tests.support.servers import clear_cache

server = MCPServer("limits-tests")


@server.tool
async def echo(text: str) -> str:
    return text


@server.tool(rate_limit="2/minute")
async def scarce() -> str:
    """At most twice a minute per caller."""
    return "ok"


@server.tool(task="optional")
async def background(ctx: Context, text: str = "") -> str:
    return f"done {text}"


urlpatterns = [re_path(r"^mcp/?$", mcp_view_for(server, wsgi=True))]
TASKS = {"extensions": {EXTENSION: {}}}
OFF = {"user": None, "client": None, "tool": None, "anonymous": None}


@pytest.fixture(autouse=True)
def fresh_counts() -> Any:
    """Each test counts from zero (the counters live in the cache, and user ids come back after a flush)."""
    clear_cache()
    yield
    clear_cache()


def limited(rate_limits: dict[str, Any] | None = None, task_limits: dict[str, Any] | None = None, **more: Any) -> Any:
    mcp = {**settings.DJANGO_MCP, "RATE_LIMITS": {**OFF, **(rate_limits or {})}, "TASK_LIMITS": task_limits or {}}
    return override_settings(ROOT_URLCONF=__name__, DJANGO_MCP={**mcp, **more})


def call(client: MCPTestClient, name: str, **arguments: Any) -> dict[str, Any]:
    return client.request("tools/call", {"name": name, "arguments": arguments})


def refused(client: MCPTestClient, name: str, **arguments: Any) -> MCPClientError:
    with pytest.raises(MCPClientError) as info:
        call(client, name, **arguments)
    return info.value


def test_rate_strings_follow_the_limits_syntax() -> None:
    assert parse("120/minute") == (Rate(120, 60),)
    assert parse("10 per second") == (Rate(10, 1),)
    assert parse("5/2 hours") == (Rate(5, 7200),)
    assert parse("10/second; 600/hour") == (Rate(10, 1), Rate(600, 3600))
    for bad in ("often", "10/fortnight", "0/minute", "10", "/minute", ""):
        with pytest.raises(ValueError):
            parse(bad)


@pytest.mark.django_db(transaction=True)
def test_alice_over_her_limit_is_refused_while_bob_goes_on() -> None:
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    with limited({"user": "3/minute"}):
        mine, his = MCPTestClient(server, user=alice), MCPTestClient(server, user=bob)
        for i in range(3):
            assert call(mine, "echo", text=str(i))["content"][0]["text"] == str(i)
        error = refused(mine, "echo", text="again")
        assert (error.status, error.code) == (429, -32029)
        assert error.data["reason"] == "rate_limited" and error.data["retryable"] is True
        assert error.data["limit"] == "user" and 1 <= error.data["retryAfter"] <= 60
        assert "3 per minute" in error.message
        assert call(his, "echo", text="bob")["content"][0]["text"] == "bob"  # Bob has his own count
        assert refused(mine, "scarce").data["limit"] == "user"  # every request counts, not only one tool


@pytest.mark.django_db(transaction=True)
def test_a_client_limit_counts_every_user_of_that_client() -> None:
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    with limited({"client": "2/minute"}):
        first_alice, first_bob = MCPTestClient(server), MCPTestClient(server)
        first_alice.async_client.force_authenticate(alice, ["mcp"], client_id="first")
        first_bob.async_client.force_authenticate(bob, ["mcp"], client_id="first")
        second_alice = MCPTestClient(server)
        second_alice.async_client.force_authenticate(alice, ["mcp"], client_id="second")
        call(first_alice, "echo", text="1")
        call(first_bob, "echo", text="2")
        error = refused(first_alice, "echo", text="3")
        assert (error.status, error.data["limit"]) == (429, "client")
        assert refused(first_bob, "echo", text="4").data["limit"] == "client"  # the client's budget is shared
        assert call(second_alice, "echo", text="5")["content"][0]["text"] == "5"  # another client's is not


@pytest.mark.django_db(transaction=True)
def test_a_tools_own_rate_limit_counts_each_caller_of_that_tool() -> None:
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    with limited():
        mine, his = MCPTestClient(server, user=alice), MCPTestClient(server, user=bob)
        call(mine, "scarce")
        call(mine, "scarce")
        error = refused(mine, "scarce")
        assert (error.status, error.data["limit"]) == (429, "tool") and "2 per minute" in error.message
        assert call(mine, "echo", text="other tools")["content"][0]["text"] == "other tools"
        assert call(his, "scarce")["content"][0]["text"] == "ok"
    with limited({"tool": "1/minute"}):  # the default for tools without their own
        his = MCPTestClient(server, user=bob)
        call(his, "echo", text="once")
        assert refused(his, "echo", text="twice").data["limit"] == "tool"
        call(his, "scarce")  # its own 2/minute wins over the default: his second call of it this minute


@pytest.mark.django_db(transaction=True)
def test_anonymous_callers_count_per_address_and_get_429_with_retry_after() -> None:
    def post(http: Client, n: int, address: str) -> Any:
        body = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x"}},
        }
        body["params"]["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        return http.post(
            "/mcp/",
            json.dumps(body),
            content_type="application/json",
            HTTP_ACCEPT="application/json, text/event-stream",
            HTTP_MCP_PROTOCOL_VERSION="2026-07-28",
            HTTP_MCP_METHOD="tools/call",
            HTTP_MCP_NAME="echo",
            REMOTE_ADDR=address,
        )

    with limited({"anonymous": "2/minute"}):
        http = Client(SERVER_NAME="127.0.0.1", HTTP_HOST="127.0.0.1")
        assert post(http, 1, "127.0.0.1").status_code == 200
        assert post(http, 2, "127.0.0.1").status_code == 200
        r = post(http, 3, "127.0.0.1")
        assert r.status_code == 429 and 1 <= int(r["Retry-After"]) <= 60
        error = r.json()["error"]
        assert error["code"] == -32029 and error["data"]["limit"] == "anonymous"
        assert error["data"]["retryAfter"] == int(r["Retry-After"])
        assert post(http, 4, "127.0.0.2").status_code == 200  # another address has its own count


# -- tasks -------------------------------------------------------------------------------------------------


def start(client: MCPTestClient) -> str:
    created = call(client, "background", text="x")
    assert created["resultType"] == "task", created
    return str(created["taskId"])


@pytest.mark.django_db(transaction=True)
def test_the_active_task_cap_refuses_alice_while_bob_still_starts_tasks() -> None:
    """No db_worker runs here: the tasks stay queued (``working``) and count until one ends."""
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    with limited(task_limits={"active_per_user": 3}):
        mine = MCPTestClient(server, user=alice, capabilities=TASKS)
        his = MCPTestClient(server, user=bob, capabilities=TASKS)
        ids = [start(mine) for _ in range(3)]
        error = refused(mine, "background")
        assert (error.status, error.code, error.data["limit"]) == (429, -32029, "tasks.active.user")
        assert error.data["retryAfter"] >= 1 and "3 queued or running" in error.message
        start(his)
        assert call(mine, "echo", text="still")["content"][0]["text"] == "still"  # only new tasks are refused
        mine.request("tasks/cancel", {"taskId": ids[0]})  # one ends: a place is free again
        start(mine)
    assert MCPTask.objects.filter(user=alice).count() == 4


@pytest.mark.django_db(transaction=True)
def test_a_client_task_cap_counts_every_user_of_that_client() -> None:
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    with limited(task_limits={"active_per_user": None, "active_per_client": 2}):
        clients = []
        for user, client_id in ((alice, "first"), (bob, "first"), (alice, "second")):
            c = MCPTestClient(server, capabilities=TASKS)
            c.async_client.force_authenticate(user, ["mcp"], client_id=client_id)
            clients.append(c)
        start(clients[0])
        start(clients[1])
        assert refused(clients[0], "background").data["limit"] == "tasks.active.client"
        assert refused(clients[1], "background").data["limit"] == "tasks.active.client"
        start(clients[2])


@pytest.mark.django_db(transaction=True)
def test_a_concurrent_flood_cannot_pass_the_active_task_cap() -> None:
    """Twelve calls at once, each checking before any row exists: the admissions in flight count too."""
    alice = User.objects.create_user("alice")

    async def flood() -> list[dict[str, Any] | MCPClientError]:
        client = AsyncMCPTestClient(server, user=alice, capabilities=TASKS)

        async def one() -> dict[str, Any] | MCPClientError:
            try:
                return await client.request("tools/call", {"name": "background", "arguments": {}})
            except MCPClientError as exc:
                return exc

        return list(await asyncio.gather(*(one() for _ in range(12))))

    with limited(task_limits={"active_per_user": 4}):
        outcomes = async_to_sync(flood)()
    created = [o for o in outcomes if isinstance(o, dict)]
    errors = [o for o in outcomes if isinstance(o, MCPClientError)]
    assert 1 <= len(created) <= 4 and {e.data["limit"] for e in errors} == {"tasks.active.user"}
    assert MCPTask.objects.filter(user=alice, status="working").count() == len(created)


@pytest.mark.django_db(transaction=True)
def test_tasks_created_per_period() -> None:
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    with limited(task_limits={"active_per_user": None, "created_per_user": "2/hour"}):
        mine = MCPTestClient(server, user=alice, capabilities=TASKS)
        for task_id in (start(mine), start(mine)):
            mine.request("tasks/cancel", {"taskId": task_id})  # none active: only the period's count refuses
        error = refused(mine, "background")
        # Fixed windows end on the clock's hour: the wait is what is left of it (8 s at xx:59:52, seen in CI).
        wait, left = error.data["retryAfter"], 3600 - time.time() % 3600
        assert error.data["limit"] == "tasks.created.user" and 0 < wait <= 3600 and (wait - left) % 3600 <= 2, (
            wait,
            left,
        )
        start(MCPTestClient(server, user=bob, capabilities=TASKS))
    with limited(task_limits={"active_per_user": 1, "created_per_user": "2/hour"}):
        his = MCPTestClient(server, user=bob, capabilities=TASKS)  # one created, still active
        for _ in range(5):  # refused for the full cap: these do not spend his tasks created this hour
            assert refused(his, "background").data["limit"] == "tasks.active.user"
        for task in MCPTask.objects.filter(user=bob):
            his.request("tasks/cancel", {"taskId": task.pk})
        start(his)  # his second of the hour


@pytest.mark.django_db(transaction=True)
def test_a_fresh_install_caps_active_tasks_at_20_per_user() -> None:
    """The defaults, untouched: 20 tasks queued or running per user, the 21st refused."""
    alice = User.objects.create_user("alice")
    fresh = {k: v for k, v in settings.DJANGO_MCP.items() if k not in ("RATE_LIMITS", "TASK_LIMITS")}
    with override_settings(ROOT_URLCONF=__name__, DJANGO_MCP=fresh):
        assert limits.rules().active_per_user == 20 and limits.rules().user == (Rate(600, 60),)
        assert limits.rules().anonymous == (Rate(600, 60),) and limits.rules().client == ()
        mine = MCPTestClient(server, user=alice, capabilities=TASKS)
        for _ in range(20):
            start(mine)
        assert refused(mine, "background").data["limit"] == "tasks.active.user"
    assert DEFAULTS["TASK_LIMITS"]["active_per_client"] == 100


# -- the counters: workers leasing from one shared cache ------------------------------------------------


def _two_workers_share_one_budget(alias: str) -> None:
    rate = Rate(100, 3600)  # leased five at a time
    workers = [Counters(), Counters()]

    async def run() -> list[int]:
        admitted = [0, 0]
        for i in range(300):  # alternate, as a load balancer would
            if await workers[i % 2].take(alias, "u-shared", rate) is None:
                admitted[i % 2] += 1
        return admitted

    admitted = async_to_sync(run)()
    assert sum(admitted) == 100 and admitted[0] > 0 and admitted[1] > 0  # together, never more than the limit


@pytest.mark.django_db
def test_two_workers_share_one_budget_in_locmem() -> None:
    with override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}):
        _two_workers_share_one_budget("default")


@pytest.mark.django_db
def test_two_workers_share_one_budget_in_redis(redis: None) -> None:
    backend = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:6379/1"}
    with override_settings(CACHES={"default": {**backend, "KEY_PREFIX": f"limits-test-{uuid.uuid4().hex[:8]}"}}):
        clear_cache()
        _two_workers_share_one_budget("default")


@pytest.mark.django_db
def test_small_limits_are_counted_call_by_call_and_a_lost_cache_admits() -> None:
    rate = Rate(3, 60)
    with override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}):
        a, b = Counters(), Counters()

        async def run() -> list[int | None]:
            return [await (a if i % 2 else b).take("default", "k", rate) for i in range(5)]

        outcomes = async_to_sync(run)()
        assert outcomes[:3] == [None, None, None] and all(isinstance(w, int) and w >= 1 for w in outcomes[3:])
    missing = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1"}}
    with override_settings(CACHES=missing):  # nothing listens there: fail open, never a refusal or an error
        c = Counters()

        async def lost() -> list[int | None]:
            return [await c.take("default", "k", rate) for _ in range(5)]

        assert async_to_sync(lost)() == [None] * 5
