"""Engine security over a real daphne: the batch cap and URI template values."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest

from django_mcp.protocol import jsonrpc
from django_mcp.protocol.jsonrpc import ProtocolError
from django_mcp.protocol.uri_template import URITemplate
from tests.support.raw import Raw, error_of
from tests.support.servers import LiveServer

BATCH_REV = "2025-03-26"


@pytest.fixture
def raw(mcp_server: LiveServer, server_log: Any) -> Iterator[Raw]:
    client = Raw(mcp_server)
    yield client
    client.http.close()


def _calls(tag: str, n: int) -> list[dict[str, Any]]:
    return [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "record", "arguments": {"tag": tag}}}
        for i in range(n)
    ]


def _recorded(raw: Raw, sid: str, tag: str) -> int:
    body = {
        "jsonrpc": "2.0",
        "id": "n",
        "method": "tools/call",
        "params": {"name": "recorded", "arguments": {"tag": tag}},
    }
    r = raw.post(body, raw.session_headers(sid, BATCH_REV))
    assert r.status_code == 200, r.text
    return int(json.loads(r.json()["result"]["content"][0]["text"])["result"])


# -- item 2: the batch cap -------------------------------------------------------------------------


def test_batch_over_the_cap_runs_nothing(raw: Raw) -> None:
    sid = raw.initialize(BATCH_REV)
    tag = secrets.token_hex(4)
    started = time.monotonic()
    r = raw.post(_calls(tag, 101), raw.session_headers(sid, BATCH_REV))
    refused_in = time.monotonic() - started
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert err["code"] == -32600
    assert "100" in err["message"] and "MAX_BATCH_SIZE" in err["message"]
    assert err["data"] == {"limit": "MAX_BATCH_SIZE", "max": 100, "received": 101}
    assert isinstance(r.json(), dict) and r.json().get("id") is None  # one error for the whole batch
    time.sleep(0.2)  # anything wrongly started in the background would have recorded by now
    assert _recorded(raw, sid, tag) == 0
    assert refused_in < 2

    r = raw.post(_calls(tag, 100), raw.session_headers(sid, BATCH_REV))
    assert r.status_code == 200, r.text
    replies = r.json()
    assert len(replies) == 100 and all(m["result"]["content"][0]["text"] == tag for m in replies)
    assert _recorded(raw, sid, tag) == 100


def test_notifications_count_toward_the_cap(raw: Raw) -> None:
    sid = raw.initialize(BATCH_REV)
    tag = secrets.token_hex(4)
    noise = [{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}] * 100
    r = raw.post([*_calls(tag, 1), *noise], raw.session_headers(sid, BATCH_REV))
    assert r.status_code == 400 and error_of(r)["data"]["received"] == 101
    assert _recorded(raw, sid, tag) == 0


def test_check_batch_unit() -> None:
    jsonrpc.check_batch([1] * 3, 3)
    for items, limit in (([], 3), ([1] * 4, 3)):
        with pytest.raises(ProtocolError) as got:
            jsonrpc.check_batch(items, limit)
        assert got.value.code == jsonrpc.INVALID_REQUEST


# -- item 4: URI template values -------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri",
    [
        "sec://echo/..%2F..%2Fetc%2Fpasswd",
        "sec://echo/a%2Fb",
        "sec://echo/a%2fb",
        "sec://echo/..",
        "sec://echo/%2E%2E",
        "sec://echo/a%5Cb",
        "sec://echo/a%00b",
        "sec://echo/a/b",
        "sec://echo/a?b=1",
        "sec://echo/a#frag",
    ],
)
def test_simple_value_never_spans_segments(uri: str) -> None:
    assert URITemplate("sec://echo/{name}").match(uri) is None


def test_simple_value_decoded() -> None:
    t = URITemplate("sec://echo/{name}")
    assert t.match("sec://echo/a%20b") == {"name": "a b"}
    assert t.match("sec://echo/a%3Fb%23c") == {"name": "a?b#c"}  # encoded ? and # are data
    assert t.match("sec://echo/...") == {"name": "..."}
    assert t.match(t.expand(name="x?y#z")) == {"name": "x?y#z"}


def test_reserved_value() -> None:
    t = URITemplate("sec://files/{+path}")
    assert t.variables == ["path"]
    assert t.match("sec://files/docs/a%20b.txt") == {"path": "docs/a b.txt"}
    assert t.match("sec://files/a%2Fb") == {"path": "a/b"}
    for bad in (
        "sec://files/../etc",
        "sec://files/a/%2E%2E/b",
        "sec://files/a/./b",
        "sec://files/a?x",
        "sec://files/a#x",
    ):
        assert t.match(bad) is None, bad
    assert t.expand(path="docs/a b?.txt") == "sec://files/docs/a%20b%3F.txt"
    assert t.match(t.expand(path="docs/a b?.txt")) == {"path": "docs/a b?.txt"}


def _read(raw: Raw, sid: str, uri: str) -> dict[str, Any]:
    r = raw.post(
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}, raw.session_headers(sid)
    )
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_template_values_through_the_server(raw: Raw) -> None:
    sid = raw.initialize()
    unknown = _read(raw, sid, "sec://nowhere/x")["error"]
    for uri in ("sec://echo/..%2F..%2Fetc%2Fpasswd", "sec://echo/%2E%2E", "sec://echo/a?b", "sec://files/../x"):
        err = _read(raw, sid, uri)["error"]
        assert err["code"] == unknown["code"] == -32002, err  # the same error as an unknown URI
        assert err["data"] == {"uri": uri}
    assert _read(raw, sid, "sec://echo/a%20b")["result"]["contents"][0]["text"] == "name=a b"
    assert _read(raw, sid, "sec://files/etc/pass%20wd")["result"]["contents"][0]["text"] == "path=etc/pass wd"


def test_legacy_sse_endpoint_takes_no_batch(raw: Raw, mcp_server: LiveServer) -> None:
    """The 2024-11-05 messages endpoint carries one message per POST: a batch is 400 and runs nothing."""
    from tests.support.sse import SSEReader

    stream = SSEReader("GET", mcp_server.url + "sse/", {"accept": "text/event-stream"})
    try:
        first = stream.next()
        assert first is not None and str(first[1]).startswith("/mcp/messages/?session_id=")
        endpoint = mcp_server.base + str(first[1])
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "old", "version": "1"},
            },
        }
        assert raw.http.post(endpoint, json=init).status_code == 202
        tag = secrets.token_hex(4)
        r = raw.http.post(endpoint, json=_calls(tag, 101))
        assert r.status_code == 400 and error_of(r)["code"] == -32600
        r = raw.http.post(endpoint, json=_calls(tag, 2))
        assert r.status_code == 400 and error_of(r)["code"] == -32600
    finally:
        stream.close()
    sid = raw.initialize(BATCH_REV)
    assert _recorded(raw, sid, tag) == 0
