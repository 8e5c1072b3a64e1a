"""The Server Card and the AI Catalog (``django_mcp.discovery``), per the experimental server-card draft.

The draft: modelcontextprotocol/experimental-ext-server-card at 8924e08 (2026-07-24), SEP-2127. Its
``schema.json`` is not vendored; ``assert_card`` checks what it requires of a ``ServerCard``
(``$schema``, a reverse-DNS ``name`` of 3-200 characters, ``version`` of at most 255, a
``description`` of 1-100, a ``title`` of 1-100, remotes of type ``streamable-http`` or ``sse``
with an ``http(s)://`` URL, ``_meta`` keys with a prefix). In process through Django's test client,
and through a real daphne (where ``/mcp/server-card`` must reach the card, not the MCP endpoint).
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.test import Client, override_settings

from django_mcp.discovery import CARD_SCHEMA, CARD_TYPE, CATALOG_TYPE
from django_mcp.protocol.versions import ALL_REVISIONS
from django_mcp.test import MCPTestClient
from tests.support.servers import LiveServer

NAME = re.compile(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
URL = re.compile(r"^https?://\S+$")
META_KEY = re.compile(r"^([a-zA-Z][a-zA-Z0-9-]*[a-zA-Z0-9]?\.)*[a-zA-Z][a-zA-Z0-9-]*[a-zA-Z0-9]/[a-zA-Z0-9][\w.-]*$")
CARD_MEMBERS = {"$schema", "name", "version", "description", "title", "websiteUrl", "repository", "icons", "remotes",
                "_meta"}  # fmt: skip


def assert_card(card: dict[str, Any]) -> None:
    """What the draft's schema requires of a ``ServerCard``."""
    assert set(card) <= CARD_MEMBERS, set(card) - CARD_MEMBERS
    assert card["$schema"] == CARD_SCHEMA
    assert NAME.match(card["name"]) and 3 <= len(card["name"]) <= 200, card["name"]
    assert isinstance(card["version"], str) and len(card["version"]) <= 255
    assert 1 <= len(card["description"]) <= 100
    if "title" in card:
        assert 1 <= len(card["title"]) <= 100
    for remote in card.get("remotes", []):
        assert set(remote) <= {"type", "url", "headers", "variables", "supportedProtocolVersions"}
        assert remote["type"] in ("streamable-http", "sse") and URL.match(remote["url"])
    for key in card.get("_meta", {}):
        assert META_KEY.match(key), key
    for icon in card.get("icons", []):
        assert "src" in icon


@pytest.fixture
def browser() -> Any:
    with override_settings(ALLOWED_HOSTS=["mcp.example.com"]):
        yield Client(HTTP_HOST="mcp.example.com")


def test_the_card_describes_the_server_and_how_to_connect(browser: Client) -> None:
    r = browser.get("/mcp/server-card", HTTP_ACCEPT=CARD_TYPE)
    assert r.status_code == 200 and r["Content-Type"] == CARD_TYPE
    card = r.json()
    assert_card(card)
    assert card["name"] == "com.example.mcp/django-mcp-tests"  # the host reversed, the server's name
    streamable, sse = card["remotes"]
    assert streamable == {
        "type": "streamable-http",
        "url": "http://mcp.example.com/mcp/",
        "supportedProtocolVersions": list(ALL_REVISIONS),
    }
    assert sse == {"type": "sse", "url": "http://mcp.example.com/mcp/sse/", "supportedProtocolVersions": ["2024-11-05"]}
    assert "tools" not in card and "tools" not in str(card["_meta"])  # the draft lists no primitives


@pytest.mark.django_db  # the kill switches middleware reads its switches on first use
def test_the_card_agrees_with_server_discover(browser: Client) -> None:
    card = browser.get("/mcp/server-card").json()
    discover = MCPTestClient().request("server/discover")
    info = discover["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert (card["version"], card["remotes"][0]["supportedProtocolVersions"]) == (
        info["version"],
        discover["supportedVersions"],
    )
    assert card["_meta"]["io.github.django-mcp-toolkit/extensions"] == discover["capabilities"]["extensions"]


def test_oauth_projects_point_at_their_protected_resource_metadata(browser: Client) -> None:
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "AUTH": "oauth"}):
        card = browser.get("/mcp/server-card").json()
    assert card["_meta"]["io.github.django-mcp-toolkit/authorization"] == {
        "type": "oauth2",
        "protectedResourceMetadata": "http://mcp.example.com/.well-known/oauth-protected-resource/mcp",
    }


def test_what_cannot_be_derived_is_a_setting(browser: Client) -> None:
    options = {
        "name": "com.example/library",
        "title": "The Library",
        "description": "Search, lend and return books. " * 10,
        "website_url": "https://library.example.com/",
        "repository": {"url": "https://github.com/example/library", "source": "github"},
        "icons": [{"src": "https://library.example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]}],
    }
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "SERVER_CARD": options}):
        card = browser.get("/mcp/server-card").json()
    assert_card(card)
    assert (card["name"], card["title"], card["websiteUrl"]) == (
        "com.example/library",
        "The Library",
        options["website_url"],
    )
    assert card["repository"] == options["repository"] and card["icons"] == options["icons"]
    assert len(card["description"]) == 100 and card["description"].endswith("…")  # cut to the draft's 100


def test_the_catalog_points_at_the_card(browser: Client) -> None:
    r = browser.get("/.well-known/ai-catalog.json")
    assert r.status_code == 200 and r["Content-Type"] == CATALOG_TYPE
    assert r.json() == {
        "specVersion": "1.0",
        "entries": [
            {
                "identifier": "urn:air:mcp.example.com:mcp:django-mcp-tests",
                "type": CARD_TYPE,
                "url": "http://mcp.example.com/mcp/server-card",
            }
        ],
    }


@pytest.mark.parametrize("path", ["/mcp/server-card", "/.well-known/ai-catalog.json"])
def test_public_cacheable_and_readable_from_any_origin(browser: Client, path: str) -> None:
    first = browser.get(path, HTTP_ORIGIN="https://elsewhere.example")
    assert first["Access-Control-Allow-Origin"] == "*" and first["Access-Control-Expose-Headers"] == "ETag"
    assert first["Cache-Control"] == "public, max-age=3600"
    # Each host's document names that host's URLs: a shared cache keeps one copy per host and scheme.
    assert {v.strip() for v in first["Vary"].split(",")} >= {"Host", "X-Forwarded-Proto"}
    with override_settings(ALLOWED_HOSTS=["mcp.example.com", "mcp.example.org"]):
        other = browser.get(path, HTTP_HOST="mcp.example.org")
    assert other["ETag"] != first["ETag"] and b"mcp.example.org" in other.content and "Host" in other["Vary"]
    etag = first["ETag"]
    again = browser.get(path, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    assert browser.get(path, HTTP_IF_NONE_MATCH='"other"').status_code == 200
    head = browser.head(path)
    assert head.status_code == 200 and head.content == b"" and head["ETag"] == etag
    preflight = browser.options(path, HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET")
    assert preflight.status_code == 204 and preflight["Access-Control-Allow-Methods"] == "GET"
    for method in (browser.post, browser.put, browser.delete):
        refused = method(path)
        assert refused.status_code == 405 and "GET" in refused["Allow"]


@pytest.mark.parametrize("path", ["/mcp/server-card", "/.well-known/ai-catalog.json"])
def test_a_setting_turns_them_off(browser: Client, path: str) -> None:
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "SERVER_CARD": False}):
        assert browser.get(path).status_code == 404


def test_another_endpoint_path_moves_the_card() -> None:
    """The card is ``<ENDPOINT>server-card``: django_mcp.urls mounts it where the endpoint is."""
    from django.urls import clear_url_caches

    from django_mcp.urls import discovery_patterns

    (_, card) = discovery_patterns("/api/mcp/")
    assert str(card.pattern) == "api/mcp/server-card"
    clear_url_caches()


def test_through_a_real_server_in_asgi_mode(mcp_server: LiveServer) -> None:
    """daphne: /mcp/ is the MCP consumer, /mcp/server-card falls through to the Django view."""
    with httpx.Client(base_url=mcp_server.base, timeout=10) as http:
        r = http.get("/mcp/server-card", headers={"Accept": CARD_TYPE})
        assert r.status_code == 200 and r.headers["content-type"] == CARD_TYPE
        card = r.json()
        assert_card(card)
        assert card["remotes"][0]["url"] == mcp_server.url
        assert http.get("/mcp/server-card", headers={"If-None-Match": r.headers["etag"]}).status_code == 304
        catalog = http.get("/.well-known/ai-catalog.json").json()
        assert catalog["entries"][0]["url"] == mcp_server.url + "server-card"
