"""The hot path: a known session costs no database query per request."""

from __future__ import annotations

from typing import Any

from tests.support.raw import Raw
from tests.support.servers import LiveServer


def queries(raw: Raw, headers: dict[str, str]) -> int:
    r = raw.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "queries"}}, headers)
    return int(r.json()["result"]["structuredContent"]["result"])


def test_known_session_costs_no_query(mcp_server: LiveServer, server_log: Any) -> None:
    raw = Raw(mcp_server)
    sid = raw.initialize()
    h = raw.session_headers(sid)
    before = queries(raw, h)
    for i in range(30):
        assert raw.post({"jsonrpc": "2.0", "id": i, "method": "ping"}, h).status_code == 200
        r = raw.post(
            {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}},
            h,
        )
        assert r.json()["result"]["content"][0]["text"] == "x"
    after = queries(raw, h)
    assert after - before == 1  # the counter's own increment: no SQL ran for 60 requests
    # The counter does see SQL: a new session is one INSERT (and an unknown id one lookup).
    raw.initialize()
    assert queries(raw, h) - after >= 2


def test_stateless_requests_cost_no_query(mcp_server: LiveServer) -> None:
    raw = Raw(mcp_server)
    sid = raw.initialize()
    h = raw.session_headers(sid)
    before = queries(raw, h)
    for i in range(20):
        assert raw.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}}, rid=i).status_code == 200
    assert queries(raw, h) - before == 1


def test_wsgi_headers_are_converted_once_per_name_and_the_names_kept_are_bounded() -> None:
    """WSGI mode turns ``META`` into the consumer's headers; each key's name is worked out once, and a
    client inventing header names cannot grow what is kept past ``MAX_HEADER_NAMES``."""
    from django.test import RequestFactory

    from django_mcp.transports import wsgi

    factory = RequestFactory()
    request = factory.post(
        "/mcp/",
        data=b"{}",
        content_type="application/json",
        HTTP_MCP_SESSION_ID="abc",
        HTTP_X_FORWARDED_PROTO="https",
    )
    request.META["CONTENT_LENGTH"] = ""  # no body length: left out, as the consumer never sees one
    request.META["HTTP_X_NUMBER"] = 7  # not a string (a WSGI server's own key): left out
    request.META["HTTP_COOKIE"] = ""  # an empty header is still a header
    want = {
        b"mcp-session-id": b"abc",
        b"x-forwarded-proto": b"https",
        b"content-type": b"application/json",
        b"cookie": b"",
    }
    assert wsgi._headers(request) == want
    assert wsgi._headers(request) == want  # the kept names give the same answer
    request.META["CONTENT_LENGTH"] = "2"
    assert wsgi._headers(request)[b"content-length"] == b"2"

    invented = {f"HTTP_X_INVENTED_{n}": str(n) for n in range(wsgi.MAX_HEADER_NAMES + 100)}
    request.META.update(invented)
    headers = wsgi._headers(request)
    assert all(headers[f"x-invented-{n}".encode()] == str(n).encode() for n in range(len(invented)))
    assert len(wsgi._header_names) <= wsgi.MAX_HEADER_NAMES
