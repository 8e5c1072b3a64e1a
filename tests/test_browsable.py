"""The browsable endpoint in process (WSGI view, Django's test client): who may open it, what it lists, its
forms through the one door, and the attacks (anonymous, non-staff, a forged cross-site POST, someone else's
object). The same page under daphne, in Chromium: ``tests/test_ui_browser.py``.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

import pytest
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.test import Client, override_settings
from django.urls import path, re_path
from pydantic import Field

from django_mcp import Context, MCPServer
from django_mcp.audit import middleware as audit
from django_mcp.exceptions import ToolError
from django_mcp.models import MCPCallRecord
from django_mcp.transports.wsgi import mcp_view_for

#: The page reads the session and the user in a thread (it is async): the test's data must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

server = MCPServer("browsable-tests")
#: note id -> (owner, text)
NOTES = {1: ("alice", "alice's secret"), 2: ("bob", "bob's note")}


@server.tool(title="Echo", annotations={"readOnlyHint": True})
def echo(text: str, times: int = 1) -> str:
    """Say it again."""
    return text * times


@server.tool(title="Read a note", annotations={"readOnlyHint": True})
def read_note(ctx: Context, note_id: int) -> str:
    """One of your own notes."""
    owner, text = NOTES.get(note_id, ("", ""))
    if owner != ctx.user.get_username():
        raise ToolError(f"No note {note_id}")  # someone else's: as if it did not exist
    return text


@server.tool(permissions=["auth.delete_user"], annotations={"destructiveHint": True})
def purge(user_id: int) -> str:
    """Delete a user (holders of auth.delete_user only)."""
    return "purged"


@server.resource("notes://about", mime_type="text/plain")
def about() -> str:
    return "about the notes"


@server.prompt
def greet(name: str) -> str:
    return f"Hello {name}"


server.skill("notes-guide", text="---\nname: notes-guide\ndescription: How to keep notes.\n---\nCall read_note.\n")
server.skill(
    "purging",
    text="---\nname: purging\ndescription: How to purge users.\n---\nCall purge.\n",
    files={"steps/ONE.md": "first"},
    permissions=["auth.delete_user"],
)


urlpatterns = [path("admin/", admin.site.urls), re_path(r"^mcp/?$", mcp_view_for(server, wsgi=True))]
HTML = {"HTTP_ACCEPT": "text/html,application/xhtml+xml"}


@pytest.fixture(autouse=True)
def urls() -> Any:
    with override_settings(ROOT_URLCONF=__name__):
        yield


def staff(name: str, *perms: str, **extra: Any) -> User:
    user = User.objects.create_user(name, password="pw", is_staff=True, **extra)
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(codename=codename, content_type__app_label="auth"))
    return user


def signed_in(user: User, csrf: bool = True) -> Client:
    client = Client(enforce_csrf_checks=csrf, SERVER_NAME="127.0.0.1", HTTP_HOST="127.0.0.1")
    client.force_login(user)
    return client


def form_token(client: Client) -> str:
    page = client.get("/mcp/", **HTML)
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert found, "the page has forms with a CSRF token"
    return found.group(1)


def post(client: Client, token: str | None = None, **fields: Any) -> Any:
    data = {**fields}
    if token is not None:
        data["csrfmiddlewaretoken"] = token
    return client.post("/mcp/", data, **HTML)  # a browser's form submission accepts HTML


def exchange(response: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request and response the page shows."""
    text = response.content.decode()
    request = re.search(r'<pre id="exchange-request">(.*?)</pre>', text, re.S)
    reply = re.search(r'<pre id="exchange-response">(.*?)</pre>', text, re.S)
    assert request and reply, text[:2000]
    import html

    return json.loads(html.unescape(request.group(1))), json.loads(html.unescape(reply.group(1)))


# -- who may open it ---------------------------------------------------------------------------------------
def test_anonymous_is_sent_to_sign_in_and_a_form_post_is_refused() -> None:
    page = Client(SERVER_NAME="127.0.0.1", HTTP_HOST="127.0.0.1").get("/mcp/", **HTML)
    assert page.status_code == 302 and page["Location"].startswith("/admin/login/?next=/mcp/")
    assert (
        post(
            Client(SERVER_NAME="127.0.0.1", HTTP_HOST="127.0.0.1"), action="tools/call", name="echo", arguments="{}"
        ).status_code
        == 403
    )


def test_non_staff_are_refused() -> None:
    member = User.objects.create_user("member", password="pw")
    client = signed_in(member)
    assert client.get("/mcp/", **HTML).status_code == 403
    assert post(client, action="tools/call", name="echo", arguments="{}").status_code == 403


def test_superuser_mode_refuses_plain_staff() -> None:
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "BROWSABLE_ENDPOINT": "superuser"}):
        assert signed_in(staff("ops")).get("/mcp/", **HTML).status_code == 403
        root = User.objects.create_superuser("root", password="pw")
        assert signed_in(root).get("/mcp/", **HTML).status_code == 200


def test_off_the_endpoint_answers_as_without_it() -> None:
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "BROWSABLE_ENDPOINT": False}):
        page = signed_in(staff("ops")).get("/mcp/", **HTML)
    assert page.status_code == 405 and page["Content-Type"] == "application/json"  # WSGI mode has no GET stream


def test_mcp_clients_are_not_browsers() -> None:
    """An MCP GET (event-stream) and a JSON POST reach the endpoint, even from a signed-in staff member."""
    client = signed_in(staff("ops"))
    stream = client.get("/mcp/", HTTP_ACCEPT="text/event-stream, text/html")
    assert stream.status_code == 405, stream.content
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    ping = client.post(
        "/mcp/",
        json.dumps(body),
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_MCP_PROTOCOL_VERSION="2026-07-28",
        HTTP_MCP_METHOD="tools/list",
    )
    assert ping.status_code == 200 and "echo" in {t["name"] for t in ping.json()["result"]["tools"]}, ping.content


def test_the_get_stream_refusal_of_wsgi_mode_logs_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    """Every handshake-era SDK session asks for a GET stream once: 405 by design, not a "Method Not Allowed" warning."""
    import logging

    client = Client(SERVER_NAME="127.0.0.1", HTTP_HOST="127.0.0.1")
    with caplog.at_level(logging.WARNING, logger="django.request"):
        stream = client.get("/mcp/", HTTP_ACCEPT="text/event-stream")
        assert stream.status_code == 405 and stream["Allow"] == "POST, DELETE, OPTIONS"
        assert client.put("/mcp/").status_code == 405  # not what a client asks for: logged as Django logs it
    assert [r.getMessage() for r in caplog.records] == ["Method Not Allowed: /mcp/"]


# -- what it shows ----------------------------------------------------------------------------------------------
def test_staff_see_the_server_and_only_what_they_may_use() -> None:
    ops = signed_in(staff("ops"))
    page = ops.get("/mcp/", **HTML)
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    text = page.content.decode()
    assert "browsable-tests" in text and "2026-07-28" in text and "2024-11-05" in text
    assert 'id="tool-echo"' in text and 'id="tool-read_note"' in text and 'id="tool-purge"' not in text
    assert "notes://about" in text and "greet" in text
    assert "readOnlyHint" in text and "Say it again." in text
    assert "&quot;text&quot;: &quot;&quot;" in text  # the form starts from the required arguments
    assert "csrftoken" in page.cookies
    admin_page = signed_in(staff("root", "delete_user")).get("/mcp/", **HTML).content.decode()
    assert 'id="tool-purge"' in admin_page and "destructiveHint" in admin_page


def test_staff_see_the_skills_they_may_use_and_read_their_files() -> None:
    ops = signed_in(staff("ops"))
    text = ops.get("/mcp/", **HTML).content.decode()
    assert 'id="skills"' in text and "skill://notes-guide/SKILL.md" in text and "How to keep notes." in text
    assert "skill://purging" not in text and "How to purge users." not in text
    root = signed_in(staff("root", "delete_user"))
    text = root.get("/mcp/", **HTML).content.decode()
    assert "skill://purging/SKILL.md" in text and "skill://purging/steps/ONE.md" in text
    _, read = exchange(post(root, form_token(root), action="resources/read", uri="skill://purging/steps/ONE.md"))
    assert read["result"]["contents"][0]["text"] == "first"
    _, refused = exchange(post(ops, form_token(ops), action="resources/read", uri="skill://purging/steps/ONE.md"))
    assert refused["error"]["code"] == -32602  # not ops's: as if it did not exist


# -- its forms, through the one door ---------------------------------------------------------------------------
def test_a_form_calls_a_tool_as_the_signed_in_user_and_shows_the_exchange() -> None:
    ops = signed_in(staff("ops"))
    token = form_token(ops)
    shown = post(ops, token, action="tools/call", name="echo", arguments='{"text": "ab", "times": 2}')
    assert shown.status_code == 200
    request, response = exchange(shown)
    assert request["method"] == "tools/call" and request["params"]["arguments"] == {"text": "ab", "times": 2}
    assert response["result"]["content"] == [{"type": "text", "text": "abab"}]
    audit.flush()
    record = MCPCallRecord.objects.get(target="echo")
    assert (record.transport, record.username, record.outcome) == ("browser", "ops", MCPCallRecord.OK)


def test_a_resource_read_and_a_prompt_render() -> None:
    ops = signed_in(staff("ops"))
    token = form_token(ops)
    _, read = exchange(post(ops, token, action="resources/read", uri="notes://about"))
    assert read["result"]["contents"][0]["text"] == "about the notes"
    _, prompt = exchange(post(ops, token, action="prompts/get", name="greet", arguments='{"name": "Ann"}'))
    assert prompt["result"]["messages"][0]["content"]["text"] == "Hello Ann"


def test_bad_input_is_a_precise_error_never_a_500() -> None:
    ops = signed_in(staff("ops"))
    token = form_token(ops)
    for fields, code in (
        ({"action": "tools/call", "name": "echo", "arguments": "{not json"}, -32602),
        ({"action": "tools/call", "name": "echo", "arguments": "[1]"}, -32602),
        ({"action": "tools/delete", "name": "echo"}, -32602),
        ({"action": "tools/call", "name": "echo", "arguments": '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"}, -32602),
        ({"action": "tools/call", "name": "echo", "arguments": '{"text": NaN}'}, -32602),
    ):
        shown = post(ops, token, **fields)
        assert shown.status_code == 400, fields
        assert exchange(shown)[1]["error"]["code"] == code
    unknown = post(ops, token, action="tools/call", name="nope", arguments="{}")
    assert unknown.status_code == 200 and exchange(unknown)[1]["error"]["code"] == -32602
    invalid = exchange(post(ops, token, action="tools/call", name="echo", arguments='{"times": "x"}'))[1]
    assert invalid["result"]["isError"] is True


# -- attacks: a forged cross-site POST, someone else's object, a tool they lack -----------------------------------
def test_a_forged_cross_site_post_is_refused_and_runs_nothing() -> None:
    ops = signed_in(staff("ops"))
    form_token(ops)  # the victim has a CSRF cookie; the attacker's page cannot read it
    forged = ops.post(
        "/mcp/",
        {"action": "tools/call", "name": "echo", "arguments": '{"text": "x"}'},
        HTTP_ORIGIN="https://evil.example",
    )
    assert forged.status_code == 403
    assert post(ops, "not-the-token", action="tools/call", name="echo", arguments='{"text": "x"}').status_code == 403
    audit.flush()
    assert not MCPCallRecord.objects.filter(target="echo").exists()


def test_someone_elses_object_and_a_tool_they_lack_stay_out_of_reach() -> None:
    bob = signed_in(staff("bob"))
    token = form_token(bob)
    _, own = exchange(post(bob, token, action="tools/call", name="read_note", arguments='{"note_id": 2}'))
    assert own["result"]["content"][0]["text"] == "bob's note"
    _, other = exchange(post(bob, token, action="tools/call", name="read_note", arguments='{"note_id": 1}'))
    assert other["result"]["isError"] is True and "alice" not in json.dumps(other)
    _, lacked = exchange(post(bob, token, action="tools/call", name="purge", arguments='{"user_id": 1}'))
    assert lacked["error"]["code"] == -32602 and "Unknown tool" in lacked["error"]["message"]


# -- the form starts from arguments the tool accepts -------------------------------------------------------------
def test_the_form_starts_from_valid_arguments() -> None:
    """Every tool of the test site and of this module: the pre-filled arguments pass the tool's own
    inputSchema (a validator, not our reading of it), so the first click succeeds; ``ge=1`` starts at 1."""
    from jsonschema import Draft202012Validator

    from django_mcp import site
    from django_mcp.transports.browsable import example

    extra = MCPServer("bounds")

    @extra.tool()
    def bounded(
        book_id: Annotated[int, Field(ge=1)],
        ratio: Annotated[float, Field(gt=0, le=1)],
        code: Annotated[str, Field(min_length=3)],
        tags: Annotated[list[str], Field(min_length=2)],
        even: Annotated[int, Field(ge=3, multiple_of=2)],
        maybe: int | None,
    ) -> str:
        return "ok"

    assert example(extra.tools["bounded"].input_schema) == {
        "book_id": 1, "ratio": 0.5, "code": "xxx", "tags": ["", ""], "even": 4, "maybe": 0,
    }  # fmt: skip
    checked = 0
    for each in (site, server, extra):
        for tool in each.tools.values():
            schema = tool.input_schema
            if "pattern" in json.dumps(schema):
                continue  # no value is made up to match a regular expression
            errors = list(Draft202012Validator(schema).iter_errors(example(schema)))
            assert not errors, (tool.name, example(schema), [e.message for e in errors])
            checked += 1
    assert checked > 20


# -- a custom user model without is_staff / is_superuser, through a live server ---------------------------------
MEMBER_SESSION = """
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from tests.objpermapp.models import Member

member = Member.objects.create(username="margo")
member.set_password("pw")
member.save()
session = SessionStore()
session.update({
    SESSION_KEY: str(member.pk),
    BACKEND_SESSION_KEY: "tests.objpermapp.backends.MemberBackend",
    HASH_SESSION_KEY: member.get_session_auth_hash(),
})
session.create()
print(session.session_key)
"""


@pytest.mark.version_independent
@pytest.mark.parametrize("who", ["staff", "superuser"])
def test_a_user_model_without_staff_flags_is_refused_not_a_500(tmp_path: Any, who: str) -> None:
    """A project's own user model (no ``is_staff``/``is_superuser``), signed in: 403, as any non-staff user."""
    import httpx

    from tests.support.servers import server_env, start_server

    env = server_env(tmp_path, settings="tests.settings.settings_objperm", MCP_BROWSABLE=who)
    server = start_server(env, tmp_path / "daphne.log")
    try:
        key = server.manage("shell", "-c", MEMBER_SESSION).split()[-1]
        cookies = {settings.SESSION_COOKIE_NAME: key}
        page = httpx.get(server.url, headers={"Accept": "text/html"}, cookies=cookies, timeout=30)
        assert page.status_code == 403, page.text[:500]
        assert page.text == f"The browsable endpoint is for {who if who == 'staff' else 'superusers'} only."
        form = httpx.post(  # a browser's form submission: it accepts HTML
            server.url,
            data={"action": "tools/call", "name": "echo"},
            headers={"Accept": "text/html"},
            cookies=cookies,
            timeout=30,
        )
        assert form.status_code == 403
    finally:
        server.stop()
    log = (tmp_path / "daphne.log").read_text(errors="replace")
    assert "Traceback" not in log and " 500 " not in log, log
