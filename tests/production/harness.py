"""A production-shaped deployment the fault tests start, break and repair.

``Deployment`` runs a private ``redis-server`` on a free port (``--save ''``: a restart
loses every key, as a restarted cache node without persistence does), a fresh PostgreSQL
database on the shared server, N real workers (daphne or uvicorn) and a real nginx in
front of them. nginx runs the configuration printed in docs/deployment.md: the
harness takes that page's ``nginx`` block and substitutes only the worker ports, the
``listen`` address and the temporary paths; the workers run that page's ``daphne`` or
``uvicorn`` command with only the application and the port changed. Workers and Redis
are killed and restarted by pid, never by name.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import IN_CI, ROOT, free_port, need_service, server_env

NGINX = "/usr/sbin/nginx"
ACCEPT = "application/json, text/event-stream"
DOC = ROOT / "docs" / "deployment.md"


def wait_port(port: int, timeout: float = 20, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited early ({process.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def need_binary(name: str, path: str | None) -> None:
    """Skip without ``name`` (fail under CI=true, like ``need_service``)."""
    if path is not None:
        return
    if IN_CI:
        pytest.fail(f"{name} is not installed (CI=true: a skip would hide untested code)")
    pytest.skip(f"{name} is not installed")


def documented_nginx_config() -> str:
    """The ```nginx block of docs/deployment.md, verbatim."""
    match = re.search(r"```nginx\n(.*?)```", DOC.read_text(), re.S)
    assert match, f"{DOC} has no ```nginx block"
    return match.group(1)


def documented_command(program: str, app: str, port: int, workers: int = 1) -> list[str]:
    """The shell command of docs/deployment.md that starts ``program`` (``daphne``, ``uvicorn``, ``gunicorn``)
    for the ``config.asgi`` or ``config.wsgi`` application ``app`` names, run for ``app`` on ``port``.

    Only what a test must change is changed: the application, the port (``8001``), gunicorn's ``-w`` and
    the program run as ``python -m`` of this interpreter; every other flag is the guide's.
    """
    kind = "config.wsgi:application" if app.endswith("wsgi:application") else "config.asgi:application"
    for block in re.findall(r"```sh\n(.*?)```", DOC.read_text(), re.S):
        line = block.replace("\\\n", " ").strip()
        words = shlex.split(line)
        if words and words[0] == program and kind in words:
            break
    else:
        raise AssertionError(f"{DOC} has no `{program} ... {kind}` command")
    args = [app if w == kind else w.replace("8001", str(port)) for w in words[1:]]
    if "-w" in args:
        args[args.index("-w") + 1] = str(workers)
    return [sys.executable, "-m", program, *args]


def nginx_config(worker_ports: list[int], listen: int, tmp: Path) -> str:
    """The documented server config with our ports, wrapped in a main config that keeps every path in ``tmp``."""
    site = documented_nginx_config()
    upstream_lines = re.findall(r"^\s*server 127\.0\.0\.1:\d+[^;]*;\n", site, re.M)
    assert len(upstream_lines) >= 1, "the documented upstream names no worker"
    template = upstream_lines[0]
    block = "".join(re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{p}", template) for p in worker_ports)
    site = site.replace("".join(upstream_lines), block)
    site, n = re.subn(r"^(\s*)listen\s+\d+;", rf"\1listen 127.0.0.1:{listen};", site, flags=re.M)
    assert n == 1, "the documented server block must have one `listen <port>;`"
    user = "user root;\n" if os.geteuid() == 0 else ""
    temp = "\n".join(
        f"    {name}_temp_path {tmp}/{name};" for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}worker_processes 1;\n"
        "worker_rlimit_nofile 8192;\n"
        "events { worker_connections 4096; }\n"
        "http {\n"
        f"    access_log {tmp}/access.log;\n"
        f"{temp}\n"
        f"{site}\n"
        "}\n"
    )


@dataclass
class Proc:
    """A process this test started (and only this test may stop)."""

    args: list[str]
    env: dict[str, str]
    log: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    def start(self, wait: float = 30) -> None:
        handle = self.log.open("ab")
        self.process = subprocess.Popen(self.args, env=self.env, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT)
        try:
            wait_port(self.port, wait, self.process)
        except RuntimeError as exc:
            self.kill()
            raise RuntimeError(f"{self.args[:4]}: {exc}\n{self.log.read_text(errors='replace')[-3000:]}") from None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """``kill -9`` by pid."""
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
            assert self.process is not None
            self.process.wait(10)

    def stop(self) -> None:
        if self.alive():
            assert self.process is not None
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Deployment:
    tmp: Path
    workers: int = 2
    server: str = "daphne"
    env_extra: dict[str, str] = field(default_factory=dict)
    redis: Proc | None = None
    nodes: list[Proc] = field(default_factory=list)
    nginx: Proc | None = None
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        need_binary("redis-server", shutil.which("redis-server"))
        need_binary("nginx", NGINX if Path(NGINX).exists() else None)
        need_service("PostgreSQL", 5432)

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> Deployment:
        port = free_port()
        self.redis = Proc(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            dict(os.environ),
            self.tmp / "redis.log",
            port,
        )
        self.redis.start()
        self.env = server_env(
            self.tmp,
            db="postgres",
            layer="redis",
            MCP_REDIS_URL=f"redis://127.0.0.1:{port}/0",
            **self.env_extra,
        )
        subprocess.run(
            [sys.executable, "-m", "django", "migrate", "--noinput", "-v0"],
            env=self.env,
            cwd=ROOT,
            check=True,
            timeout=120,
        )
        for i in range(self.workers):
            wport = free_port()
            args = documented_command(self.server, "tests.production.asgi:application", wport)
            node = Proc(args, self.env, self.tmp / f"worker{i}.log", wport)
            node.start()
            self.nodes.append(node)
        listen = free_port()
        conf = self.tmp / "nginx.conf"
        conf.write_text(nginx_config([n.port for n in self.nodes], listen, self.tmp))
        directive = f"daemon off; pid {self.tmp}/nginx.pid; error_log stderr;"
        self.nginx = Proc(
            [NGINX, "-p", str(self.tmp), "-c", str(conf), "-g", directive], {}, self.tmp / "nginx.log", listen
        )
        self.nginx.start()
        return self

    def stop(self) -> None:
        for proc in [self.nginx, *self.nodes, self.redis]:
            if proc is not None:
                proc.stop()

    @property
    def url(self) -> str:
        assert self.nginx is not None
        return f"http://127.0.0.1:{self.nginx.port}/mcp/"

    def worker_url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.nodes[i].port}/mcp/"

    def logs(self) -> str:
        return "\n".join(n.log.read_text(errors="replace") for n in self.nodes)

    # -- Redis ------------------------------------------------------------------------------------
    def redis_cli(self, *args: str) -> str:
        assert self.redis is not None
        out = subprocess.run(
            ["redis-cli", "-p", str(self.redis.port), *args], capture_output=True, text=True, timeout=10, check=True
        )
        return out.stdout

    def redis_keys(self, pattern: str) -> list[str]:
        return [k for k in self.redis_cli("--scan", "--pattern", pattern).split() if k]


class Client:
    """A plain MCP client over HTTP (one session), talking to nginx."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=20)
        self.sid = ""
        self.statuses: list[int] = []

    def post(self, body: Any) -> httpx.Response:
        headers = {"content-type": "application/json", "accept": ACCEPT}
        if self.sid:
            headers.update(self.headers())
        r = self.http.post(self.url, content=json.dumps(body), headers=headers)
        self.statuses.append(r.status_code)
        return r

    def headers(self) -> dict[str, str]:
        return {"mcp-session-id": self.sid, "mcp-protocol-version": "2025-11-25"}

    def initialize(self) -> str:
        r = self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "f", "version": "1"},
                },
            }
        )
        assert r.status_code == 200, r.text
        self.sid = r.headers["mcp-session-id"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self.sid

    def call(self, name: str, rid: int = 1, **arguments: Any) -> httpx.Response:
        return self.post(
            {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        )

    def subscribe(self, uri: str) -> None:
        r = self.post({"jsonrpc": "2.0", "id": 5, "method": "resources/subscribe", "params": {"uri": uri}})
        assert r.status_code == 200 and "result" in r.json(), r.text


class ResumingStream:
    """A GET (or resumed POST) SSE stream that reconnects with ``Last-Event-ID`` like a real client.

    Every event id seen (priming events too) is remembered; each connection's HTTP status is
    recorded; ``messages`` holds every JSON message in arrival order.
    """

    def __init__(self, url: str, headers: dict[str, str], last_id: str | None = None, reconnect: bool = True) -> None:
        self.url, self.base_headers, self.last_id, self.reconnect = url, headers, last_id, reconnect
        self.messages: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self.connections = 0
        self.ends: list[float] = []
        self.opened_at: list[float] = []  # when each 200 connection began
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.opened = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with httpx.Client(timeout=httpx.Timeout(10, read=120)) as client:
            self._client = client
            while not self._stop.is_set():
                headers = {**self.base_headers, "accept": "text/event-stream"}
                if self.last_id:
                    headers["last-event-id"] = self.last_id
                try:
                    with client.stream("GET", self.url, headers=headers) as r:
                        self.statuses.append(r.status_code)
                        self.connections += 1
                        if r.status_code == 200:
                            self.opened_at.append(time.monotonic())
                            self.opened.set()
                            self._read(r)
                        else:
                            r.read()
                except httpx.HTTPError:
                    pass
                self.ends.append(time.monotonic())
                if not self.reconnect:
                    return
                self._stop.wait(0.3)

    def _read(self, r: httpx.Response) -> None:
        data: list[str] = []
        eid: str | None = None
        for line in r.iter_lines():
            if self._stop.is_set():
                return
            if line.startswith("id:"):
                eid = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "":
                # As EventSource does: an event counts (and its id with it) once it is complete.
                if eid is not None:
                    self.last_id = eid
                text = "".join(data)
                eid, data = None, []
                if text:
                    with self._lock:
                        self.messages.append(json.loads(text))

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.messages)

    def wait_for(self, predicate: Any, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(predicate(m) for m in self.snapshot()):
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self._stop.set()
        client = getattr(self, "_client", None)
        if client is not None:
            client.close()  # unblocks a read in progress
        self._thread.join(5)

    @property
    def finished(self) -> bool:
        return not self._thread.is_alive()
