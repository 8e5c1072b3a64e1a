"""Kill switches and task-worker health with real processes: daphne workers, db_worker, mcp_stdio, Chromium.

Two daphne workers on PostgreSQL sharing Redis (and one worker on SQLite with the in-memory layer):

- Staff switch a tool off in the real admin, in Chromium: within a second both workers refuse its calls
  and leave it out of ``tools/list``; a session's GET stream and a 2026-07-28 ``subscriptions/listen``
  stream each receive ``notifications/tools/list_changed``. Switching it back on works the same way.
- A task queued for a tool switched off meanwhile fails without running once a worker takes it.
- With no task worker running, a queued task's ``statusMessage`` says so in both eras and the health
  endpoint reads ``degraded``; a worker started then completes it and the health is ``ok`` again.

OAuth, two users and two clients: staff disable one client in the admin; at once, on both workers, its
tokens are refused, its listen stream ends, a 2026-07-28 stdio process running on its token is refused
and a 2025-11-25 one exits (its session ended), while the same users' other client goes on working.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oauth.kit import OAuthServer, start_oauth_server, stop_oauth_server
from tests.support.browser import CHROMIUM, need_chromium
from tests.support.raw import ACCEPT, META, Raw
from tests.support.servers import (
    ROOT,
    LiveServer,
    drop_pg_database,
    need_service,
    server_env,
    start_server,
    start_task_worker,
)
from tests.support.sse import SSEReader
from tests.support.task_client import Modern, Session

#: Every server here picks its own database and channel layer (CLUSTERS): the pg-redis pass need not run it again.
pytestmark = pytest.mark.own_config

STAFF, STAFF_PASSWORD = "ops", "ops-password-4242"
STAFF_SETUP = (
    "from django.contrib.auth.models import User; "
    f"User.objects.create_superuser({STAFF!r}, password={STAFF_PASSWORD!r})"
)
DISABLED = "Tool 'echo' is disabled by the site's operators"
#: Each set-up: database, channel layer, daphne workers.
CLUSTERS = {"postgres-redis": ("postgres", "redis", 2), "sqlite-memory": ("sqlite", "memory", 1)}


@dataclass
class Cluster:
    workers: list[LiveServer]
    env: dict[str, str]
    tmp: Path


@pytest.fixture(scope="module", params=list(CLUSTERS))
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    db, layer, count = CLUSTERS[request.param]
    if layer == "redis":
        need_service("Redis", 6379)
    tmp = tmp_path_factory.mktemp(f"switches-{request.param}")
    env = server_env(tmp, db=db, layer=layer, MCP_TASK_UNCLAIMED_WARNING="2")
    workers = [start_server(env, tmp / "a.log")]
    try:
        workers += [start_server(env, tmp / f"{n}.log", migrate=False) for n in "bc"[: count - 1]]
        workers[0].manage("shell", "-c", STAFF_SETUP)
        yield Cluster(workers, env, tmp)
    finally:
        for worker in workers:
            worker.stop()
        if db == "postgres":
            drop_pg_database(env["MCP_PG_NAME"])
    for worker in workers:
        log = worker.log.read_text(errors="replace")
        assert "Traceback" not in log and " 500 " not in log, log


# -- what a client sees -----------------------------------------------------------------------------------


def call_echo(raw: Raw, headers: dict[str, str] | None = None) -> httpx.Response:
    return raw.modern("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, **(headers or {}))


def echo_refused(raw: Raw) -> bool:
    body = call_echo(raw).json()
    return body.get("error", {}).get("message") == DISABLED


def listed(raw: Raw) -> set[str]:
    return {t["name"] for t in raw.modern("tools/list").json()["result"]["tools"]}


def first_time(condition: Callable[[], bool], timeout: float = 10) -> float:
    """``time.monotonic()`` when ``condition`` first held (polled without pause), or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "never happened"
    return time.monotonic()


def listen_stream(url: str, headers: dict[str, str] | None = None) -> SSEReader:
    """A 2026-07-28 ``subscriptions/listen`` stream asking for tool list changes; its acknowledgement read."""
    body = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {"_meta": META, "notifications": {"toolsListChanged": True}},
    }
    h = {
        "content-type": "application/json",
        "accept": ACCEPT,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "subscriptions/listen",
        **(headers or {}),
    }
    reader = SSEReader("POST", url, h, body)
    assert reader.status == 200
    item = reader.next(10)
    assert item is not None and item[1]["method"] == "notifications/subscriptions/acknowledged", item
    return reader


def next_method(reader: SSEReader, method: str, timeout: float = 10) -> dict[str, Any]:
    got = reader.messages_until(lambda m: isinstance(m, dict) and m.get("method") == method, timeout)
    assert got and got[-1].get("method") == method, got
    return got[-1]


# -- the admin -------------------------------------------------------------------------------------------


@contextmanager
def chromium_admin(base: str) -> Iterator[Callable[[str, str], float]]:
    """Staff signed in to the real admin in Chromium; yields ``toggle(name, action) -> when it answered``."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(f"{base}/admin/django_mcp/mcpswitch/")  # the login page first
            page.fill("#id_username", STAFF)
            page.fill("#id_password", STAFF_PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_selector("#result_list")

            def toggle(name: str, action: str) -> float:
                page.fill("#searchbar", name)
                page.press("#searchbar", "Enter")
                page.wait_for_selector("#result_list")
                row = page.locator("#result_list tbody tr").filter(
                    has=page.locator("th a", has_text=re.compile(f"^{re.escape(name)}$"))
                )
                row.locator("input.action-select").check()
                page.select_option("select[name=action]", action)
                page.click("button[name=index]")
                page.wait_for_selector("ul.messagelist li.success")
                return time.monotonic()

            yield toggle
        finally:
            browser.close()


class Admin:
    """Staff in the real admin over HTTP: the login form, then changelist actions (CSRF and all)."""

    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=30)
        self.http.get("/admin/login/")
        r = self.http.post(
            "/admin/login/",
            data={
                "username": STAFF,
                "password": STAFF_PASSWORD,
                "next": "/admin/",
                "csrfmiddlewaretoken": self.http.cookies["csrftoken"],
            },
        )
        assert r.status_code == 302, r.text

    def pk(self, changelist: str, label: str, search: bool = True) -> str:
        """The checkbox value of the row whose link reads ``label`` (found by searching, as staff would)."""
        page = self.http.get(changelist, params={"q": label} if search else None)
        assert page.status_code == 200
        found = re.search(rf'<a href="{re.escape(changelist)}(\d+)/change/[^"]*">{re.escape(label)}</a>', page.text)
        assert found, page.text
        return found.group(1)

    def action(self, changelist: str, label: str, action: str, search: bool = True) -> float:
        """Tick the row whose link reads ``label`` and run ``action``; when the admin answered."""
        pk = self.pk(changelist, label, search)
        r = self.http.post(
            changelist,
            data={
                "action": action,
                "_selected_action": [pk],
                "index": "0",
                "csrfmiddlewaretoken": self.http.cookies["csrftoken"],
            },
        )
        assert r.status_code == 302, r.text
        return time.monotonic()


# -- tools --------------------------------------------------------------------------------------------


def test_staff_switch_a_tool_off_in_chromium_and_every_worker_obeys_within_a_second(cluster: Cluster) -> None:
    first, last = cluster.workers[0], cluster.workers[-1]
    raws = [Raw(w) for w in cluster.workers]
    session = Raw(first)
    sid = session.initialize()
    get_stream = SSEReader("GET", first.url, {**session.session_headers(sid), "accept": "text/event-stream"})
    listening = listen_stream(last.url)
    try:
        for raw in raws:
            assert "echo" in listed(raw) and call_echo(raw).json()["result"]["content"][0]["text"] == "hi"
        with chromium_admin(first.base) as toggle:
            done = toggle("echo", "disable_selected")
            lags = [first_time(lambda raw=raw: echo_refused(raw)) - done for raw in raws]  # type: ignore[misc]
            print(f"switched off: refused on each worker after {[round(lag, 3) for lag in lags]} s")
            assert max(lags) < 1.0, lags
            assert all("echo" not in listed(raw) for raw in raws)
            assert next_method(get_stream, "notifications/tools/list_changed")
            note = next_method(listening, "notifications/tools/list_changed")
            assert note["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "listen-1"}

            done = toggle("echo", "enable_selected")
            lags = [first_time(lambda raw=raw: not echo_refused(raw)) - done for raw in raws]  # type: ignore[misc]
            print(f"switched on: served on each worker after {[round(lag, 3) for lag in lags]} s")
            assert max(lags) < 1.0, lags
            assert all("echo" in listed(raw) for raw in raws)
            assert next_method(get_stream, "notifications/tools/list_changed")
            assert next_method(listening, "notifications/tools/list_changed")
    finally:
        get_stream.close()
        listening.close()
        first.manage("shell", "-c", "from django_mcp.switches import switch_on; switch_on('tool', 'echo')")


def test_a_queued_task_of_a_switched_off_tool_fails_without_running(cluster: Cluster) -> None:
    first, last = cluster.workers[0], cluster.workers[-1]
    marker = cluster.tmp / "switched-off-marker"
    client = Modern(first.url)
    task_id = client.start("task_sleep", seconds=0.1, marker=str(marker))  # queued: no task worker runs
    admin = Admin(first.base)
    admin.action("/admin/django_mcp/mcpswitch/", "task_sleep", "disable_selected")
    worker = start_task_worker(cluster.env, cluster.tmp / "worker-switched.log")
    try:
        done = Modern(last.url).wait(task_id, timeout=30)
    finally:
        worker.stop()
        admin.action("/admin/django_mcp/mcpswitch/", "task_sleep", "enable_selected")
    assert done["status"] == "failed", done
    assert done["error"]["message"] == "Tool 'task_sleep' is disabled by the site's operators"
    assert not Path(f"{marker}.runs").exists(), "the tool ran"


def test_a_task_no_worker_picks_up_says_so_until_a_worker_runs_it(cluster: Cluster) -> None:
    first, last = cluster.workers[0], cluster.workers[-1]
    modern = Modern(first.url)
    session = Session(last.url, capabilities={"tasks": {}})
    new = modern.start("task_sleep", seconds=0.1)  # 2026-07-28
    old = session.start("task_sleep", seconds=0.1)["taskId"]  # 2025-11-25
    assert "statusMessage" not in modern.get(new)
    time.sleep(2.2)  # past TASK_UNCLAIMED_WARNING (2 s here)
    waiting = re.compile(r"Waiting for a task worker: none has picked this task up for \d+ seconds")
    assert waiting.fullmatch(modern.get(new)["statusMessage"]), modern.get(new)
    assert waiting.fullmatch(session.result("tasks/get", {"taskId": old})["statusMessage"])
    health = httpx.get(f"{last.base}/mcp/health", timeout=30)
    body = health.json()
    assert (health.status_code, body["status"], body["tasks"]["status"]) == (200, "degraded", "degraded"), body
    assert body["tasks"]["queued"] >= 2 and body["tasks"]["oldest_queued_seconds"] >= 2
    assert body["tasks"]["workers"] == 0  # no db_worker beats
    worker = start_task_worker(cluster.env, cluster.tmp / "worker-late.log")
    try:
        assert modern.wait(new, timeout=30)["status"] == "completed"
        deadline = time.monotonic() + 30
        while (task := session.result("tasks/get", {"taskId": old}))["status"] != "completed":
            assert time.monotonic() < deadline, task
            time.sleep(0.1)
        assert "statusMessage" not in task
        body = httpx.get(f"{first.base}/mcp/health", timeout=30).json()
        assert (body["status"], body["tasks"]["queued"]) == ("ok", 0), body
        assert body["tasks"]["newest_heartbeat_seconds"] < 30
        assert body["tasks"]["workers"] == 1 and body["tasks"]["newest_worker_beat_seconds"] < 30  # idle, alive
    finally:
        worker.stop()
    body = httpx.get(f"{first.base}/mcp/health", timeout=30).json()
    assert body["tasks"]["workers"] == 0, body  # SIGTERM: the worker said goodbye (its row is gone)


# -- OAuth clients: two users, two clients, two workers ----------------------------------------------------

MINT = """
import io
from django.core.management import call_command
from oauth2_provider.models import Application
for name in ("first", "second"):
    Application.objects.create(name=name, client_type="public", authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:9/callback")
for user in ("alice", "bob"):
    for app in ("first", "second"):
        out = io.StringIO()
        call_command("mcp_token", user=user, scope=["mcp"], application=app, resource={urls!r}, stdout=out)
        print(user, app, out.getvalue().strip())
"""


@dataclass
class OAuthCluster:
    servers: list[OAuthServer]
    tokens: dict[tuple[str, str], str]

    @property
    def workers(self) -> list[LiveServer]:
        return [s.live for s in self.servers]


@pytest.fixture(scope="module")
def oauth_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthCluster]:
    need_service("Redis", 6379)
    tmp = tmp_path_factory.mktemp("switches-oauth")
    a = start_oauth_server(tmp, db="postgres", layer="redis")
    b: OAuthServer | None = None
    try:
        b = OAuthServer(start_server(a.live.env, tmp / "b.log", migrate=False, app="tests.oauth.asgi:application"))
        a.shell(STAFF_SETUP)
        lines = a.live.manage("shell", "-c", MINT.format(urls=[a.url, b.url])).strip().splitlines()
        tokens = {(u, c): t for u, c, t in (line.split() for line in lines[-4:])}
        yield OAuthCluster([a, b], tokens)
    finally:
        if b is not None:
            b.live.stop()
        stop_oauth_server(a)
    for log in (a.live.log, tmp / "b.log"):
        text = log.read_text(errors="replace")
        assert "Traceback" not in text and " 500 " not in text, text


class Stdio:
    """``manage.py mcp_stdio`` on a token, driven over its pipes (newline-delimited JSON-RPC).

    ``modern``: 2026-07-28 requests (``_meta`` in each, no session); else a 2025-11-25 session.
    """

    def __init__(self, env: dict[str, str], token: str, log: Path, modern: bool) -> None:
        self.log = log
        self.modern = modern
        self.process = subprocess.Popen(
            [sys.executable, "-m", "django", "mcp_stdio"],
            env={**env, "DJANGO_MCP_TOKEN": token},
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log.open("wb"),
        )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ids = iter(range(1, 10_000))
        if not modern:
            info = {"name": "switches-tests", "version": "1"}
            started = self.request(
                "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}
            )
            assert "result" in started, started
            self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)  # the process closed its output

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = next(self.ids)
        if self.modern:
            params = {**params, "_meta": META}
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            message = self.lines.get(timeout=60)
            assert message is not None, "mcp_stdio exited:\n" + self.log.read_text(errors="replace")
            if message.get("id") == rid:
                return message

    def echo(self) -> dict[str, Any]:
        return self.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})

    def exited(self, timeout: float) -> bool:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self) -> None:
        if self.process.stdin is not None and self.process.poll() is None:
            self.process.stdin.close()
        if not self.exited(10):
            self.process.kill()
            self.process.wait(5)


def test_a_disabled_client_is_cut_off_on_every_worker_while_the_users_other_client_works(
    oauth_cluster: OAuthCluster,
) -> None:
    a, b = oauth_cluster.workers
    tokens = oauth_cluster.tokens
    raws = {w.port: Raw(w) for w in (a, b)}

    def works(worker: LiveServer, user: str, client: str) -> bool:
        r = call_echo(raws[worker.port], {"authorization": f"Bearer {tokens[(user, client)]}"})
        return r.status_code == 200 and r.json().get("result", {}).get("content", [{}])[0].get("text") == "hi"

    for worker in (a, b):
        for key in tokens:
            assert works(worker, *key), (worker.port, key)
    cut = listen_stream(b.url, {"authorization": f"Bearer {tokens[('alice', 'first')]}"})
    kept = listen_stream(a.url, {"authorization": f"Bearer {tokens[('alice', 'second')]}"})
    stdio = Stdio(a.env, tokens[("alice", "first")], a.log.parent / "stdio.log", modern=True)
    session_stdio = Stdio(b.env, tokens[("alice", "first")], a.log.parent / "stdio-session.log", modern=False)
    try:
        for process in (stdio, session_stdio):
            answer = process.echo()
            assert answer.get("result", {}).get("content", [{}])[0].get("text") == "hi", answer
        done = Admin(a.base).action("/admin/django_mcp/mcpclient/", "first", "disable_selected", search=False)
        lags = [first_time(lambda w=w, u=u: not works(w, u, "first")) - done for w in (a, b) for u in ("alice", "bob")]  # type: ignore[misc]
        lags.append(first_time(lambda: "error" in stdio.echo()) - done)
        print(f"client disabled: refused (A alice, A bob, B alice, B bob, stdio) after {[round(x, 3) for x in lags]} s")
        assert max(lags) < 1.0, lags
        error = stdio.echo()["error"]
        assert (error["code"], error["data"]) == (-32600, {"error": "client_disabled"}), error
        assert cut.next(5) is None, "the disabled client's listen stream ended"
        # A 2025-11-25 stdio session of the client was ended with the client's sessions: the process exits.
        assert session_stdio.exited(10), "the stdio session outlived its disabled client"
        assert "was ended elsewhere; exiting" in session_stdio.log.read_text()
        for worker in (a, b):
            for user in ("alice", "bob"):
                assert works(worker, user, "second"), (worker.port, user)
                r = call_echo(raws[worker.port], {"authorization": f"Bearer {tokens[(user, 'first')]}"})
                assert r.status_code == 401 and "invalid_token" in r.headers["www-authenticate"]
        with pytest.raises(queue.Empty):
            kept.events.get(timeout=1)  # the other client's stream is still open, and quiet
    finally:
        stdio.stop()
        session_stdio.stop()
        cut.close()
        kept.close()
