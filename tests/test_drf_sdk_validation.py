"""A large DRF API (``tests.drfbig``) through the official SDK clients, which validate every result.

Every serializer field type, nested and related fields, a custom ``{"value", "label"}`` choice field,
a django-filter ``FilterSet`` with choices, ranges and booleans, pagination: each tool is called through
the Python SDK client and the TypeScript SDK client against a live daphne, and both check
``structuredContent`` against the published ``outputSchema``. Every published schema is checked as
JSON Schema 2020-12, every ``pattern`` compiled as ECMA-262 by Node. Runs with and without
drf-spectacular (the Django 6.x passes of the Makefile uninstall it).
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.support.callers import MODES, client, text
from tests.support.node import TS_CLIENT, need_ts, run_ts
from tests.support.seeds import CATALOG_SETUP as SETUP
from tests.support.servers import LiveServer, server_env, start_server

#: own_config: the SDK clients check result shapes, the same on any database and layer (pg-redis skips it).
pytestmark = pytest.mark.own_config


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("drfbig")
    server = start_server(server_env(tmp), tmp / "daphne.log", app="tests.settings.asgi_drfbig:application")
    server.manage("shell", "-c", SETUP)
    yield server
    server.stop()
    log = server.log.read_text(errors="replace")
    assert "Traceback" not in log and " 500 " not in log, log


def _schemas(tools: list[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for tool in tools:
        yield f"{tool.name}.inputSchema", tool.input_schema
        if tool.output_schema is not None:
            yield f"{tool.name}.outputSchema", tool.output_schema


def _walk(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, list):
        for item in schema:
            yield from _walk(item)
    elif isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from _walk(value)


EXPECTED_TOOLS = {
    "gadget_list", "gadget_create", "gadget_retrieve", "gadget_update", "gadget_partial_update", "gadget_destroy",
    "gadget_bump", "gadget_stats", "publisher_list", "publisher_create", "publisher_retrieve", "publisher_update",
    "publisher_partial_update", "publisher_destroy", "tag_list", "tag_retrieve",
}  # fmt: skip


async def test_published_schemas_are_json_schema_and_say_what_is_emitted(big: LiveServer) -> None:
    async with client(big.url, "legacy") as c:
        tools = (await c.list_tools()).tools
    assert {t.name for t in tools} == EXPECTED_TOOLS
    for where, schema in _schemas(tools):
        Draft202012Validator.check_schema(schema)  # raises SchemaError with the path
        for node in _walk(schema):
            for key in ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf"):
                if key in node:
                    assert isinstance(node[key], (int, float)) and not isinstance(node[key], bool), (where, node)
            assert "nullable" not in node and "$ref" not in node, (where, node)
            if "pattern" in node:
                assert "\\Z" not in node["pattern"] and "\\z" not in node["pattern"], (where, node)
                re.compile(node["pattern"])  # what the Python SDK's validator runs; Node's RegExp below
    by_name = {t.name: t for t in tools}
    listing = by_name["gadget_list"].input_schema["properties"]
    # The FilterSet's filters (django-filter 24-26), then search, ordering and the paginator's parameters.
    assert listing["status"]["enum"] == ["draft", "live", "retired"]
    assert listing["status"]["description"] == "Lifecycle state."
    assert listing["size"] == {"enum": [1, 2], "type": "integer"}
    assert listing["active"]["type"] == "boolean"
    assert listing["price_min"]["type"] == listing["price_max"]["type"] == "number"
    assert listing["made_on_after"] == {"type": "string", "format": "date"}
    assert listing["publisher"]["type"] == "integer"
    assert {"code", "made_at__gte", "made_at__lte", "name", "stock_min", "id__in"} <= set(listing)
    assert {"search", "ordering", "page", "page_size"} <= set(listing)
    out = by_name["gadget_retrieve"].output_schema
    assert out is not None
    props = out["properties"]
    assert props["price"]["type"] == "string"  # coerce_to_string: DRF emits "9.50"
    assert props["weight"]["type"] == ["number", "null"] and props["weight"]["maximum"] == 500
    assert props["stock"]["maximum"] == 10_000
    assert props["code"]["pattern"].startswith("^([A-Z]{2})") and props["code"]["pattern"].endswith("$")
    assert props["status_label"].get("type") != "string"  # emitted as {"value", "label"}
    count = by_name["gadget_list"].output_schema["properties"]["count"]  # type: ignore[index]
    assert count["type"] == "integer"
    if importlib.util.find_spec("drf_spectacular") is not None:
        assert props["status_label"]["type"] == "object"  # its extend_schema_field
        assert props["is_cheap"]["type"] == "boolean" and props["tag_slugs"]["items"]["type"] == "string"


def _calls() -> list[tuple[str, dict[str, Any]]]:
    """One call of every tool (two of the list tool), in an order where each finds what it needs."""
    return [
        ("gadget_list", {}),
        ("gadget_list", {"status": "live", "price_max": 100, "active": True, "ordering": "-price"}),
        ("gadget_list", {"publisher": 1, "search": "anv", "page_size": 2, "page": 1}),
        ("gadget_retrieve", {"pk": 1}),
        ("gadget_retrieve", {"pk": 2}),
        (
            "gadget_create",
            {
                "name": "Widget",
                "code": "ZZ-999",
                "slug": "widget",
                "price": "12.34",
                "weight": 2.5,
                "status": "draft",
                "size": 2,
                "colours": ["red", "blue"],
                "labels": ["a"],
                "specs": {"w": 3},
                "extra": {"k": None},
                "ip": "::1",
                "made_on": "2025-05-06",
                "opens": "08:00:00",
                "warranty": "3 00:00:00",
                "publisher": 2,
                "tags": [1],
                "email": "w@example.com",
                "website": "https://example.com/w",
            },
        ),
        (
            "gadget_update",
            {
                "pk": 3,
                "name": "Magnet 2",
                "code": "MG-002",
                "slug": "magnet",
                "price": 4,
                "status": "live",
            },
        ),
        ("gadget_partial_update", {"pk": 3, "stock": 7, "publisher": None}),
        ("gadget_bump", {"pk": 1, "by": 3}),
        ("gadget_stats", {}),
        ("publisher_list", {"country": "fr"}),
        ("publisher_create", {"name": "Initech", "country": "gb"}),
        ("publisher_retrieve", {"pk": 1}),
        ("publisher_update", {"pk": 2, "name": "Globex Corp", "country": "de"}),
        ("publisher_partial_update", {"pk": 2, "name": "Globex"}),
        ("tag_list", {}),
        ("tag_retrieve", {"pk": 2}),
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_every_tool_through_the_python_sdk(big: LiveServer, mode: str) -> None:
    big.manage("shell", "-c", SETUP)
    results: dict[str, list[Any]] = {}
    async with client(big.url, mode) as c:
        await c.list_tools()  # the client caches each tool's outputSchema and validates every result with it
        for name, args in _calls():
            result = await c.call_tool(name, args)  # the SDK raises on a result its outputSchema rejects
            assert not result.is_error, (name, text(result))
            results.setdefault(name, []).append(result.structured_content)
        destroyed = await c.call_tool("gadget_destroy", {"pk": 5})
        assert not destroyed.is_error and destroyed.structured_content is None
        gone = await c.call_tool("gadget_retrieve", {"pk": 5})
        assert gone.is_error and "No Gadget matches the given query." in text(gone)
        bad = await c.call_tool("gadget_create", {"name": "x", "code": "lower", "slug": "x", "price": -1})
        assert bad.is_error and "code: Two capitals, a dash, 3 digits." in text(bad)
        assert "price: Ensure this value is greater than or equal to 0." in text(bad)
        unknown = await c.call_tool("gadget_list", {"status": "sold"})
        assert unknown.is_error and "status: Select a valid choice." in text(unknown)

    first = results["gadget_list"][0]
    assert first["count"] == 5 and isinstance(first["count"], int)  # the retired one is not listed to anonymous
    assert [g["name"] for g in first["results"]] == ["Anvil", "Rocket", "Magnet"]  # 3 a page
    assert [g["name"] for g in results["gadget_list"][1]["results"]] == ["Anvil"]  # live, <= 100, active
    assert [g["name"] for g in results["gadget_list"][2]["results"]] == ["Anvil"]
    anvil = results["gadget_retrieve"][0]
    assert (
        anvil["price"] == "9.50"
        and anvil["weight"] == 12.25
        and anvil["status_label"]
        == {
            "value": "live",
            "label": "Live",
        }
    )
    assert anvil["publisher_detail"] == {"id": 1, "name": "Acme", "country": "fr", "gadget_count": 1}
    assert anvil["publisher_url"].endswith("/big/publishers/1/") and anvil["tags"] == [1, 2]
    assert anvil["is_cheap"] is True and anvil["tag_slugs"] == ["red-ish", "blue-ish"]
    assert anvil["manual"].endswith("manuals/anvil.pdf") and anvil["photo"] is None
    assert anvil["warranty"] == "365 00:00:00" and anvil["opens"] == "09:30:00" and anvil["made_on"] == "2025-01-02"
    assert anvil["extra"] == {"any": [1, "two"]} and anvil["specs"] == {"kg": 12} and "origin" not in anvil
    rocket = results["gadget_retrieve"][1]
    assert rocket["publisher"] is None and rocket["publisher_detail"] is None and rocket["publisher_url"] is None
    assert rocket["extra"] == [1, 2, 3] and rocket["weight"] is None
    created = results["gadget_create"][0]
    assert created["price"] == "12.34" and created["weight"] == 2.5 and sorted(created["colours"]) == ["blue", "red"]
    assert created["publisher"] == 2 and created["tags"] == [1] and created["ip"] == "::1"
    assert results["gadget_update"][0]["name"] == "Magnet 2" and results["gadget_update"][0]["price"] == "4.00"
    assert results["gadget_partial_update"][0]["stock"] == 7
    assert results["gadget_bump"][0]["stock"] == 7
    stats = results["gadget_stats"][0]
    assert stats["gadgets"] == 7 and stats["live"] == 3 and re.fullmatch(r"\d+\.\d\d", stats["average_price"])
    assert [p["name"] for p in results["publisher_list"][0]["result"]] == ["Acme"]
    assert results["publisher_create"][0]["name"] == "Initech"
    assert results["publisher_update"][0]["name"] == "Globex Corp"
    assert [t["slug"] for t in results["tag_list"][0]["result"]] == ["red-ish", "blue-ish"]
    assert results["tag_retrieve"][0] == {"id": 2, "slug": "blue-ish"}
    assert Decimal(anvil["price"]) == Decimal("9.50")


def test_every_tool_through_the_typescript_sdk(big: LiveServer, tmp_path: Path) -> None:
    need_ts(TS_CLIENT / "index.mjs")
    big.manage("shell", "-c", SETUP)
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps([*_calls(), ("gadget_destroy", {"pk": 6})]))
    steps = run_ts("drf_client.mjs", str(TS_CLIENT / "index.mjs"), big.url, str(calls))
    assert set(steps["tools"][0]) == EXPECTED_TOOLS
    patterns = steps["patterns"][0]
    assert patterns["count"] >= 3 and patterns["bad"] == []  # code, slug and the decimals' patterns at least
    for call in steps["call"]:
        assert "thrown" not in call and not call["isError"], json.dumps(call)[:3000]
    by_name: dict[str, list[Any]] = {}
    for call in steps["call"]:
        by_name.setdefault(call["name"], []).append(call["structured"])
    assert by_name["gadget_retrieve"][0]["status_label"] == {"value": "live", "label": "Live"}
    assert by_name["gadget_retrieve"][1]["publisher_detail"] is None
    assert by_name["gadget_list"][0]["count"] == 5
    assert by_name["gadget_create"][0]["price"] == "12.34"
    assert by_name["gadget_destroy"] == [None]


def test_default_annotations_satisfy_the_host_directory_check() -> None:
    """The hints DRF tools get from their HTTP method set all three W042 asks for."""
    from django_mcp.checks import host_directory_warnings
    from tests.drfbig.tools import server

    warnings = [w for w in host_directory_warnings(server) if w.id == "django_mcp.W042"]
    assert warnings == []
    assert server.tools["gadget_list"].annotations == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "openWorldHint": False,
    }


def test_filters_option_keeps_only_the_named_query_parameters() -> None:
    from django_mcp.contrib.drf import drf_tool
    from tests.drfbig.views import GadgetViewSet

    everything = drf_tool(GadgetViewSet, action="list", basename="gadget")
    assert {"status", "price_min", "id__in", "search", "page"} <= set(everything.input_schema["properties"])
    pruned = drf_tool(GadgetViewSet, action="list", basename="gadget", filters=["status", "search"])
    assert set(pruned.input_schema["properties"]) == {"status", "search", "page", "page_size"}  # paging stays
    assert pruned.query_params == ["status", "search", "page", "page_size"]
