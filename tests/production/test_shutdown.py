"""SIGTERM on a real daphne and a real uvicorn worker with calls in flight (issue 9 §2 e).

Every call in flight either finishes within ``SHUTDOWN_GRACE`` or gets an error it
can retry: HTTP 503 with ``Retry-After`` when nothing was sent yet (one for a whole
batch), a JSON-RPC error event (``data.retryable``) on an SSE response that had
started. Never an empty 202, never a 500. Meanwhile new requests get 503, the health
probe says "draining", open GET and ``subscriptions/listen`` streams end at once, a
client's own cancellation still gets no response, and the process exits within the
grace plus a bound. A sync tool still running at the end of the grace keeps its real
answer: its thread cannot be stopped, so "retry" would be a lie inviting a duplicate.
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

from tests.conftest import LiveServer, server_env, start_server

from .ops import call, health, initialize, session_headers, sse_messages, start_gunicorn, start_uvicorn

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
    env = server_env(tmp, settings="tests.production.ops_settings", MCP_SHUTDOWN_GRACE=str(GRACE))
    if kind == "daphne":
        return start_server(env, tmp / "server.log")
    if kind == "gunicorn":  # the master forwards SIGTERM to its uvicorn worker, which drains as uvicorn does
        return start_gunicorn(env, tmp / "server.log", "--graceful-timeout", str(int(GRACE) + 10))
    # uvicorn's own drain stays as a backstop behind ours (it starts once ours hands over).
    return start_uvicorn(env, tmp / "server.log", "--timeout-graceful-shutdown", "10")


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

        sigterm = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)

        # Draining: new work is refused retryably, the probe says so, notifications are still taken.
        refused = http.post(server.url, json=call("echo", 50, text="late"), headers=session_headers(sid))
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == "1" and refused.headers.get("connection") == "close"
        _assert_retryable(refused.json())
        assert refused.json()["id"] == 50
        probe = health(server)
        assert probe.status_code == 503 and probe.json()["status"] == "draining", probe.text
        assert probe.headers["retry-after"] == "1"
        new_stream = httpx.get(server.url, headers={**session_headers(sid), "accept": "text/event-stream"})
        assert new_stream.status_code == 503

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
        assert "Traceback" not in log and " 500 " not in log, log
        print(f"{kind}: exited {exited:.2f}s after SIGTERM (grace {GRACE}s), exit code {exit_code}")
    finally:
        server.stop()


def test_sigterm_behind_nginx_loses_nothing(tmp_path: Path) -> None:
    """Two daphne workers behind nginx (``proxy_next_upstream ... http_503``): one gets SIGTERM mid-traffic.

    Work the draining worker refuses goes to the other worker, calls in flight finish, and
    the client sees no error at all: no 503, no 502, no empty 202.
    """
    from .ops import start_nginx

    env = server_env(tmp_path, settings="tests.production.ops_settings", MCP_SHUTDOWN_GRACE=str(GRACE))
    first = start_server(env, tmp_path / "w1.log")
    second = start_server(env, tmp_path / "w2.log", migrate=False)
    nginx, port = start_nginx(tmp_path, [first.port, second.port])
    url = f"http://127.0.0.1:{port}/mcp/"
    try:
        http = httpx.Client(timeout=30)
        sid = initialize(http, url)
        slow = {rid: Outcome() for rid in range(1, 5)}
        threads = [
            threading.Thread(target=_post, args=(url, sid, call("sleepy", rid, seconds=2.5), out))
            for rid, out in slow.items()
        ]
        for thread in threads:
            thread.start()
        _wait_in_flight(first, 1)  # round robin: some of them run on the worker about to stop

        statuses: list[int] = []
        sigterm = time.monotonic()
        first.process.send_signal(signal.SIGTERM)
        rid = 100
        while time.monotonic() - sigterm < GRACE + 2:  # through the drain and past the worker's exit
            rid += 1
            r = http.post(url, json=call("echo", rid, text="x"), headers=session_headers(sid))
            statuses.append(r.status_code)
            assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "x", (r.status_code, r.text)
        for thread in threads:
            thread.join(GRACE + 10)
        for n, out in slow.items():
            assert out.status == 200 and _final(out, n)["result"]["content"][0]["text"] == "woke up", out.text
        exit_code = first.process.wait(GRACE + EXIT_BOUND)
        refused = first.log.read_text(errors="replace").count('" 503 ')
        print(f"nginx: {len(statuses)} calls during the drain, all 200; the draining worker refused {refused}")
        assert exit_code == 0 and refused > 0, (exit_code, refused)
        for server in (first, second):
            assert " 500 " not in server.log.read_text(errors="replace")
    finally:
        nginx.terminate()
        nginx.wait(10)
        first.stop()
        second.stop()
