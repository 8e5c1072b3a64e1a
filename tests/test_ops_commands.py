"""The operations commands in process (``call_command``): every operation of the admin, without the admin.

``mcp_switch``, ``mcp_client`` (list, show, disable, enable, revoke), ``mcp_session``, ``mcp_task`` and
``mcp_audit`` (calls with filters and formats, usage) on real models; a switched-off tool is refused
through the door (``MCPTestClient``). Bad input answers a ``CommandError``; CSV and tables are safe for
whatever callers put in the log. The same commands against a live server of a project without the
admin: tests/test_ops_live.py.
"""

from __future__ import annotations

import csv
import io
import json
import secrets
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_application_model, get_refresh_token_model

from django_mcp.models import (
    InitialAccessToken,
    MCPCallRecord,
    MCPClient,
    MCPSession,
    MCPSwitch,
    MCPTask,
    MCPTaskWorker,
)
from django_mcp.switches import board
from django_mcp.test import MCPClientError, MCPTestClient
from tests.support.factories import make_app, make_task, make_token

pytestmark = pytest.mark.django_db(transaction=True)

AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()
Application = get_application_model()
#: A cell a spreadsheet would run as a command (the classic DDE payload).
FORMULA = "=cmd|' /C calc'!A0"


def run(*args: str, **options: Any) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO(), **options)
    return out.getvalue()


def fails(*args: str, **options: Any) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args, **options)
    return str(caught.value)


@pytest.fixture(autouse=True)
def fresh_board() -> Iterator[None]:
    board.reset()
    yield
    board.reset()


@pytest.fixture
def people() -> tuple[Any, Any]:
    User = get_user_model()
    return User.objects.create_user("alice"), User.objects.create_user("bob")


def record(**fields: Any) -> MCPCallRecord:
    values: dict[str, Any] = {
        "at": timezone.now(),
        "method": "tools/call",
        "target": "echo",
        "transport": "http",
        "duration_ms": 2.0,
        "outcome": MCPCallRecord.OK,
    }
    values.update(fields)
    return MCPCallRecord.objects.create(**values)


# -- mcp_audit ---------------------------------------------------------------------------------------------------


def test_audit_calls_filter_by_time_user_client_target_outcome_and_method(people: tuple[Any, Any]) -> None:
    alice, bob = people
    now = timezone.now()
    record(at=now - timedelta(days=3), username="alice", user=alice, target="old")
    record(username="alice", user=alice, oauth_client="client-a", target="echo")
    record(username="bob", user=bob, oauth_client="client-b", target="square", outcome=MCPCallRecord.TOOL_ERROR)
    record(method="resources/read", target="test://static/hello", outcome=MCPCallRecord.REFUSED, http_status=403)

    def targets(*args: str) -> list[str]:
        rows = json.loads(run("mcp_audit", "calls", "--format", "json", *args))
        return [r["target"] for r in rows]

    assert targets() == ["test://static/hello", "square", "echo", "old"]  # newest first
    assert targets("--since", "24h") == ["test://static/hello", "square", "echo"]
    assert targets("--until", (now - timedelta(days=1)).date().isoformat()) == ["old"]
    assert targets("--since", (now - timedelta(days=4)).isoformat(), "--until", "2d") == ["old"]
    assert targets("--user", "alice") == ["echo", "old"]
    assert targets("--anonymous") == ["test://static/hello"]
    assert targets("--client", "client-b") == ["square"]
    assert targets("--tool", "echo") == ["echo"]
    assert targets("--status", "tool_error", "--outcome", "refused") == ["test://static/hello", "square"]
    assert targets("--method", "resources/read") == ["test://static/hello"]
    assert targets("--limit", "2") == ["test://static/hello", "square"]
    record(at=now - timedelta(days=5), target="in a session", session="-Ab3x_9Q")  # the record keeps 8 characters
    assert targets("--session=-Ab3") == ["in a session"]  # a prefix beginning with "-" goes after "="
    row = json.loads(run("mcp_audit", "calls", "--format", "json", "--method", "resources/read"))[0]
    assert row["http_status"] == 403 and row["outcome"] == "refused" and row["user"] == ""
    assert "arguments" not in row  # payloads only with --payload


def test_audit_formats_table_csv_json_lines() -> None:
    record(target="echo", username="alice", arguments={"text": "hi"})
    table = run("mcp_audit", "calls")
    assert table.splitlines()[0].split()[:4] == ["at", "method", "target", "outcome"]
    assert "echo" in table.splitlines()[1] and "alice" in table.splitlines()[1]
    rows = list(csv.DictReader(io.StringIO(run("mcp_audit", "calls", "--format", "csv", "--payload"))))
    assert rows[0]["target"] == "echo" and json.loads(rows[0]["arguments"]) == {"text": "hi"}
    lines = run("mcp_audit", "calls", "--format", "jsonl", "--payload").splitlines()
    assert [json.loads(line)["arguments"] for line in lines] == [{"text": "hi"}]
    assert json.loads(run("mcp_audit", "calls", "--format", "json", "--since", "1s", "--until", "1s")) == []


def test_audit_csv_neutralises_formulas_and_the_table_escapes_control_characters() -> None:
    """A tool name or argument that a spreadsheet would run is text in the CSV; a terminal escape stays inert."""
    record(target=FORMULA, username="+SUM(A1)", arguments={"q": FORMULA})
    record(target="echo\x1b[2J\x1b]0;owned\x07", username="@alice", oauth_client="-2+3")
    out = run("mcp_audit", "calls", "--format", "csv", "--payload")
    rows = list(csv.DictReader(io.StringIO(out)))
    cells = [value for row in rows for value in row.values() if value]
    assert not [c for c in cells if c[0] in "=+-@\t\r"], cells
    assert rows[1]["target"] == "'" + FORMULA and rows[1]["user"] == "'+SUM(A1)"
    assert rows[0]["user"] == "'@alice" and rows[0]["oauth_client"] == "'-2+3"
    assert json.loads(rows[1]["arguments"]) == {"q": FORMULA}  # inside JSON text: starts with "{", no formula
    table = run("mcp_audit", "calls")
    assert "\x1b" not in table and "\x07" not in table and "echo\\x1b[2J" in table
    # JSON carries the value exactly, escaped by the encoder.
    assert json.loads(run("mcp_audit", "calls", "--format", "json"))[1]["target"] == FORMULA


def test_audit_output_is_bounded_and_survives_odd_data() -> None:
    huge = "x" * 200_000
    record(target="big", arguments={"blob": huge, "nested": [[[{"k": None}]]], "n": 1e308})
    row = json.loads(run("mcp_audit", "calls", "--format", "json", "--payload"))[0]
    assert isinstance(row["arguments"], str) and len(row["arguments"]) == 4000 and row["arguments"].endswith("…")
    cell = next(csv.DictReader(io.StringIO(run("mcp_audit", "calls", "--format", "csv", "--payload"))))["arguments"]
    assert len(cell) == 4000
    assert len(max(run("mcp_audit", "calls").splitlines(), key=len)) < 1000


def test_audit_bad_input_is_a_command_error_not_a_traceback() -> None:
    assert "--user: at most 150 characters" in fails("mcp_audit", "calls", "--user", "u" * 1_000_000)
    assert "--client: at most 255" in fails("mcp_audit", "calls", "--client", "c" * 10_000)
    assert "--target: at most 255" in fails("mcp_audit", "calls", "--target", "t" * 10_000)
    for bad in ("yesterday", "2026-13-45", "2026-02-30T25:00", "9999999999d", "999999999w", "x" * 5000):
        message = fails("mcp_audit", "calls", "--since", bad)
        assert message.startswith("--since") and len(message) < 300, message
    assert "--until" in fails("mcp_audit", "calls", "--until", "tomorrow")
    assert "--limit" in fails("mcp_audit", "calls", "--limit", "-1")
    assert "exclude each other" in fails("mcp_audit", "calls", "--user", "a", "--anonymous")
    assert "No user named" in fails("mcp_audit", "usage", "--user", "nobody")


def test_audit_usage_shows_the_usage_pages_figures(people: tuple[Any, Any]) -> None:
    alice, _bob = people
    for ms in (10.0, 20.0, 30.0):
        record(username="alice", user=alice, target="echo", duration_ms=ms)
    record(target="square", outcome=MCPCallRecord.ERROR, error_code=-32602)
    rows = json.loads(run("mcp_audit", "usage", "--format", "json"))
    total = next(r for r in rows if r["section"] == "total")
    assert (total["calls"], total["failures"], total["error_rate"]) == (4, 1, 25.0)
    echo = next(r for r in rows if r["section"] == "target" and r["key"] == "echo")
    assert (echo["calls"], echo["p50_ms"]) == (3, 20.0)
    assert {r["label"] for r in rows if r["section"] == "user"} == {"alice", "anonymous"}
    narrowed = json.loads(run("mcp_audit", "usage", "--format", "json", "--user", "alice", "--window", "7d"))
    assert next(r for r in narrowed if r["section"] == "total")["calls"] == 3
    assert "Last 24 hours" in run("mcp_audit", "usage")


# -- mcp_switch --------------------------------------------------------------------------------------------------


def test_switch_list_off_and_on_a_tool_as_the_admin_does() -> None:
    client = MCPTestClient()
    listed = json.loads(run("mcp_switch", "list", "--format", "json", "--kind", "tool"))
    assert {"kind": "tool", "name": "echo"}.items() <= next(r for r in listed if r["name"] == "echo").items()
    assert all(r["state"] == "on" and r["served"] for r in listed)
    assert run("mcp_switch", "off", "tool", "echo", "--reason", "incident 7") == "tool echo: off\n"
    with pytest.raises(MCPClientError) as caught:
        client.call_tool("echo", {"text": "x"})
    assert caught.value.message == "Tool 'echo' is disabled by the site's operators"
    off = json.loads(run("mcp_switch", "list", "--off", "--format", "json"))
    assert [(r["kind"], r["name"], r["reason"]) for r in off] == [("tool", "echo", "incident 7")]
    assert run("mcp_switch", "off", "tool", "echo") == "tool echo: off already\n"
    run("mcp_switch", "on", "tool", "echo")
    assert client.call_tool("echo", {"text": "back"}).content[0].text == "back"  # type: ignore[union-attr]
    run("mcp_switch", "off", "prompt", "greet")
    run("mcp_switch", "off", "template", "test://items/{item_id}")
    assert set(MCPSwitch.objects.filter(enabled=False).values_list("kind", "name")) == {
        ("prompt", "greet"),
        ("template", "test://items/{item_id}"),
    }


def test_switch_refuses_names_nobody_registered() -> None:
    assert "No tool named 'ech0' is registered" in fails("mcp_switch", "off", "tool", "ech0")
    assert "No prompt named" in fails("mcp_switch", "on", "prompt", "x" * 200)
    assert "at most 255" in fails("mcp_switch", "off", "tool", "x" * 300)
    assert not MCPSwitch.objects.filter(enabled=False).exists()


def test_switch_a_client_off_disables_it_and_revokes_its_tokens(people: tuple[Any, Any]) -> None:
    alice, _bob = people
    app, other = make_app("first"), make_app("second")
    make_token(app, alice, "tok-first")
    make_token(other, alice, "tok-second")
    assert "client " + app.client_id + ": off" in run("mcp_switch", "off", "client", app.client_id)
    assert MCPClient.objects.get(client_id=app.client_id).disabled
    assert list(AccessToken.objects.values_list("application__name", flat=True)) == ["second"]
    listed = json.loads(run("mcp_switch", "list", "--kind", "client", "--off", "--format", "json"))
    assert [(r["name"], r["reason"]) for r in listed] == [(app.client_id, "first")]
    run("mcp_switch", "on", "client", app.client_id)
    assert not MCPClient.objects.get(client_id=app.client_id).disabled
    assert "No OAuth client" in fails("mcp_switch", "off", "client", "nope")


# -- mcp_client --------------------------------------------------------------------------------------------------


def test_client_list_and_show(people: tuple[Any, Any]) -> None:
    alice, _bob = people
    app = make_app("Claude")
    make_token(app, alice, "tok-a")
    rows = json.loads(run("mcp_client", "list", "--format", "json"))
    row = next(r for r in rows if r["client_id"] == app.client_id)
    assert (row["name"], row["registration"], row["active_tokens"], row["state"]) == ("Claude", "dcr", 1, "enabled")
    assert row["last_use"] is not None
    shown = run("mcp_client", "show", "Claude")  # by its name, which one client has
    assert app.client_id in shown and "alice · mcp books:read" in shown and "authorization-code" in shown
    assert json.loads(run("mcp_client", "show", app.client_id, "--format", "json"))[0] == {
        "field": "client_id",
        "value": app.client_id,
    }


def test_client_disable_enable_and_revoke(people: tuple[Any, Any]) -> None:
    alice, bob = people
    a, b = make_app("first"), make_app("second")
    make_token(a, alice, "a-alice", refresh="r-a-alice")
    make_token(a, bob, "a-bob")
    make_token(b, alice, "b-alice")
    assert run("mcp_client", "disable", "first") == "Disabled 1 client; their tokens are revoked.\n"
    assert MCPClient.objects.get(client_id=a.client_id).disabled
    assert set(AccessToken.objects.values_list("application__name", flat=True)) == {"second"}
    assert RefreshToken.objects.get(application=a).revoked is not None
    assert json.loads(run("mcp_client", "list", "--disabled", "--format", "json"))[0]["client_id"] == a.client_id
    assert run("mcp_client", "enable", a.client_id) == "Enabled 1 client.\n"
    assert not MCPClient.objects.get(client_id=a.client_id).disabled
    assert run("mcp_client", "revoke", "second") == "Revoked 1 access token.\n"
    assert not AccessToken.objects.exists() and not MCPClient.objects.get(client_id=b.client_id).disabled


def test_client_revoke_a_users_tokens_only(people: tuple[Any, Any]) -> None:
    alice, bob = people
    a, b = make_app("first"), make_app("second")
    make_token(a, alice, "a-alice")
    make_token(b, alice, "b-alice")
    make_token(a, bob, "a-bob")
    sessions = {}
    for user, app in ((alice, a), (bob, a)):
        sessions[user.username] = MCPSession.objects.create(
            id=secrets.token_urlsafe(32), protocol_version="2025-11-25", user=user,
            oauth_client=app.client_id, last_seen=timezone.now(),
        )  # fmt: skip
    assert run("mcp_client", "revoke", "--user", "alice", "second") == "Revoked 1 access token.\n"
    assert sorted(AccessToken.objects.values_list("token", flat=True)) == ["a-alice", "a-bob"]
    assert run("mcp_client", "revoke", "--user", "alice") == "Revoked 1 access token.\n"
    assert list(AccessToken.objects.values_list("token", flat=True)) == ["a-bob"]
    assert MCPSession.objects.get(pk=sessions["alice"].pk).ended is not None
    assert MCPSession.objects.get(pk=sessions["bob"].pk).ended is None
    assert not MCPClient.objects.filter(disabled=True).exists()


def test_client_errors_name_the_problem() -> None:
    make_app("twin")
    make_app("twin")
    assert "Several clients are named 'twin'" in fails("mcp_client", "disable", "twin")
    assert "No OAuth client with client ID or name 'ghost'" in fails("mcp_client", "show", "ghost")
    assert "No user named 'nobody'" in fails("mcp_client", "revoke", "--user", "nobody")
    assert "--user: at most 150" in fails("mcp_client", "revoke", "--user", "n" * 100_000)
    assert "Give the clients" in fails("mcp_client", "revoke")
    assert not MCPClient.objects.filter(disabled=True).exists()


# -- mcp_session -------------------------------------------------------------------------------------------------


def session(user: Any, client: str, sid: str | None = None) -> MCPSession:
    return MCPSession.objects.create(
        id=sid or secrets.token_urlsafe(32),
        protocol_version="2025-11-25",
        client_info={"name": "=HYPERLINK(1)", "version": "1"},
        user=user,
        oauth_client=client,
        last_seen=timezone.now(),
    )


def test_session_list_shows_prefixes_and_end_by_prefix_user_and_client(people: tuple[Any, Any]) -> None:
    alice, bob = people
    s1, s2, s3 = session(alice, "client-a"), session(alice, "client-b"), session(bob, "client-a")
    listed = run("mcp_session", "list")
    assert s1.pk[:16] in listed and s1.pk not in listed  # a whole id is a credential: never printed
    rows = list(csv.DictReader(io.StringIO(run("mcp_session", "list", "--format", "csv", "--user", "alice"))))
    assert {r["session"] for r in rows} == {s1.pk[:16], s2.pk[:16]} and rows[0]["client"] == "'=HYPERLINK(1) 1"
    assert run("mcp_session", "end", "--", s1.pk[:8]) == "Ended 1 session.\n"  # an id may begin with "-"
    assert MCPSession.objects.get(pk=s1.pk).ended is not None
    assert run("mcp_session", "end", "--client", "client-a") == "Ended 1 session.\n"  # bob's; s1 already ended
    assert MCPSession.objects.get(pk=s3.pk).ended is not None
    assert run("mcp_session", "end", "--user", "alice") == "Ended 1 session.\n"
    assert not MCPSession.objects.filter(ended__isnull=True).exists()
    assert len(json.loads(run("mcp_session", "list", "--all", "--format", "json"))) == 3
    assert json.loads(run("mcp_session", "list", "--format", "json")) == []


def test_session_errors_unknown_short_and_ambiguous_prefixes(people: tuple[Any, Any]) -> None:
    alice, _bob = people
    session(alice, "a", "samePrefix-" + secrets.token_urlsafe(24))
    session(alice, "a", "samePrefix-" + secrets.token_urlsafe(24))
    assert "Several sessions have ids beginning with 'samePref'" in fails("mcp_session", "end", "samePref")
    assert "at least 8 characters" in fails("mcp_session", "end", "same")
    assert "No session whose id begins with 'zzzzzzzz'" in fails("mcp_session", "end", "zzzzzzzz")
    assert "not both" in fails("mcp_session", "end", "samePrefix", "--user", "alice")
    assert "not both" in fails("mcp_session", "end")
    assert not MCPSession.objects.filter(ended__isnull=False).exists()


# -- mcp_task ----------------------------------------------------------------------------------------------------


def test_task_list_and_cancel_as_the_admin_does(people: tuple[Any, Any]) -> None:
    alice, bob = people
    # One id in 64 begins with "-", as t1's does here: the command takes ids after "--", as its help says.
    t1, t2 = make_task(user=alice, id="-" + secrets.token_urlsafe(32)[1:]), make_task(user=bob, tool="other")
    done = make_task(MCPTask.COMPLETED, user=alice, finished=timezone.now())
    rows = json.loads(run("mcp_task", "list", "--format", "json"))
    assert {r["task"] for r in rows} == {t.pk[:16] for t in (t1, t2, done)}
    assert t1.pk not in run("mcp_task", "list")
    bobs = json.loads(run("mcp_task", "list", "--active", "--user", "bob", "--format", "json"))
    assert [r["task"] for r in bobs] == [t2.pk[:16]]
    assert run("mcp_task", "cancel", "--", t1.pk[:10], done.pk[:10]) == "Cancelled 1 task.\n"  # the finished one stays
    assert MCPTask.objects.get(pk=t1.pk).status == MCPTask.CANCELLED
    assert MCPTask.objects.get(pk=done.pk).status == MCPTask.COMPLETED
    assert run("mcp_task", "cancel", "--tool", "other") == "Cancelled 1 task.\n"
    assert MCPTask.objects.get(pk=t2.pk).status == MCPTask.CANCELLED
    assert "at least 8" in fails("mcp_task", "cancel", "abc")
    assert "No task whose id begins with" in fails("mcp_task", "cancel", "~" * 12)
    assert "--limit" in fails("mcp_task", "list", "--limit", "0")


def test_task_workers_alive_and_gone() -> None:
    now = timezone.now()
    MCPTaskWorker.objects.create(id="host-a:1", host="host-a", pid=1, started=now, beat=now)
    MCPTaskWorker.objects.create(id="host-b:2", host="host-b", pid=2, started=now, beat=now - timedelta(hours=1))
    rows = json.loads(run("mcp_task", "workers", "--format", "json"))
    assert [(r["worker"], r["alive"]) for r in rows] == [("host-a:1", True), ("host-b:2", False)]


def test_initial_access_tokens_listed_and_deleted(people: tuple[Any, Any]) -> None:
    """The admin lists initial access tokens and deletes them; so do these commands (never showing a token)."""
    raw = run("mcp_client", "initial-token", "--scopes", "read", "--service-user", "alice", "--uses", "2").strip()
    (row,) = json.loads(run("mcp_client", "initial-tokens", "--format", "json"))
    assert (row["scopes"], row["service_user"], row["uses_left"]) == ("read", "alice", 2)
    assert raw not in run("mcp_client", "initial-tokens")
    assert "No initial access token with id 999" in fails("mcp_client", "delete-initial-token", str(row["id"]), "999")
    assert InitialAccessToken.objects.exists()
    assert run("mcp_client", "delete-initial-token", str(row["id"])) == "Deleted 1 initial access token.\n"
    assert not InitialAccessToken.objects.exists()
