"""One large existing project with everything at once, served with only the documented settings and ``mcp.py``
files (``tests.largeproject``): a custom user model without ``is_staff``, no ``django.contrib.admin``, a large DRF
API (django-filter filtersets, drf-spectacular), django-guardian's object permissions, change-logging and tenancy
middleware, the project's own API tokens as MCP bearer tokens, and every URL of the package under
``/plugins/mcp/``; under daphne (``django_mcp.asgi:application``) and in WSGI mode (gunicorn), through the official
Python SDK client, which validates every structured result against the tool's output schema."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from tests.support.callers import bearer_client, text
from tests.support.seeds import CATALOG_SETUP as CATALOG
from tests.support.servers import ROOT, LiveServer, server_env, start_server
from tests.support.wsgi_server import start_wsgi_server

pytestmark = pytest.mark.own_config  # one configuration: its own settings, SQLite, the in-memory layer

PREFIX = "/plugins/mcp/"
SETTINGS = "tests.largeproject.settings"

PEOPLE = """
import datetime, json
from django.contrib.auth import get_user_model
from django.utils import timezone
from guardian.shortcuts import assign_perm
from tests.objpermapp.models import Ledger
from tests.tokenapp.models import ApiToken, Note
Person = get_user_model()
alice, bob = Person.objects.create_user("alice"), Person.objects.create_user("bob")
for user in (alice, bob):
    for n in range(2):
        ledger = Ledger.objects.create(name=f"{user.username} ledger {n}", owner=user)
        assign_perm("objpermapp.view_ledger", user, ledger)
    Note.objects.create(owner=user, text=f"{user.username}'s note")
ApiToken.objects.create(key="pat_alice_write", user=alice, write_enabled=True)
ApiToken.objects.create(key="pat_alice_read", user=alice)
ApiToken.objects.create(key="pat_bob_write", user=bob, write_enabled=True)
ApiToken.objects.create(key="pat_alice_old", user=alice, write_enabled=True,
                        expires=timezone.now() - datetime.timedelta(minutes=1))
print(json.dumps({u.username: list(Ledger.objects.filter(owner=u).values_list("pk", flat=True)) for u in (alice, bob)}
                 | {"bob_note": Note.objects.get(owner=bob).pk}))
"""


@pytest.fixture(scope="module", params=["asgi", "wsgi"])
def large(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    tmp = tmp_path_factory.mktemp(f"large-{request.param}")
    if request.param == "asgi":
        server: LiveServer = start_server(
            server_env(tmp, settings=SETTINGS), tmp / "server.log", app="django_mcp.asgi:application"
        )
    else:
        env = server_env(tmp, settings=SETTINGS, MCP_LARGE_WSGI="1")
        server = start_wsgi_server(env, tmp / "server.log", "django.core.wsgi:get_wsgi_application()")
    server.manage("shell", "-c", CATALOG)
    facts = json.loads(server.manage("shell", "-c", PEOPLE).splitlines()[-1])
    server.url = server.base + PREFIX
    yield server, facts
    server.stop()
    log = (tmp / "server.log").read_text(errors="replace")
    assert "Traceback" not in log and " 500 " not in log, log[-5000:]


async def _tools(c: Any) -> dict[str, types.Tool]:
    return {t.name: t for t in (await c.list_tools()).tools}


async def test_every_drf_tool_passes_the_sdk_clients_validation(large: Any) -> None:
    server, _facts = large
    async with bearer_client(server.url, "pat_alice_write") as c:
        tools = await _tools(c)
        catalog = {name for name in tools if name.startswith("catalog_")}
        assert len(catalog) == 16, sorted(catalog)
        for name in ("catalog_gadget_list", "catalog_publisher_list", "catalog_tag_list", "catalog_gadget_stats"):
            result = await c.call_tool(name, {})  # the SDK validates structuredContent against outputSchema
            assert not result.is_error, text(result)
        for name, key in (("catalog_gadget_retrieve", "pk"), ("catalog_publisher_retrieve", "pk")):
            result = await c.call_tool(name, {key: 1})
            assert not result.is_error and result.structured_content is not None, text(result)
        made = await c.call_tool("catalog_publisher_create", {"name": "Initech", "country": "gb"})
        assert not made.is_error and made.structured_content["name"] == "Initech", text(made)
        filtered = await c.call_tool("catalog_gadget_list", {"status": "live", "price_max": 100})
        assert [g["name"] for g in filtered.structured_content["results"]] == ["Anvil"]


@pytest.mark.parametrize("me, them", [("alice", "bob"), ("bob", "alice")])
async def test_object_permissions_hold_on_every_read_path(large: Any, me: str, them: str) -> None:
    server, facts = large
    async with bearer_client(server.url, f"pat_{me}_write") as c:
        listed = {r.uri for r in (await c.list_resources()).resources if r.uri.startswith("django://objpermapp/ledger")}
        assert listed == {f"django://objpermapp/ledger/{pk}" for pk in facts[me]}
        mine = await c.read_resource(f"django://objpermapp/ledger/{facts[me][0]}")
        assert me in mine.contents[0].text  # type: ignore[union-attr]
        with pytest.raises(Exception, match=r"not found|Unknown|denied"):
            await c.read_resource(f"django://objpermapp/ledger/{facts[them][0]}")
        ref = types.ResourceTemplateReference(type="ref/resource", uri="django://objpermapp/ledger/{pk}")
        completion = await c.complete(ref, {"name": "pk", "value": ""})
        assert set(completion.completion.values) == {str(pk) for pk in facts[me]}


async def test_the_projects_own_tokens_and_their_rules(large: Any) -> None:
    server, facts = large
    async with bearer_client(server.url, "pat_alice_read") as c:  # read-only: no write tool, no DRF write
        tools = await _tools(c)
        assert "add_note" not in tools and "note_create" not in tools and "token_info" in tools
        with pytest.raises(MCPError, match="Unknown tool"):  # refused as if absent
            await c.call_tool("note_create", {"text": "written with a read-only token"})
    async with bearer_client(server.url, "pat_bob_write") as c:  # another user's object: DRF's own 404
        other = await c.call_tool("note_retrieve", {"pk": facts["bob_note"]})
        assert not other.is_error
    async with bearer_client(server.url, "pat_alice_write") as c:
        stolen = await c.call_tool("note_retrieve", {"pk": facts["bob_note"]})
        assert stolen.is_error and "No Note matches" in text(stolen)
    for token in ("pat_alice_old", "pat_nobody"):  # expired, unknown
        answer = httpx.post(server.url, headers={"Authorization": f"Bearer {token}"}, json={}, timeout=10)
        assert answer.status_code == 401, (token, answer.text)


async def test_the_projects_middleware_sees_the_caller(large: Any) -> None:
    server, _facts = large
    async with bearer_client(server.url, "pat_alice_write") as c:
        made = await c.call_tool("add_gadget", {"name": "Logged widget"})
        assert not made.is_error, text(made)
        via_drf = await c.call_tool("gadget_create", {"name": "Logged via DRF"})
        assert not via_drf.is_error, text(via_drf)
    records = server.manage(
        "shell",
        "-c",
        "from tests.projectapp.models import ChangeRecord\n"
        "print(sorted((r.user.username, r.object_repr) for r in ChangeRecord.objects.all()))",
    )
    assert "('alice', 'Logged widget')" in records and "('alice', 'Logged via DRF')" in records


def test_checks_and_operations_without_the_admin(large: Any) -> None:
    server, _facts = large
    checked = subprocess.run(
        [sys.executable, "-m", "django", "check", "--fail-level", "ERROR"],
        cwd=ROOT,
        env=server.env,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    assert "catalog_" not in checked.stderr  # every DRF tool is titled, annotated, described and buildable
    audit = server.manage("mcp_audit", "calls", "--format", "json")
    assert isinstance(json.loads(audit), list)
    assert "catalog_gadget_list" in server.manage("mcp_switch", "list")


def test_django_starts_without_a_query(large: Any) -> None:
    server, _facts = large
    script = (
        "import django, warnings\n"
        "warnings.simplefilter('error', RuntimeWarning)\n"
        "from django.db import connection\n"
        "from django.test.utils import CaptureQueriesContext\n"
        "with CaptureQueriesContext(connection) as q:\n"
        "    django.setup()\n"
        "print(len(q.captured_queries))\n"
    )
    started = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=server.env, capture_output=True, text=True, timeout=120
    )
    assert started.returncode == 0 and started.stdout.strip() == "0", started.stderr[-3000:]
