"""The wire definitions of representative tools and prompts, pinned (inputSchema, outputSchema, descriptions).

Function tools (tests/testapp, tests/drfapp), DRF views and viewset actions, plain view tools and
the extra declarations of ``tests/support/pinned_tools.py``. Regenerate ``tests/support/pinned_schemas.json`` with
``MCP_PIN_WRITE=1`` only for an intended change of the wire form.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest

SNAPSHOT = Path(__file__).parent / "support" / "pinned_schemas.json"


def _servers() -> list[tuple[str, Any]]:
    from django_mcp import site
    from tests.support.pinned_tools import server

    return [("site", site), ("pinned", server)]


def _current() -> dict[str, Any]:

    out: dict[str, Any] = {}
    for prefix, srv in _servers():
        for name, tool in srv.tools.items():
            out[f"{prefix}/tool/{name}"] = tool.definition()
        for name, prompt in srv.prompts.items():
            out[f"{prefix}/prompt/{name}"] = prompt.definition()
    return _portable(json.loads(json.dumps(out, default=str)))


#: Integer bounds DRF takes from the database backend (``connection.ops.integer_field_range``):
#: SQLite's and PostgreSQL's differ (int64 against int32), so the pin leaves them out and runs on either.
_BACKEND_BOUNDS = ("minimum", "maximum", "format")
_BACKEND_MAXIMA = (2**31 - 1, 2**63 - 1)


def _portable(value: Any) -> Any:
    if isinstance(value, dict):
        from_backend = value.get("type") == "integer" and value.get("maximum") in _BACKEND_MAXIMA
        return {k: _portable(v) for k, v in value.items() if not (from_backend and k in _BACKEND_BOUNDS)}
    if isinstance(value, list):
        return [_portable(v) for v in value]
    return value


def test_definitions_are_pinned() -> None:
    current = _current()
    if os.environ.get("MCP_PIN_WRITE") == "1":
        SNAPSHOT.write_text(json.dumps(current, indent=1, ensure_ascii=False) + "\n")
        pytest.skip("snapshot written")
    pinned = json.loads(SNAPSHOT.read_text())
    from django_mcp.contrib.drf import DRFTool

    # The pins of DRF tools are drf-spectacular's descriptions: without it (the Django 6.0 pass runs DRF's own
    # inspector on purpose) they differ, and tests/test_drf_sdk_validation.py checks them on both.
    spectacular = importlib.util.find_spec("drf_spectacular") is not None
    drf = {f"{p}/tool/{n}" for p, srv in _servers() for n, t in srv.tools.items() if isinstance(t, DRFTool)}
    # Only what was pinned: tools other tests add later do not break this test.
    for key, definition in pinned.items():
        if key in drf and not spectacular:
            continue
        assert key in current, key
        assert json.dumps(current[key]) == json.dumps(definition), key  # key order too (properties)


def test_argument_parsing_is_pinned() -> None:
    """What the handlers receive: defaults filled in, DRF's unsent optionals marked, extras refused."""
    import pydantic

    from django_mcp import site
    from django_mcp.contrib.drf import UNSET
    from tests.support.pinned_tools import server

    assert site.tools["add"].parse_arguments({"a": 1, "b": "2"}) == {"a": 1, "b": 2}
    assert site.tools["count"].parse_arguments(None) == {"steps": 3}
    assert site.tools["item_partial_update"].parse_arguments({"pk": 3}) == {
        "pk": 3,
        "name": UNSET,
        "quantity": UNSET,
        "note": UNSET,
    }
    assert site.tools["item_label"].parse_arguments({"pk": "4"}) == {"pk": 4, "upper": False}
    got = server.tools["filtered_view"].parse_arguments({"shelf": 2, "code": "x"})
    assert got == {"shelf": 2, "code": "x", "query": "", "limit": 10, "tags": [], "since": None}
    assert server.tools["async_view"].parse_arguments({"note": "n"}) == {"note": "n", "count": 2}
    for tool, bad in ((site.tools["add"], {"a": 1, "b": 2, "c": 3}), (site.tools["item_retrieve"], {})):
        with pytest.raises(pydantic.ValidationError):
            tool.parse_arguments(bad)
    assert site.tools["count"].ctx_param == "ctx" and site.tools["add"].ctx_param is None
