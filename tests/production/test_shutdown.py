"""SIGTERM on real daphne, uvicorn and gunicorn workers with calls in flight, and rolling
restarts behind the deployment guide's nginx.

Every call in flight either finishes within ``SHUTDOWN_GRACE`` or gets an error it
can retry: HTTP 503 with ``Retry-After`` when nothing was sent yet (one for a whole
batch), a JSON-RPC error event (``data.retryable``) on an SSE response that had
started. Never an empty 202, never a 500. Meanwhile the worker has stopped listening
(a new connection is refused, so a proxy sends it elsewhere), a request on a connection
already open is served with ``Connection: close``, the health probe says "draining",
open GET and ``subscriptions/listen`` streams end at once, a client's own cancellation
still gets no response, and the process exits within the grace plus a bound. A sync
tool still running at the end of the grace keeps its real answer: its thread cannot be
stopped, so "retry" would be a lie inviting a duplicate.

Behind docs/deployment.md's nginx block and commands, read from the page, a rolling
restart under steady traffic loses nothing: one worker of two gets SIGTERM (daphne,
uvicorn, gunicorn's uvicorn worker), or the gunicorn master of WSGI mode gets SIGHUP.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.raw import sse_messages
from tests.support.servers import LiveServer, log_problem, server_env

from .ops import call, health, initialize, session_headers, start_documented

pytestmark = pytest.mark.production

GRACE = 4.0
#: A sync tool running past the grace keeps its real answer (its thread cannot be stopped).
SYNC_SECONDS = 5.5
#: How long after the grace the process may take to exit (cancelled calls answering, the server stopping).
EXIT_BOUND = 4.0


class Outcome:
    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: httpx.Headers | None = None
        self.text = ""
        self.failure: str | None = None
        self.ended_at: float | None = None


def _post(url: str, sid: str, body: Any, out: Outcome, revision: str = "2025-11-25") -> None:
    try:
        with httpx.Client(timeout=httpx.Timeout(60)) as client:
            r = client.post(url, json=body, headers=session_headers(sid, revision))
            out.status, out.headers, out.text = r.status_code, r.headers, r.text
    except httpx.HTTPError as exc:  # a dropped connection is a failure the test reports
        out.failure = repr(exc)
    out.ended_at = time.monotonic()


def _get_stream(url: str, sid: str, out: Outcome, opened: threading.Event) -> None:
    try:
        with httpx.Client(timeout=httpx.Timeout(60)) as client:
            headers = {**session_headers(sid), "accept": "text/event-stream"}
            with client.stream("GET", url, headers=headers) as r:
                out.status = r.status_code
                opened.set()
                for _ in r.iter_bytes():
                    pass
    except httpx.HTTPError as exc:
        out.failure = repr(exc)
    opened.set()
    out.ended_at = time.monotonic()


def _listen_stream(url: str, out: Outcome, opened: threading.Event) -> None:
    """A 2026-07-28 ``subscriptions/listen`` stream, held until the server ends it."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "ops", "version": "1"},
    }
    body = {
        "jsonrpc": "2.0",
        "id": "sub",
        "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": True}},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "subscriptions/listen",
    }
    try:
        with httpx.Client(timeout=httpx.Timeout(60)) as client:
            with client.stream("POST", url, json=body, headers=headers) as r:
                out.status = r.status_code
                opened.set()
                for _ in r.iter_bytes():
                    pass
    except httpx.HTTPError as exc:
        out.failure = repr(exc)
    opened.set()
    out.ended_at = time.monotonic()


def _final(out: Outcome, rid: int) -> dict[str, Any]:
    """The JSON-RPC response for ``rid`` in a JSON or SSE body."""
    assert out.failure is None, out.failure
    assert out.headers is not None
    if out.headers.get("content-type", "").startswith("text/event-stream"):
        answers = [m for m in sse_messages(out.text) if m.get("id") == rid and "method" not in m]
        assert len(answers) == 1, out.text
        return answers[0]

    message: dict[str, Any] = json.loads(out.text)
    assert message.get("id") == rid, out.text
    return message


def _assert_retryable(message: dict[str, Any]) -> None:
    error = message.get("error")
    assert error is not None, message
    assert error["data"]["retryable"] is True and error["data"]["reason"] == "shutdown", message


def _wait_in_flight(server: LiveServer, n: int) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        body = health(server).json()
        if body["worker"]["requests_in_flight"] >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"expected {n} calls in flight, health says {body}")


def _start(kind: str, tmp: Path) -> LiveServer:
    """The test project served with docs/deployment.md's command for ``kind`` (gunicorn: one uvicorn worker)."""
    env = server_env(tmp, settings="tests.production.ops_settings", MCP_SHUTDOWN_GRACE=str(GRACE))
    return start_documented(kind, env, tmp / "server.log", "tests.settings.asgi:application")


@pytest.mark.parametrize("kind", ["daphne", "uvicorn", "gunicorn"])
def test_sigterm_drains_or_answers_retryable(kind: str, tmp_path: Path) -> None:
    server = _start(kind, tmp_path)
    try:
        http = httpx.Client(timeout=20)
        sid = initialize(http, server.url)

        # A client's own cancellation: no response is right (spec), and it is not a shutdown.
        cancelled = Outcome()
        t = threading.Thread(target=_post, args=(server.url, sid, call("sleepy", 99, seconds=60), cancelled))
        t.start()
        _wait_in_flight(server, 1)
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}
        assert http.post(server.url, json=note, headers=session_headers(sid)).status_code == 202
        t.join(10)
        assert cancelled.status == 202 and cancelled.text == "", (cancelled.status, cancelled.text)

        calls: dict[int, tuple[dict[str, Any], str]] = {}
        for rid in (1, 2, 3):  # JSON replies that finish within the grace
            calls[rid] = (call("sleepy", rid, seconds=2.0), "result")
        for rid in (4, 5):  # SSE replies (progress first) that finish within the grace
            calls[rid] = (call("slow_count", rid, progress=True, steps=6, delay=0.3), "result")
        for rid in (6, 7):  # JSON replies that outlive it: 503 + Retry-After before anything is sent
            calls[rid] = (call("sleepy", rid, seconds=60), "503")
        for rid in (8, 9):  # SSE replies that outlive it: a retryable error event for the request
            calls[rid] = (call("sleepy", rid, progress=True, seconds=60), "sse-error")
        calls[11] = (call("sync_sleep", 11, seconds=SYNC_SECONDS), "sync-result")
        outcomes = {rid: Outcome() for rid in calls}
        threads = [
            threading.Thread(target=_post, args=(server.url, sid, body, outcomes[rid]))
            for rid, (body, _) in calls.items()
        ]
        stream, opened = Outcome(), threading.Event()
        threads.append(threading.Thread(target=_get_stream, args=(server.url, sid, stream, opened)))
        # A batch (2025-03-26) whose calls outlive the grace: one 503 for the batch.
        batch_sid = initialize(http, server.url, "2025-03-26")
        batch = Outcome()
        batch_body = [call("sleepy", 21, seconds=60), call("sleepy", 22, seconds=60)]
        threads.append(threading.Thread(target=_post, args=(server.url, batch_sid, batch_body, batch, "2025-03-26")))
        listen, listening = Outcome(), threading.Event()
        threads.append(threading.Thread(target=_listen_stream, args=(server.url, listen, listening)))
        for thread in threads:
            thread.start()
        assert opened.wait(10) and stream.status == 200
        assert listening.wait(10) and listen.status == 200
        _wait_in_flight(server, len(calls) + 2)

        # Two more clients, each with a connection open to the worker before the signal.
        prober, streamer = httpx.Client(timeout=20), httpx.Client(timeout=20)
        assert prober.get(f"{server.base}/mcp/health").status_code == 200
        assert streamer.post(
            server.url, json={"jsonrpc": "2.0", "id": 60, "method": "ping"}, headers=session_headers(sid)
        )
        sigterm = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)

        # Draining: the worker has stopped listening, so a new connection is refused (a proxy sends the
        # request to another worker, nothing of it sent); a request on a connection already open is
        # served, with Connection: close; the probe says "draining"; notifications are still taken.
        with pytest.raises(httpx.ConnectError):
            httpx.post(server.url, json=call("echo", 51, text="new"), headers=session_headers(sid), timeout=5)
        late = http.post(server.url, json=call("echo", 50, text="late"), headers=session_headers(sid))
        assert late.status_code == 200 and late.json()["result"]["content"][0]["text"] == "late", late.text
        assert late.headers.get("connection") == "close"
        probe = prober.get(f"{server.base}/mcp/health")
        assert probe.status_code == 503 and probe.json()["status"] == "draining", probe.text
        assert probe.headers["retry-after"] == "1"
        # A GET stream opened now is served and ends at once: the client resumes it on another worker.
        started = time.monotonic()
        get_headers = {**session_headers(sid), "accept": "text/event-stream"}
        with streamer.stream("GET", server.url, headers=get_headers) as opened_late:
            assert opened_late.status_code == 200
            assert opened_late.headers.get("connection") == "close"
            assert b"id: g" in opened_late.read()  # its priming event: resumable elsewhere
        assert time.monotonic() - started < 2

        for thread in threads:
            thread.join(GRACE + EXIT_BOUND + 10)
        exit_code = server.process.wait(GRACE + EXIT_BOUND + 10)
        exited = time.monotonic() - sigterm

        # The GET stream ended at the start of the drain, not at the end of the grace.
        assert stream.ended_at is not None and stream.ended_at - sigterm < 1.5, stream.ended_at - sigterm
        assert listen.ended_at is not None and listen.ended_at - sigterm < 1.5, listen.ended_at - sigterm
        assert stream.failure is None and listen.failure is None, (stream.failure, listen.failure)
        for rid, (_, expected) in calls.items():
            out = outcomes[rid]
            assert out.failure is None, (rid, out.failure)
            assert out.status not in (202, 500), (rid, out.status, out.text)
            message = _final(out, rid)
            if expected == "result":
                assert out.status == 200 and "result" in message, (rid, out.text)
                assert out.ended_at is not None and out.ended_at - sigterm < GRACE, rid
            elif expected == "sync-result":
                assert out.status == 200 and message["result"]["content"][0]["text"].startswith("slept"), out.text
            elif expected == "503":
                assert out.status == 503 and out.headers is not None, (rid, out.status)
                assert out.headers["retry-after"] == "1"
                _assert_retryable(message)
            else:
                assert out.status == 200 and out.headers is not None
                assert out.headers["content-type"].startswith("text/event-stream")
                _assert_retryable(message)
        assert batch.status == 503 and batch.headers is not None and batch.headers["retry-after"] == "1", batch.text
        _assert_retryable(json.loads(batch.text))
        assert exited < SYNC_SECONDS + EXIT_BOUND, f"{kind} took {exited:.1f}s to exit after SIGTERM"
        assert exit_code in (0, -signal.SIGTERM), exit_code
        log = server.log.read_text(errors="replace")
        assert not (bad := log_problem(log, "Traceback", " 500 ")), bad
        print(f"{kind}: exited {exited:.2f}s after SIGTERM (grace {GRACE}s), exit code {exit_code}")
    finally:
        server.stop()


class Traffic:
    """Steady calls through nginx from ``clients`` threads, each with its own keep-alive connection."""

    def __init__(self, url: str, sid: str, clients: int = 4) -> None:
        self.url, self.sid = url, sid
        self.results: list[tuple[float, int, str]] = []  # (when answered, HTTP status, what came back)
        self.latencies: list[tuple[float, float]] = []  # (when sent, seconds to the answer)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(clients)]
        for thread in self._threads:
            thread.start()

    def _run(self, n: int) -> None:
        rid = n * 1_000_000
        with httpx.Client(timeout=httpx.Timeout(60)) as client:
            while not self._stop.is_set():
                rid += 1
                # An async tool and a sync one (the sync pool, a database connection), in turn.
                body = call("echo", rid, text=f"x{rid}") if rid % 2 else call("add", rid, a=rid, b=1)
                expect = f"x{rid}" if rid % 2 else str(rid + 1)
                sent = time.monotonic()
                try:
                    r = client.post(self.url, json=body, headers=session_headers(self.sid))
                    text = r.text
                    ok = r.status_code == 200 and expect in text and '"error"' not in text
                    outcome = (time.monotonic(), r.status_code, "ok" if ok else text[:300])
                except httpx.HTTPError as exc:
                    outcome = (time.monotonic(), 0, repr(exc))
                with self._lock:
                    self.results.append(outcome)
                    self.latencies.append((sent, outcome[0] - sent))

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def since(self, t: float) -> list[tuple[float, int, str]]:
        with self._lock:
            return [r for r in self.results if r[0] >= t]


@pytest.mark.parametrize("program", ["daphne", "uvicorn", "gunicorn"])
def test_sigterm_behind_nginx_loses_nothing(program: str, tmp_path: Path) -> None:
    """A rolling restart exactly as docs/deployment.md says: two workers started with its command for
    ``program`` (gunicorn: its uvicorn-worker command, one worker), behind its nginx block verbatim;
    one gets SIGTERM under steady traffic from four clients, with calls in flight on it.

    Not one client sees an error: no 503, no 502, no empty 202, no dropped connection. The calls in
    flight on the stopping worker finish with their results, and the worker exits on its own.
    """
    from .ops import start_nginx

    env = server_env(tmp_path, settings="tests.production.ops_settings", MCP_SHUTDOWN_GRACE="10")
    app = "tests.production.asgi:application"  # development mode behind the guide's proxy headers
    first = start_documented(program, env, tmp_path / "w1.log", app)
    second = start_documented(program, env, tmp_path / "w2.log", app, migrate=False)
    nginx, port = start_nginx(tmp_path, [first.port, second.port])
    url = f"http://127.0.0.1:{port}/mcp/"
    traffic: Traffic | None = None
    try:
        http = httpx.Client(timeout=30)
        sid = initialize(http, url)
        traffic = Traffic(url, sid)
        time.sleep(1.0)  # every client has a kept-alive connection to each worker through nginx
        slow = {rid: Outcome() for rid in range(1, 5)}
        threads = [
            threading.Thread(target=_post, args=(url, sid, call("sleepy", rid, seconds=2.5), out))
            for rid, out in slow.items()
        ]
        for thread in threads:
            thread.start()
        _wait_in_flight(first, 1)  # round robin: some of them run on the worker about to stop

        sigterm = time.monotonic()
        first.process.send_signal(signal.SIGTERM)
        exit_code = first.process.wait(30)
        exited = time.monotonic() - sigterm
        time.sleep(1.0)  # and on, past the worker's exit
        traffic.stop()
        for thread in threads:
            thread.join(30)
        during = traffic.since(sigterm)
        failed = [r for r in traffic.results if r[2] != "ok"]
        for n, out in slow.items():
            assert out.status == 200 and _final(out, n)["result"]["content"][0]["text"] == "woke up", out.text
        log = first.log.read_text(errors="replace")
        print(
            f"\n[{program} behind nginx] {len(during)} calls from SIGTERM to 1 s after the worker's exit "
            f"({exited:.1f} s), {len(traffic.results)} in all: {len(failed)} failed; exit code {exit_code}"
        )
        assert failed == [], failed[:5]
        assert len(during) >= 50, "not steady traffic"
        assert exit_code in (0, -signal.SIGTERM), exit_code
        for server in (first, second):
            text = server.log.read_text(errors="replace")
            assert not (bad := log_problem(text, " 500 ", "Traceback")), bad
        assert '" 503 ' not in log, "the stopping worker refused calls"
    finally:
        if traffic is not None:
            traffic.stop()
        nginx.terminate()
        nginx.wait(10)
        first.stop()
        second.stop()


def _children(pid: int) -> set[int]:
    """The live child processes of ``pid`` (gunicorn's workers), from /proc."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return set()
    return {int(p) for p in text.split()}


def test_gunicorn_reload_behind_nginx_loses_nothing(tmp_path: Path) -> None:
    """WSGI mode as docs/deployment.md serves it: its gunicorn command (two sync workers) behind its nginx
    block verbatim; ``kill -HUP`` of the master under steady traffic from four clients.

    gunicorn starts new workers and stops the old ones gracefully: not one call fails.
    """
    from .ops import start_nginx

    env = server_env(tmp_path, settings="tests.settings.settings_wsgi")
    server = start_documented(
        "gunicorn", env, tmp_path / "gunicorn.log", "tests.production.wsgi:application", workers=2
    )
    nginx, port = start_nginx(tmp_path, [server.port])
    url = f"http://127.0.0.1:{port}/mcp/"
    traffic: Traffic | None = None
    try:
        http = httpx.Client(timeout=30)
        sid = initialize(http, url)
        deadline = time.monotonic() + 20
        while len(old := _children(server.process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(old) == 2, old
        traffic = Traffic(url, sid)
        time.sleep(1.0)
        hup = time.monotonic()
        server.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # new workers up, the old ones gone
            now = _children(server.process.pid)
            if len(now) == 2 and not now & old:
                break
            time.sleep(0.05)
        reloaded = time.monotonic() - hup
        assert len(now) == 2 and not now & old, (old, now)
        time.sleep(1.0)  # and on, on the new workers
        traffic.stop()
        during = traffic.since(hup)
        failed = [r for r in traffic.results if r[2] != "ok"]
        spanning = [d for t, d in traffic.latencies if t < hup + reloaded and t + d > hup]
        print(
            f"\n[gunicorn -HUP behind nginx] {len(during)} calls answered from the HUP to 1 s after the reload "
            f"({reloaded:.1f} s), {len(traffic.results)} in all: {len(failed)} failed; {len(spanning)} were under "
            f"way during the reload, the slowest answered in {max(spanning):.2f} s (new workers loading the app)"
        )
        after = [r for r in traffic.results if r[0] > hup + reloaded]
        assert failed == [], failed[:5]
        assert len(spanning) >= 4 and len(after) >= 4, "no traffic through the reload"
        assert server.process.poll() is None  # the master serves on
        text = server.log.read_text(errors="replace")
        assert not (bad := log_problem(text, "Traceback")), bad
    finally:
        if traffic is not None:
            traffic.stop()
        nginx.terminate()
        nginx.wait(10)
        server.stop()
