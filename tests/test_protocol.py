"""The pure protocol layer: envelopes, negotiation, shaping per revision, headers, templates, cursors."""

from __future__ import annotations

import pytest

from django_mcp.protocol import cursor, headers, jsonrpc
from django_mcp.protocol.jsonrpc import ProtocolError
from django_mcp.protocol.shaping import shape_for
from django_mcp.protocol.uri_template import URITemplate
from django_mcp.protocol.validation import validate_request
from django_mcp.protocol.versions import negotiate

TOOL_RESULT = {
    "content": [
        {"type": "text", "text": "hi"},
        {"type": "resource_link", "uri": "x://a", "name": "a"},
        {"type": "audio", "data": "", "mimeType": "audio/wav"},
    ],
    "structuredContent": {"a": 1},
    "isError": False,
}


def test_classify() -> None:
    assert isinstance(jsonrpc.classify({"jsonrpc": "2.0", "id": 1, "method": "ping"}), jsonrpc.Request)
    assert isinstance(jsonrpc.classify({"jsonrpc": "2.0", "method": "x"}), jsonrpc.Notification)
    assert isinstance(jsonrpc.classify({"jsonrpc": "2.0", "id": "a", "result": {}}), jsonrpc.Response)
    for bad in (
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1}},
        {"jsonrpc": "2.0", "id": 1.5, "method": "x"},
    ):
        with pytest.raises(ProtocolError) as exc:
            jsonrpc.classify(bad)
        assert exc.value.code == -32600


def test_loads_rejects_bad_utf8_and_json() -> None:
    for body in (b"\xff", b"{", b""):
        with pytest.raises(ProtocolError) as exc:
            jsonrpc.loads(body)
        assert exc.value.code == -32700


def test_negotiate() -> None:
    assert negotiate("2024-11-05") == "2024-11-05"
    assert negotiate("2026-07-28") == "2025-11-25"  # never answer initialize with a stateless revision
    assert negotiate(None) == "2025-11-25"


@pytest.mark.parametrize(
    ("revision", "kinds", "structured"),
    [
        ("2024-11-05", ["text"], False),
        ("2025-03-26", ["text", "audio"], False),
        ("2025-06-18", ["text", "resource_link", "audio"], True),
        ("2025-11-25", ["text", "resource_link", "audio"], True),
    ],
)
def test_tool_result_shaped_per_revision(revision: str, kinds: list[str], structured: bool) -> None:
    shaped = shape_for("tools/call", revision, dict(TOOL_RESULT))
    assert [c["type"] for c in shaped["content"]] == kinds
    assert ("structuredContent" in shaped) is structured


def test_tool_definition_shaped() -> None:
    listing = {
        "tools": [
            {
                "name": "t",
                "title": "T",
                "inputSchema": {"type": "object", "properties": {"x": {"type": "string", "title": "kept"}}},
                "outputSchema": {"type": "object"},
                "icons": [{"src": "https://example.com/i.png"}],
                "annotations": {"readOnlyHint": True},
            }
        ],
        "ttlMs": 0,
    }
    old = shape_for("tools/list", "2024-11-05", listing)["tools"][0]
    assert old == {"name": "t", "inputSchema": listing["tools"][0]["inputSchema"]}
    mid = shape_for("tools/list", "2025-06-18", listing)["tools"][0]
    assert "title" in mid and "outputSchema" in mid and "icons" not in mid
    new = shape_for("tools/list", "2025-11-25", listing)
    assert "icons" in new["tools"][0] and "ttlMs" not in new


def test_validation_gates_methods_by_revision() -> None:
    validate_request(
        "server/discover",
        "2026-07-28",
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    )
    with pytest.raises(ProtocolError) as exc:
        validate_request("server/discover", "2025-11-25", {})
    assert exc.value.code == -32601


def test_header_value_decoding() -> None:
    assert headers.decode_value("=?base64?SGVsbG8=?=") == "Hello"
    assert headers.decode_value("  plain\t") == "plain"
    assert headers.decode_value("=?base64?SGVsbG8=") == "=?base64?SGVsbG8="  # no suffix: literal
    for bad in ("=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "caf\u00e9"):
        with pytest.raises(ProtocolError) as exc:
            headers.decode_value(bad)
        assert exc.value.code == -32020


def test_param_headers() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
        },
    }
    got = {"mcp-param-region": "eu", "mcp-param-n": "42"}
    headers.check_params(schema, {"region": "eu", "n": 42}, got.get)
    with pytest.raises(ProtocolError):
        headers.check_params(schema, {"region": "us", "n": 42}, got.get)
    with pytest.raises(ProtocolError):
        headers.check_params(schema, {"region": "eu", "n": 42}, {"mcp-param-n": "42"}.get)
    headers.check_params(schema, {"n": 42}, {"mcp-param-n": "42.0"}.get)


def test_uri_template() -> None:
    t = URITemplate("test://items/{item_id}/{part}")
    assert t.variables == ["item_id", "part"]
    assert t.match("test://items/7/a%20b") == {"item_id": "7", "part": "a b"}
    assert t.match("test://items/7") is None
    assert t.expand(item_id="a/b", part="x") == "test://items/a%2Fb/x"


def test_cursor_roundtrip_and_tampering() -> None:
    c = cursor.encode(100, "tools")
    assert cursor.decode(c, "tools") == 100
    for bad in ("!!", cursor.encode(100, "prompts"), cursor.encode(-1, "tools")):
        with pytest.raises(ProtocolError):
            cursor.decode(bad, "tools")


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])
def test_fast_validation_agrees_with_the_wire_types(revision: str) -> None:
    """The shortcut for everyday shapes never accepts what mcp-types would refuse, nor the reverse."""
    from mcp_types import methods
    from pydantic import ValidationError

    shapes: list[tuple[str, dict[str, object] | None]] = [
        ("tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
        ("tools/call", {"name": "echo"}),
        ("tools/call", {"name": "echo", "arguments": None}),
        ("tools/call", {"name": 3, "arguments": {}}),
        ("tools/call", {"name": "echo", "arguments": ["x"]}),
        ("tools/call", {"arguments": {}}),
        ("tools/call", None),
        ("tools/call", {"name": "echo", "_meta": {"progressToken": 1.5}}),
        ("tools/list", None),
        ("tools/list", {}),
        ("tools/list", {"cursor": "abc"}),
        ("tools/list", {"cursor": 7}),
        ("prompts/list", {"cursor": None}),
        ("resources/templates/list", {"cursor": ["x"]}),
        ("ping", None),
        ("ping", {}),
    ]
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    bad_meta = {**meta, "io.modelcontextprotocol/clientInfo": {"name": "c"}}
    for m in (meta, bad_meta):
        shapes += [
            ("tools/call", {"name": "echo", "arguments": {"text": "hi"}, "_meta": m}),
            ("tools/call", {"name": 3, "_meta": m}),
            ("tools/call", {"name": "echo", "requestState": 5, "_meta": m}),
            ("tools/list", {"_meta": m}),
            ("tools/list", {"cursor": 7, "_meta": m}),
            ("prompts/list", {"cursor": "x", "_meta": m}),
        ]
    # Twice: the second round answers valid stateless ``_meta`` from the cache.
    for method, params in shapes + shapes:
        try:
            methods.validate_client_request(method, revision, params)
            expected = None
        except ValidationError:
            expected = jsonrpc.INVALID_PARAMS
        except KeyError:
            expected = jsonrpc.METHOD_NOT_FOUND
        try:
            validate_request(method, revision, params)
            got = None
        except ProtocolError as exc:
            got = exc.code
        assert got == expected, (method, params)


def test_the_shapes_are_generated_from_the_schemas_in_the_repository() -> None:
    """django_mcp/protocol/_shapes.py is what scripts/gen_shapes.py makes of scripts/spec/<revision>/schema.json."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    made = subprocess.run(
        [sys.executable, "scripts/gen_shapes.py"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    assert made == (root / "django_mcp" / "protocol" / "_shapes.py").read_text()
    from django_mcp.protocol.versions import ALL_REVISIONS

    assert sorted(p.name for p in (root / "scripts" / "spec").iterdir()) == sorted(ALL_REVISIONS)
