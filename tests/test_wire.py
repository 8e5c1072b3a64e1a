"""``exceptions.to_wire``: the one mapping from an exception to what every transport sends.

The transports' own tests (test_bad_input, test_wsgi, test_stdio, test_door, test_middleware)
check the answers end to end; these pin the mapping itself, one kind of exception each.
"""

from __future__ import annotations

import logging

import pytest
from django.db import OperationalError

from django_mcp.auth.challenge import Challenge
from django_mcp.exceptions import (
    BadRequest,
    DatabaseNotMigrated,
    MCPError,
    MethodNotAllowed,
    RateLimited,
    Refused,
    SessionNotFound,
    Unavailable,
    to_wire,
)
from django_mcp.protocol import jsonrpc
from django_mcp.protocol.jsonrpc import ProtocolError


def test_a_refusal_answers_its_status_headers_and_error() -> None:
    wire = to_wire(RateLimited("user", 12), request_id=3)
    assert (wire.status, wire.headers) == (429, [(b"retry-after", b"12")])
    assert wire.message["id"] == 3 and wire.message["error"]["code"] == -32029
    assert wire.message["error"]["data"] == {
        "reason": "rate_limited",
        "retryable": True,
        "retryAfter": 12,
        "limit": "user",
    }


def test_one_instance_is_a_refusal_without_a_subclass() -> None:
    refused = Refused("Closed", code=-32000, status=503, headers=[(b"retry-after", b"600")])
    wire = to_wire(refused, request_id="a")
    assert wire == (
        503,
        [(b"retry-after", b"600")],
        {"jsonrpc": "2.0", "id": "a", "error": {"code": -32000, "message": "Closed"}},
    )
    assert to_wire(Refused()).status == 403 and to_wire(Refused()).message["error"]["message"] == "Forbidden"


def test_the_id_known_where_it_was_raised_wins() -> None:
    assert to_wire(SessionNotFound(request_id=7), request_id=None).message["id"] == 7
    assert to_wire(SessionNotFound(request_id=7), request_id=8).message["id"] == 7
    assert to_wire(SessionNotFound(), request_id=8).message["id"] == 8


def test_the_endpoint_refusals_keep_their_statuses() -> None:
    assert to_wire(BadRequest("Bad Request: x")).status == 400
    assert to_wire(SessionNotFound()).status == 404
    wire = to_wire(MethodNotAllowed("Method PUT not allowed", headers=[(b"allow", b"GET, POST, DELETE")]))
    assert (wire.status, wire.headers) == (405, [(b"allow", b"GET, POST, DELETE")])
    # A protocol error found before the request ran: its status follows its code.
    assert Refused.of(ProtocolError(jsonrpc.METHOD_NOT_FOUND, "no")).status == 404
    assert Refused.of(ProtocolError(jsonrpc.HEADER_MISMATCH, "no")).status == 400
    assert Refused.of(ProtocolError(jsonrpc.PARSE_ERROR, "no")).code == jsonrpc.PARSE_ERROR


def test_a_bearer_challenge_is_a_refusal_with_its_header() -> None:
    header = 'Bearer error="invalid_token", error_description="expired"'
    wire = to_wire(Challenge(401, "expired", header, "invalid_token"), request_id=1)
    assert (wire.status, wire.headers) == (401, [(b"www-authenticate", header.encode())])
    assert wire.message["error"] == {
        "code": -32600,
        "message": "Unauthorized: expired",
        "data": {"error": "invalid_token"},
    }


def test_an_unavailable_backend_is_503_with_retry_after_and_a_lost_database_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wire = to_wire(Unavailable(retry_after=4))
    assert (wire.status, wire.headers) == (503, [(b"retry-after", b"4")])
    with caplog.at_level(logging.WARNING, "django_mcp"):
        lost = to_wire(OperationalError("server closed the connection unexpectedly"))
    assert lost.status == 503 and lost.message["error"]["data"]["reason"] == "database_unavailable"
    assert "Database unavailable" in caplog.text
    # Not migrated: retrying does not help, so no Retry-After.
    assert to_wire(DatabaseNotMigrated()).headers == []


def test_a_bug_is_a_logged_500_that_tells_the_client_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, "django_mcp"):
        wire = to_wire(RuntimeError("secret detail"), request_id=2)
    assert (wire.status, wire.headers) == (500, [])
    assert wire.message == {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "Internal error"}}
    assert "secret detail" not in str(wire.message) and "MCP endpoint failed" in caplog.text


def test_another_mcp_error_keeps_its_error() -> None:
    wire = to_wire(MCPError("Not on Sundays", {"why": "sunday"}, code=-32001), request_id=1)
    assert wire.status == 500 and wire.message["error"] == {
        "code": -32001,
        "message": "Not on Sundays",
        "data": {"why": "sunday"},
    }
    assert to_wire(ProtocolError(jsonrpc.INVALID_PARAMS, "bad")).status == 400
