"""The documented nginx recipe (docs/deployment.md) in front of two uvicorn workers:
SSE passes unbuffered, a slowloris client is cut off by nginx, the broadcast log stays bounded."""

from __future__ import annotations

import itertools
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.production.harness import ACCEPT, Client, Deployment, nginx_config
from tests.support.servers import log_problem

pytestmark = [pytest.mark.production, pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    d = Deployment(tmp_path_factory.mktemp("nginx"), server="uvicorn", env_extra={"MCP_BROADCAST_MAX_EVENTS": "20"})
    d.start()
    yield d
    d.stop()
    assert not (bad := log_problem(d.logs(), "Traceback")), bad


def test_config_is_the_documented_one(tmp_path: Path) -> None:
    conf = nginx_config([1111, 2222], 3333, tmp_path)
    for line in ("proxy_buffering off;", "client_header_timeout 10s;", "proxy_read_timeout 3600s;"):
        assert line in conf
    assert "server 127.0.0.1:1111 " in conf and "server 127.0.0.1:2222 " in conf and "listen 127.0.0.1:3333;" in conf


def test_sse_events_are_not_buffered(deployment: Deployment) -> None:
    c = Client(deployment.url)
    c.initialize()
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "slow_count", "arguments": {"steps": 4, "delay": 0.5}, "_meta": {"progressToken": 1}},
    }
    headers = {**c.headers(), "accept": ACCEPT, "content-type": "application/json"}
    arrivals: list[float] = []
    start = time.monotonic()
    with httpx.Client(timeout=20) as http, http.stream("POST", deployment.url, json=body, headers=headers) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data:") and line[5:].strip():
                arrivals.append(time.monotonic() - start)
                if json.loads(line[5:]).get("id") == 3:
                    break
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    print(f"\n[nginx] SSE arrivals {[round(a, 2) for a in arrivals]}")
    assert len(arrivals) == 5 and min(gaps) > 0.3  # one by one, as written (buffered: all at the end)


def test_slowloris_is_closed_by_nginx(deployment: Deployment) -> None:
    """A client that trickles its request header is cut off at client_header_timeout (10 s)."""
    assert deployment.nginx is not None
    sock = socket.create_connection(("127.0.0.1", deployment.nginx.port), timeout=2)
    start = time.monotonic()
    closed_after = None
    try:
        sock.sendall(b"GET /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        for i in range(30):
            try:
                sock.sendall(f"X-Slow-{i}: 1\r\n".encode())
            except OSError:
                closed_after = time.monotonic() - start
                break
            try:
                if sock.recv(1024) == b"":
                    closed_after = time.monotonic() - start
                    break
            except TimeoutError:
                continue  # still open: nothing to read within 2 s
            except OSError:
                closed_after = time.monotonic() - start
                break
        # Meanwhile everyone else is served.
        assert Client(deployment.url).initialize()
    finally:
        sock.close()
    print(f"\n[nginx] slowloris connection closed after {closed_after and round(closed_after, 1)} s")
    assert closed_after is not None and 9 <= closed_after <= 14


def test_broadcast_log_is_capped(deployment: Deployment) -> None:
    c = Client(deployment.url)
    c.initialize()
    for i in range(20):  # 40 broadcasts (list_changed + resource_updated each)
        assert c.call("touch", uri=f"test://items/{i}").status_code == 200
    kept = deployment.redis_keys("*django_mcp:b:*")
    print(f"\n[nginx] broadcasts stored after 40: {len(kept)} (cap 20)")
    assert 0 < len(kept) <= 20
