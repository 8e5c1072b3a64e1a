"""``manage.py mcp_stdio`` in a real subprocess: the official SDK client in both eras, and raw pipes.

Every server is ``python -m django mcp_stdio`` on a migrated SQLite file of this
module's own. The raw tests speak newline-delimited JSON themselves to reach what
the SDK client never sends (garbage lines, batches, cancellation, stray prints).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from django_mcp import Context
from django_mcp.server import MCPServer
from tests.support.servers import ROOT, migrate_database

#: own_config: every server process runs on its own SQLite file and the in-memory layer (the env fixture), so
#: pg-redis would run the same thing again.
pytestmark = pytest.mark.own_config

TIMEOUT = 60
HANDSHAKE = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}

# A second server for ``--server``; its tools misbehave on purpose (stdout writes, logging).
noisy = MCPServer("noisy-server", version="9.9")


@noisy.tool
def shout(text: str) -> str:
    """Writes to stdout every way it can; none of it may reach the protocol stream."""
    print(f"print:{text}")
    sys.stdout.write(f"sys.stdout:{text}\n")
    sys.stdout.flush()
    os.write(1, f"fd1:{text}\n".encode())
    subprocess.run(["echo", f"child:{text}"], check=True)
    logging.getLogger("django_mcp").warning("logged:%s", text)
    return text.upper()


@noisy.tool
async def whoami(ctx: Context) -> str:
    """The user the process serves as."""
    return ctx.user.get_username() or "anonymous"


@noisy.resource("noisy://thing", mime_type="text/plain")
def thing() -> str:
    """Something to subscribe to."""
    return "a thing"


@noisy.tool
async def touch() -> str:
    """Announces a tools list change and an update of noisy://thing."""
    await noisy.notify_list_changed("tools")
    await noisy.notify_resource_updated("noisy://thing")
    return "touched"


# -- fixtures and helpers -------------------------------------------------------------


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for the server processes: test settings on a freshly migrated SQLite file."""
    tmp = tmp_path_factory.mktemp("stdio")
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="tests.settings",
        PYTHONPATH=str(ROOT),
        MCP_TEST_DB="sqlite",
        MCP_TEST_LAYER="memory",
        MCP_SQLITE=str(tmp / "stdio.sqlite3"),
    )
    migrate_database(env)  # a copy of the run's migrated tests.settings file, as the live servers get
    return env


def manage(env: dict[str, str], *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "django", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def sessions(env: dict[str, str], client_name: str) -> list[dict[str, Any]]:
    """The MCPSession rows a client (by clientInfo.name) left behind."""
    code = (
        "import json; from django_mcp.models import MCPSession; "
        "print(json.dumps([dict(v=s.protocol_version, ended=s.ended is not None, init=s.initialized, "
        "user=s.user.username if s.user else None) "
        f"for s in MCPSession.objects.filter(client_info__name={client_name!r})]))"
    )
    return json.loads(manage(env, "shell", "-c", code).strip().splitlines()[-1])  # type: ignore[no-any-return]


def params(env: dict[str, str], *extra: str) -> StdioServerParameters:
    keys = ("DJANGO_SETTINGS_MODULE", "PYTHONPATH", "MCP_TEST_DB", "MCP_TEST_LAYER", "MCP_SQLITE")
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "django", "mcp_stdio", *extra],
        env={k: env[k] for k in keys},
        cwd=str(ROOT),
    )


class Recorder:
    def __init__(self) -> None:
        self.logs: list[Any] = []
        self.progress: list[float] = []
        self.elicited: list[str] = []

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append(progress)

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicited.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})


async def exercise(client: Client, rec: Recorder, elicitation: bool) -> None:
    """The same tour in every era: list, call (plain, progress + logs, elicitation), read, prompt."""
    names = {t.name for t in (await client.list_tools()).tools}
    assert {"add", "count", "sleepy", "ask_name"} <= names

    added = await client.call_tool("add", {"a": 2, "b": 3})
    assert not added.is_error
    text = added.content[0]
    assert isinstance(text, types.TextContent)
    assert json.loads(text.text) == {"total": 5, "terms": [2, 3]}

    counted = await client.call_tool("count", {"steps": 3}, progress_callback=rec.on_progress)
    assert isinstance(counted.content[0], types.TextContent) and counted.content[0].text == "counted to 3"
    assert rec.progress == [1, 2, 3]
    assert rec.logs == ["counted 1", "counted 2", "counted 3"]

    if elicitation:
        asked = await client.call_tool("ask_name", {})
        assert isinstance(asked.content[0], types.TextContent) and asked.content[0].text == "Hello, Ada!"
        assert rec.elicited == ["What is your name?"]

    read = await client.read_resource("test://static/hello")
    content = read.contents[0]
    assert isinstance(content, types.TextResourceContents) and content.text == "Hello, world!"

    prompt = await client.get_prompt("greet", {"name": "Al"})
    message = prompt.messages[0].content
    assert isinstance(message, types.TextContent) and "Please greet Al" in message.text


# -- the SDK client ---------------------------------------------------------------------


@pytest.mark.parametrize("version", HANDSHAKE)
async def test_sdk_handshake_era(
    env: dict[str, str], version: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("mcp.client.session.LATEST_HANDSHAKE_VERSION", version)
    rec = Recorder()
    name = f"stdio-{uuid.uuid4().hex[:8]}"
    with anyio.fail_after(TIMEOUT), (tmp_path / "stderr.log").open("w") as errlog:
        async with Client(
            stdio_client(params(env), errlog=errlog),
            mode="legacy",
            read_timeout_seconds=30,
            logging_callback=rec.on_log,
            elicitation_callback=rec.elicit,
            client_info=types.Implementation(name=name, version="1"),
        ) as client:
            assert client.protocol_version == version
            assert client.server_info is not None and client.server_info.name == "django-mcp-tests"
            # Elicitation arrived in 2025-06-18; older clients answer it with -32601.
            await exercise(client, rec, elicitation=version >= "2025-06-18")
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()
    # One real session for the process's lifetime, ended when the client closed stdin.
    assert sessions(env, name) == [{"v": version, "ended": True, "init": True, "user": None}]


async def test_sdk_2026_era(env: dict[str, str], tmp_path: Path) -> None:
    rec = Recorder()
    before = sessions(env, "mcp")
    with anyio.fail_after(TIMEOUT), (tmp_path / "stderr.log").open("w") as errlog:
        async with Client(
            stdio_client(params(env), errlog=errlog),
            mode="2026-07-28",
            cache=None,
            log_level="debug",
            read_timeout_seconds=30,
            logging_callback=rec.on_log,
            elicitation_callback=rec.elicit,
        ) as client:
            assert client.protocol_version == "2026-07-28"
            await exercise(client, rec, elicitation=True)  # elicitation as input_required + retry
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()
    assert sessions(env, "mcp") == before  # no session in this era


async def test_sdk_auto_mode_discovers_2026(env: dict[str, str]) -> None:
    with anyio.fail_after(TIMEOUT):
        async with Client(params(env), mode="auto", cache=None, read_timeout_seconds=30) as client:
            assert client.protocol_version == "2026-07-28"
            assert client.server_info is not None and client.server_info.name == "django-mcp-tests"
            result = await client.call_tool("echo", {"text": "hi"})
            assert isinstance(result.content[0], types.TextContent) and result.content[0].text == "hi"


async def test_sdk_other_server_and_user(env: dict[str, str]) -> None:
    manage(
        env, "shell", "-c", "from django.contrib.auth.models import User; User.objects.get_or_create(username='ada')"
    )
    name = f"stdio-{uuid.uuid4().hex[:8]}"
    with anyio.fail_after(TIMEOUT):
        async with Client(
            params(env, "--server", "tests.test_stdio.noisy", "--user", "ada"),
            mode="legacy",
            read_timeout_seconds=30,
            client_info=types.Implementation(name=name, version="1"),
        ) as client:
            assert client.server_info is not None and client.server_info.name == "noisy-server"
            assert {t.name for t in (await client.list_tools()).tools} == {"shout", "whoami", "touch"}
            who = await client.call_tool("whoami", {})
            assert isinstance(who.content[0], types.TextContent) and who.content[0].text == "ada"
    assert sessions(env, name) == [{"v": "2025-11-25", "ended": True, "init": True, "user": "ada"}]


# -- raw pipes ----------------------------------------------------------------------------


class Proc:
    """The server on raw pipes: send lines, read stdout lines with timeouts."""

    def __init__(self, env: dict[str, str], tmp: Path, *extra: str) -> None:
        self.errpath = tmp / f"stderr-{uuid.uuid4().hex[:6]}.log"
        self._err = self.errpath.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "django", "mcp_stdio", *extra],
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.raw: list[bytes] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.raw.append(line)
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, message: Any) -> None:
        assert self.process.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    #: How long a read waits: an upper bound only (a line returns at once), as long as a start on a loaded
    #: machine can take (15-20 s measured in CI, where 20 s ran out before the first answer).
    WAIT = 60.0

    def recv(self, timeout: float = WAIT) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        assert line, f"server closed stdout; stderr:\n{self.stderr()}"
        return json.loads(line)  # type: ignore[no-any-return]

    def response(self, rid: Any, timeout: float = WAIT) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The response to ``rid`` and the other messages read before it."""
        others: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            message = self.recv(max(0.1, deadline - time.monotonic()))
            if message.get("id") == rid and "method" not in message:
                return message, others
            others.append(message)

    def request(self, rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})})
        return self.response(rid)[0]

    def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        init = self.request(
            0,
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return init

    def quiet(self, seconds: float) -> list[dict[str, Any]]:
        """Whatever arrives within ``seconds``."""
        got = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if not line:
                break
            got.append(json.loads(line))
        return got

    def close(self, timeout: float = 30) -> float:
        """Close stdin and wait for the exit; returns how long that took (loaded, a start alone took 15 s)."""
        start = time.monotonic()
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
            raise
        return time.monotonic() - start

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        self._err.close()

    def stderr(self) -> str:
        return self.errpath.read_text(errors="replace")


@pytest.fixture
def spawn(env: dict[str, str], tmp_path: Path) -> Iterator[Any]:
    procs: list[Proc] = []

    def start(*extra: str) -> Proc:
        proc = Proc(env, tmp_path, *extra)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.kill()


def modern(params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return {**(params or {}), "_meta": {**MODERN_META, **meta}}


@pytest.mark.version_independent
def test_malformed_lines_get_errors_and_serving_continues(spawn: Any) -> None:
    proc = spawn()
    proc.initialize()
    proc.send(b"this is not json")
    error = proc.recv()
    assert error["error"]["code"] == -32700 and "id" not in error
    proc.send(b'{"jsonrpc": "2.0", "id": 5, "method": ')
    error = proc.recv()
    assert error["error"]["code"] == -32700 and "id" not in error
    proc.send({"jsonrpc": "1.0", "id": 6, "method": "ping"})
    assert proc.recv()["error"]["code"] == -32600
    proc.send(b"   ")  # blank lines are skipped silently
    result = proc.request(7, "tools/call", {"name": "add", "arguments": {"a": 40, "b": 2}})
    assert result["result"]["structuredContent"] == {"total": 42, "terms": [40, 2]}
    assert proc.close() < 10
    assert proc.process.returncode == 0


def test_stdout_is_only_protocol(spawn: Any) -> None:
    proc = spawn("--server", "tests.test_stdio.noisy", "-v", "2")
    init = proc.initialize()
    assert init["result"]["serverInfo"] == {"name": "noisy-server", "version": "9.9"}
    result = proc.request(1, "tools/call", {"name": "shout", "arguments": {"text": "boo"}})
    assert result["result"]["content"] == [{"type": "text", "text": "BOO"}]
    crash = proc.request(2, "tools/call", {"name": "nope"})
    assert crash["error"]["code"] == -32602
    proc.close()
    for line in proc.raw:  # every byte on stdout is a JSON-RPC message
        assert json.loads(line)["jsonrpc"] == "2.0"
    err = proc.stderr()
    for where in ("print:boo", "sys.stdout:boo", "fd1:boo", "child:boo", "logged:boo"):
        assert where in err, err


@pytest.mark.version_independent
def test_tool_crash_logs_to_stderr_only(spawn: Any) -> None:
    proc = spawn()
    proc.initialize()
    result = proc.request(1, "tools/call", {"name": "fail", "arguments": {"kind": "crash"}})
    assert result["result"]["isError"] is True
    assert "secret" not in json.dumps(result)
    proc.close()
    assert all(json.loads(line) for line in proc.raw)
    assert "secret internal detail" in proc.stderr()


@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
@pytest.mark.version_independent
def test_cancellation_stops_the_task_and_sends_nothing(spawn: Any, era: str) -> None:
    proc = spawn()
    if era == "handshake":
        proc.initialize()
        call = {"name": "sleepy", "arguments": {"seconds": 30}, "_meta": {"progressToken": "p"}}
        ping: tuple[str, dict[str, Any] | None] = ("ping", None)
    else:
        call = modern({"name": "sleepy", "arguments": {"seconds": 30}}, progressToken="p")
        ping = ("tools/call", modern({"name": "echo", "arguments": {"text": "still here"}}))
    proc.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call", "params": call})
    progress = proc.recv()  # the tool is running: it reported progress first
    assert progress["method"] == "notifications/progress" and progress["params"]["progressToken"] == "p"
    # A long tool does not block other requests.
    assert "result" in proc.request(2, *ping)
    proc.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}})
    assert "result" in proc.request(3, *ping)
    assert [m for m in proc.quiet(1.0) if m.get("id") == "slow"] == []
    # Nothing is left running: end of input exits at once instead of waiting out the shutdown grace.
    assert proc.close() < 4
    assert not any(json.loads(line).get("id") == "slow" for line in proc.raw)
    assert "Traceback" not in proc.stderr()


@pytest.mark.version_independent
def test_end_of_input_still_answers_requests_in_flight(spawn: Any) -> None:
    proc = spawn()
    proc.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "e", "version": "0"},
            },
        }
    )
    proc.send(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "sleepy", "arguments": {"seconds": 0.5}}}
    )
    proc.close()
    ids = [json.loads(line).get("id") for line in proc.raw]
    assert ids == [1, 2]


@pytest.mark.version_independent
def test_batches_only_in_2025_03_26(spawn: Any) -> None:
    proc = spawn()
    proc.initialize("2025-03-26")
    proc.send(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "b"}}},
            {"jsonrpc": "2.0", "id": 3},
        ]
    )
    batch = proc.recv()
    assert isinstance(batch, list)
    by_id = {m.get("id"): m for m in batch}
    assert by_id[1]["result"] == {} and by_id[2]["result"]["content"][0]["text"] == "b"
    assert by_id[3]["error"]["code"] == -32600
    proc.close()

    proc = spawn()
    proc.initialize("2025-11-25")
    proc.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    error = proc.recv()
    assert error["error"]["code"] == -32600 and "2025-11-25" in error["error"]["message"]
    assert proc.request(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    proc.close()


@pytest.mark.version_independent
def test_handshake_connection_rules(spawn: Any) -> None:
    proc = spawn()
    assert proc.request(1, "ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}  # allowed before initialize
    assert proc.request(2, "tools/list")["error"]["code"] == -32600  # nothing else is
    proc.initialize()
    assert (
        proc.request(
            3,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "a", "version": "0"}},
        )["error"]["code"]
        == -32600
    )
    assert proc.request(4, "tools/list", modern())["error"]["code"] == -32600  # the other era's envelope
    assert proc.request(5, "server/discover")["error"]["code"] == -32601
    assert proc.request(6, "logging/setLevel", {"level": "error"})["result"] == {}
    result = proc.request(7, "tools/call", {"name": "count", "arguments": {"steps": 2}})
    assert result["result"]["content"][0]["text"] == "counted to 2"  # and no info logs below "error"
    proc.close()
    assert not any(json.loads(line).get("method") == "notifications/message" for line in proc.raw)


@pytest.mark.version_independent
def test_2026_connection_rules(spawn: Any) -> None:
    proc = spawn()
    discover = proc.request(1, "server/discover", modern())
    assert "2026-07-28" in discover["result"]["supportedVersions"]
    assert discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "django-mcp-tests"
    init = proc.request(
        2,
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "a", "version": "0"}},
    )
    assert init["error"]["code"] == -32022 and init["error"]["data"]["supported"] == ["2026-07-28"]
    for method in ("ping", "logging/setLevel", "resources/subscribe"):  # removed in 2026-07-28
        assert (
            proc.request(method, method, modern({"level": "info", "uri": "test://static/hello"}))["error"]["code"]
            == -32601
        )
    assert proc.request(3, "tools/list")["error"]["code"] == -32602  # no envelope
    bad = proc.request(
        4, "tools/list", {"_meta": {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}
    )
    assert bad["error"]["code"] == -32022
    # Logs only at or above the request's own level.
    proc.send(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": modern({"name": "count", "arguments": {"steps": 2}}),
        }
    )
    response, before = proc.response(5)
    assert response["result"]["resultType"] == "complete" and before == []
    proc.send(
        {
            "jsonrpc": "2.0",
            "id": 6,
            "method": "tools/call",
            "params": modern(
                {"name": "count", "arguments": {"steps": 2}}, **{"io.modelcontextprotocol/logLevel": "info"}
            ),
        }
    )
    response, before = proc.response(6)
    assert [m["params"]["data"] for m in before] == ["counted 1", "counted 2"]
    proc.close()


def test_2026_listen_on_stdio(spawn: Any) -> None:
    proc = spawn()
    proc.send(
        {
            "jsonrpc": "2.0",
            "id": "sub",
            "method": "subscriptions/listen",
            "params": modern({"notifications": {"toolsListChanged": True}}),
        }
    )
    ack = proc.recv()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"] == {
        "_meta": {"io.modelcontextprotocol/subscriptionId": "sub"},
        "notifications": {"toolsListChanged": True},
    }
    # The server ends the stream with notifications/cancelled when it shuts down.
    proc.close()
    last = json.loads(proc.raw[-1])
    assert last == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": "sub", "reason": "server shutting down"},
    }


@pytest.mark.version_independent
def test_bad_options_fail_cleanly(env: dict[str, str]) -> None:
    for args, expected in (
        (["--user", "nobody-here"], "No user named 'nobody-here'"),
        (["--server", "tests.nope.server"], "Cannot import --server"),
        (["--server", "tests.test_stdio.shout"], "not an MCPServer instance"),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "django", "mcp_stdio", *args],
            env=env,
            cwd=ROOT,
            input=b"",
            capture_output=True,
            timeout=TIMEOUT,
        )
        assert out.returncode == 1
        assert out.stdout == b""
        assert expected in out.stderr.decode()


def test_handshake_change_notifications(spawn: Any) -> None:
    proc = spawn("--server", "tests.test_stdio.noisy")
    proc.initialize()
    assert proc.request(1, "resources/subscribe", {"uri": "noisy://thing"}) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    proc.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "touch"}})
    response, before = proc.response(2)
    assert response["result"]["content"][0]["text"] == "touched"
    pushed = [(m["method"], m.get("params")) for m in before + proc.quiet(1.0)]
    assert sorted(pushed, key=str) == [
        ("notifications/resources/updated", {"uri": "noisy://thing"}),
        ("notifications/tools/list_changed", None),
    ]
    proc.close()


def test_2026_listen_gets_changes_until_cancelled(spawn: Any) -> None:
    proc = spawn("--server", "tests.test_stdio.noisy")
    wanted = {"toolsListChanged": True, "promptsListChanged": True, "resourceSubscriptions": ["noisy://thing"]}
    proc.send(
        {"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen", "params": modern({"notifications": wanted})}
    )
    assert proc.recv()["method"] == "notifications/subscriptions/acknowledged"
    proc.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": modern({"name": "touch"})})
    response, before = proc.response(2)
    assert response["result"]["resultType"] == "complete"
    sub = {"io.modelcontextprotocol/subscriptionId": "sub"}
    pushed = sorted(((m["method"], m["params"]) for m in before + proc.quiet(1.0)), key=str)
    assert pushed == [
        ("notifications/resources/updated", {"uri": "noisy://thing", "_meta": sub}),
        ("notifications/tools/list_changed", {"_meta": sub}),
    ]
    proc.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "sub"}})
    assert proc.request(3, "tools/list", modern())["result"]["tools"]
    # Alone this takes ~0.5 s; late in the full suite on a 2-core machine it has taken 5.5 s.
    # The bound guards against waiting out the 30 s close timeout (a listen that never ends).
    assert proc.close() < 10
    assert not any(json.loads(line).get("id") == "sub" for line in proc.raw)  # no result for a cancelled listen
    assert json.loads(proc.raw[-1])["id"] == 3  # and no server-side teardown notice either


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.version_independent
def test_sigterm_stops_at_once_and_ends_the_session(spawn: Any, env: dict[str, str]) -> None:
    proc = spawn()
    name = f"stdio-{uuid.uuid4().hex[:8]}"
    proc.request(
        0,
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": name, "version": "0"}},
    )
    proc.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "sleepy", "arguments": {"seconds": 30}, "_meta": {"progressToken": 1}},
        }
    )
    assert proc.recv()["method"] == "notifications/progress"
    start = time.monotonic()
    proc.process.send_signal(signal.SIGTERM)
    assert proc.process.wait(10) == 0
    assert time.monotonic() - start < 4
    assert sessions(env, name) == [{"v": "2025-06-18", "ended": True, "init": False, "user": None}]


@pytest.mark.version_independent
def test_batch_cap(spawn: Any) -> None:
    """Over MAX_BATCH_SIZE (100) a batch gets one -32600 error naming the limit and nothing in it runs."""
    proc = spawn()
    proc.initialize("2025-03-26")

    def calls(n: int) -> list[dict[str, Any]]:
        params = {"name": "record", "arguments": {"tag": "stdio-cap"}}
        return [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params} for i in range(n)]

    def recorded(rid: int) -> int:
        reply = proc.request(rid, "tools/call", {"name": "recorded", "arguments": {"tag": "stdio-cap"}})
        return int(json.loads(reply["result"]["content"][0]["text"])["result"])

    proc.send(calls(101))
    error = proc.recv()
    assert isinstance(error, dict) and error["error"]["code"] == -32600
    assert error["error"]["data"] == {"limit": "MAX_BATCH_SIZE", "max": 100, "received": 101}
    assert recorded(1000) == 0
    proc.send(calls(100))
    batch = proc.recv()
    assert isinstance(batch, list) and len(batch) == 100
    assert recorded(1001) == 100
    proc.close()
