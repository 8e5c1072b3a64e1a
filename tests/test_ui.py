"""MCP Apps from Django templates, in process through the one door (``django_mcp.ui``).

What a host that renders MCP Apps sees (the ``io.modelcontextprotocol/ui`` extension declared in
its capabilities) and what a client that renders none sees, in both eras; the ``ui://`` page, the
same for every caller; the render helper, checked like its tool (two users, a token without the
scope); declaration errors; the vendored bridge. Real hosts: ``tests/test_ui_browser.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_mcp import MCPServer
from django_mcp.protocol.extensions import UI, UI_MIME_TYPE
from django_mcp.test import MCPClientError, MCPTestClient
from django_mcp.ui import UI as AppUI
from tests.support.servers import ROOT
from tests.uiapp import mcp as uiapp

pytestmark = pytest.mark.django_db

UI_CAPABILITIES = {"extensions": {UI: {"mimeTypes": [UI_MIME_TYPE]}}}
REVISIONS = ["2025-11-25", "2026-07-28"]


@pytest.fixture(autouse=True)
def shelf() -> Any:
    uiapp.LENT.clear()
    yield
    uiapp.LENT.clear()


def host(revision: str = "2026-07-28", user: Any = None, **kwargs: Any) -> MCPTestClient:
    """A client that renders MCP Apps, as Claude or VS Code declare it."""
    return MCPTestClient(uiapp.server, protocol_version=revision, capabilities=UI_CAPABILITIES, user=user, **kwargs)


def plain(revision: str = "2026-07-28", user: Any = None) -> MCPTestClient:
    return MCPTestClient(uiapp.server, protocol_version=revision, capabilities={}, user=user)


def tools(client: MCPTestClient) -> dict[str, dict[str, Any]]:
    listed = client.request("tools/list")["tools"]
    return {t["name"]: t for t in listed}


# -- what a host sees ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("revision", REVISIONS)
def test_a_host_sees_each_tools_app_and_the_app_only_helpers(revision: str) -> None:
    listed = tools(host(revision))
    get_book = listed["get_book"]
    assert get_book["_meta"]["ui"] == {"resourceUri": "ui://ui-tests/get_book"}
    assert get_book["_meta"]["ui/resourceUri"] == "ui://ui-tests/get_book"  # the flat key older hosts read
    assert listed["get_book__ui"]["_meta"]["ui"] == {"visibility": ["app"]}
    assert listed["get_book__ui"]["annotations"]["readOnlyHint"] is True
    assert listed["shelf_size"]["_meta"]["ui"] == {"visibility": ["app"]}
    assert "raw_card__ui" not in listed  # a page of its own, no template: no render helper
    assert "shelf_stats" not in listed  # anonymous: no auth.view_user


@pytest.mark.parametrize("revision", REVISIONS)
def test_a_client_that_renders_no_apps_sees_plain_tools_and_cannot_call_the_helpers(revision: str) -> None:
    client = plain(revision)
    listed = tools(client)
    assert sorted(listed) == ["get_book", "lend_book", "raw_card"]
    assert all("_meta" not in t for t in listed.values())
    for helper, arguments in (("shelf_size", {}), ("get_book__ui", {"result": {"id": 1, "title": "x"}})):
        with pytest.raises(MCPClientError) as refused:
            client.call_tool(helper, arguments)
        assert refused.value.code == -32602 and "Unknown tool" in refused.value.message
    assert client.call_tool("get_book", {"book_id": 1}).structured_content == {"id": 1, "title": "Dune", "borrower": ""}


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_a_client_that_renders_no_apps_is_told_nothing_of_the_pages(revision: str) -> None:
    """The ``ui://`` pages are listed and read for a host only: to any other client they do not exist."""
    assert "ui://ui-tests/get_book" in {r["uri"] for r in host(revision).request("resources/list")["resources"]}
    client = plain(revision)
    assert not [r for r in client.request("resources/list")["resources"] if r["uri"].startswith("ui://")]
    with pytest.raises(MCPClientError) as refused:
        client.request("resources/read", {"uri": "ui://ui-tests/get_book"})
    with pytest.raises(MCPClientError) as missing:  # the error of a page that does not exist, in this revision
        client.request("resources/read", {"uri": "ui://ui-tests/no_such_page"})
    assert refused.value.code == missing.value.code
    assert refused.value.message == missing.value.message.replace("no_such_page", "get_book")


def test_a_declaration_without_the_mime_type_is_no_app_host() -> None:
    client = MCPTestClient(uiapp.server, capabilities={"extensions": {UI: {"mimeTypes": ["text/html"]}}})
    assert "get_book__ui" not in tools(client)


def test_the_server_announces_the_extension_in_both_eras() -> None:
    discover = host().request("server/discover")
    assert discover["capabilities"]["extensions"] == {UI: {}}
    legacy = host("2025-11-25").initialize().capabilities.model_dump(by_alias=True, exclude_none=True)
    assert legacy["extensions"] == {UI: {}}
    # A handshake-era client that declared no extensions is sent none (its schema has no such member).
    assert "extensions" not in plain("2025-11-25").initialize().capabilities.model_dump(exclude_none=True)
    assert "extensions" not in MCPServer("no-apps").initialize_result("2025-11-25", UI_CAPABILITIES)["capabilities"]


# -- the page ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("revision", REVISIONS)
def test_the_page_is_an_app_resource_with_its_meta_the_same_for_every_caller(revision: str) -> None:
    alice = User.objects.create_user("alice")
    bob = User.objects.create_user("bob")
    pages = []
    for user in (alice, bob, None):
        read = host(revision, user=user).request("resources/read", {"uri": "ui://ui-tests/get_book"})
        (content,) = read["contents"]
        pages.append(content["text"])
        assert content["mimeType"] == UI_MIME_TYPE
        assert content["_meta"]["ui"] == {"csp": {"resourceDomains": ["https://fonts.example"]}, "prefersBorder": True}
    assert pages[0] == pages[1] == pages[2]  # hosts cache it: nothing of the caller in it
    page = pages[0]
    assert page.startswith("<!DOCTYPE html>") and "alice" not in page and "bob" not in page
    assert "globalThis.McpExtApps={" in page and "globalThis.mcpApp = app" in page  # bridge and script, inlined
    assert '"render": "get_book__ui"' in page and '"tool": "get_book"' in page
    assert "rgb(10, 20, 30)" in page  # uiapp/app.css, inlined
    assert "<script src" not in page and "<link" not in page  # nothing loaded from anywhere
    listed = {r["uri"]: r for r in host(revision).request("resources/list")["resources"]}
    assert listed["ui://ui-tests/get_book"]["mimeType"] == UI_MIME_TYPE
    assert listed["ui://ui-tests/get_book"]["_meta"]["ui"]["prefersBorder"] is True
    assert listed["ui://ui-tests/raw_card"]["_meta"]["ui"] == {"prefersBorder": False}


def test_the_page_is_in_the_sites_language_whatever_the_callers() -> None:
    with override_settings(LANGUAGE_CODE="fr"):
        (fr,) = host(locale="de").request("resources/read", {"uri": "ui://ui-tests/get_book"})["contents"]
    assert '<html lang="fr">' in fr["text"]


# -- the result, rendered for one caller ---------------------------------------------------------------------------
def test_the_helper_renders_the_template_with_the_result_for_the_caller_escaped() -> None:
    alice = User.objects.create_user("alice")
    client = host(user=alice)
    result = client.call_tool("get_book", {"book_id": 3})
    rendered = client.call_tool(
        "get_book__ui", {"result": result.structured_content, "content": [], "arguments": {"book_id": 3}}
    )
    html = rendered.structured_content["html"]
    assert rendered.content[0].text == html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co" in html and "<script>" not in html
    assert '<p class="viewer">alice</p>' in html  # per-user data, through a checked call
    assert 'data-mcp-call="lend_book"' in html and 'data-mcp-render="lend_book__ui"' in html
    assert 'data-mcp-arguments="{&quot;book_id&quot;: 3}"' in html
    assert "On the shelf" in html


def test_the_helper_renders_in_the_hosts_locale() -> None:
    client = host()
    args = {"result": {"id": 1, "title": "Dune", "borrower": ""}, "locale": "fr-CA"}
    assert "Emprunter" in client.call_tool("get_book__ui", args).structured_content["html"]
    args["result"]["borrower"] = "ann"
    assert "Prêté à ann" in client.call_tool("get_book__ui", args).structured_content["html"]
    args["locale"] = "xx"  # unknown: the site's language
    assert "Lent to ann" in client.call_tool("get_book__ui", args).structured_content["html"]


def test_a_click_calls_the_tool_through_the_same_door_as_the_model() -> None:
    """What the page's script does on Borrow: the tool, then the tool's own helper on its result."""
    alice = User.objects.create_user("alice")
    client = host(user=alice)
    lent = client.call_tool("lend_book", {"book_id": 1})
    assert uiapp.LENT == {1: "alice"}
    html = client.call_tool("lend_book__ui", {"result": lent.structured_content}).structured_content["html"]
    assert "Lent to alice" in html and "Borrow" not in html
    again = client.call_tool("lend_book", {"book_id": 1})
    assert again.is_error and "already lent" in again.content[0].text


# -- access: two users, a token without the scope ----------------------------------------------------------------
def test_a_tools_app_and_helper_are_as_hidden_as_the_tool() -> None:
    """shelf_stats needs auth.view_user: bob (without) sees neither its page nor its helper; alice does."""
    alice = User.objects.create_user("alice")
    alice.user_permissions.add(Permission.objects.get(codename="view_user", content_type__app_label="auth"))
    bob = User.objects.create_user("bob")
    uiapp.LENT[2] = "bob"
    as_bob = host(user=bob)
    assert "shelf_stats" not in tools(as_bob) and "shelf_stats__ui" not in tools(as_bob)
    assert "ui://ui-tests/shelf_stats" not in {r["uri"] for r in as_bob.request("resources/list")["resources"]}
    with pytest.raises(MCPClientError) as page:
        as_bob.request("resources/read", {"uri": "ui://ui-tests/shelf_stats"})
    with pytest.raises(MCPClientError) as missing:
        as_bob.request("resources/read", {"uri": "ui://ui-tests/no_such_tool"})
    assert (page.value.code, page.value.message) == (
        missing.value.code,
        missing.value.message.replace("no_such_tool", "shelf_stats"),
    )
    with pytest.raises(MCPClientError) as helper:
        as_bob.call_tool("shelf_stats__ui", {"result": {"shelf": 3, "lent": {"2": "bob"}}})
    assert "Unknown tool" in helper.value.message
    as_alice = host(user=User.objects.get(pk=alice.pk))
    stats = as_alice.call_tool("shelf_stats", {})
    html = as_alice.call_tool("shelf_stats__ui", {"result": stats.structured_content}).structured_content["html"]
    assert html.strip() == '<p class="stats">3 books; lent: 2=bob </p>'
    assert as_alice.request("resources/read", {"uri": "ui://ui-tests/shelf_stats"})["contents"][0]["text"]


def test_a_token_without_the_tools_scope_reaches_neither_its_page_nor_its_helper() -> None:
    scoped = MCPServer("ui-scoped")

    @scoped.tool(scopes=["books:read"], ui="uiapp/stats.html")
    def stats() -> dict[str, Any]:
        return {"shelf": 1, "lent": {}}

    carol = User.objects.create_user("carol")
    with_scope = MCPTestClient(scoped, capabilities=UI_CAPABILITIES)
    with_scope.force_authenticate(carol, scopes=["mcp", "books:read"], client_id="client-a")
    assert with_scope.request("resources/read", {"uri": "ui://ui-scoped/stats"})["contents"]
    assert with_scope.call_tool("stats__ui", {"result": {"shelf": 1, "lent": {}}}).structured_content["html"]
    without = MCPTestClient(scoped, capabilities=UI_CAPABILITIES)
    without.force_authenticate(carol, scopes=["mcp"], client_id="client-b")
    for method, params in (
        ("resources/read", {"uri": "ui://ui-scoped/stats"}),
        ("tools/call", {"name": "stats__ui", "arguments": {"result": {}}}),
    ):
        with pytest.raises(MCPClientError) as refused:
            without.request(method, params)
        assert refused.value.status == 403, method  # insufficient_scope, as over HTTP


# -- declarations -----------------------------------------------------------------------------------------------
def test_declaration_errors() -> None:
    server = MCPServer("ui-errors")
    with pytest.raises(TypeError, match="visibility must be a list"):
        server.tool(visibility="app")(lambda: 1)
    with pytest.raises(TypeError, match="visibility must be a list"):
        server.tool(name="v2", visibility=["user"])(lambda: 1)
    with pytest.raises(TypeError, match="needs a template"):
        AppUI()
    with pytest.raises(TypeError, match="csp takes"):
        AppUI(template="x.html", csp={"scriptDomains": ["https://a"]})
    with pytest.raises(TypeError, match="permissions takes"):
        AppUI(template="x.html", permissions={"usb": {}})
    with pytest.raises(ImproperlyConfigured, match="ui must be a template name"):
        server.tool(name="v3", ui=42)(lambda: 1)
    server.tool(name="twice", ui="uiapp/stats.html")(lambda: 1)
    with pytest.raises(ImproperlyConfigured, match="already registered"):
        server.tool(name="twice__ui")(lambda: 1)


def test_one_ui_object_on_two_tools_gives_each_its_own_page() -> None:
    server = MCPServer("ui-shared")
    shared = AppUI(template="uiapp/stats.html")
    server.tool(name="a", ui=shared)(lambda: 1)
    server.tool(name="b", ui=shared)(lambda: 1)
    assert server.tools["a"].ui.uri == "ui://ui-shared/a" and server.tools["b"].ui.uri == "ui://ui-shared/b"
    assert shared.uri is None


#: What one ``ui://`` page may weigh: the inlined bridge (the ext-apps ``App`` with the part of zod and the MCP SDK it
#: uses, about 240 KB) plus the page. The package's all-in-one build was over 500 KB in every page.
PAGE_BUDGET = 250_000
#: With ``PUBLIC_URL`` set the page references the bridge, served once (``django_mcp.app_bridge``).
SERVED_PAGE_BUDGET = 100_000
PUBLIC = "https://books.example.com"


def public_url(value: str | None = PUBLIC) -> Any:
    from django.conf import settings

    return override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "PUBLIC_URL": value})


def pages(client: MCPTestClient) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Each ``ui://`` page: its ``resources/list`` entry and what ``resources/read`` answers."""
    listed = {r["uri"]: r for r in client.request("resources/list")["resources"] if r["uri"].startswith("ui://")}
    read = {uri: client.request("resources/read", {"uri": uri})["contents"][0] for uri in listed}
    return {uri: (entry, read[uri]) for uri, entry in listed.items()}


@pytest.mark.parametrize(("served", "budget"), [(False, PAGE_BUDGET), (True, SERVED_PAGE_BUDGET)])
def test_each_ui_page_stays_within_its_size_budget(served: bool, budget: int) -> None:
    with public_url(PUBLIC if served else None):
        found = pages(host())
    assert len(found) >= 2
    for uri, (_, content) in found.items():
        size = len(content["text"].encode())
        assert size <= budget, (uri, size)
        assert (size > SERVED_PAGE_BUDGET) is not served, (uri, size)  # inlined: the bridge is in the page


def test_with_public_url_a_page_loads_the_served_bridge_and_declares_its_origin() -> None:
    from django_mcp import app_bridge

    bridge = app_bridge.BRIDGE_FILE.read_bytes()
    with public_url(PUBLIC + "/"):
        found = pages(host())
        url = app_bridge.url()
    assert url == f"{PUBLIC}/mcp/apps/{app_bridge.file_name()}" and app_bridge.file_name().startswith("bridge.")
    for uri, (entry, content) in found.items():
        text = content["text"]
        tag = f'<script type="module" src="{url}" integrity="{app_bridge.integrity()}" crossorigin="anonymous">'
        assert tag in text, uri
        assert bridge.decode()[-2000:] not in text  # not inlined as well
        assert entry["_meta"] == content["_meta"], uri
        declared = content["_meta"]["ui"]["csp"]["resourceDomains"]
        assert declared[-1] == PUBLIC, uri  # the origin only, whatever PUBLIC_URL's path
    get_book = found["ui://ui-tests/get_book"][1]["_meta"]["ui"]
    assert get_book["csp"] == {"resourceDomains": ["https://fonts.example", PUBLIC]}  # added to the tool's own
    with public_url("https://Books.Example.com:8443/library"):
        (entry, content) = pages(host())["ui://ui-tests/raw_card"]
        assert app_bridge.url() == f"https://Books.Example.com:8443/library/mcp/apps/{app_bridge.file_name()}"
    assert content["_meta"]["ui"]["csp"] == {"resourceDomains": ["https://books.example.com:8443"]}
    with public_url(None):  # unset again: inlined, and the tool's CSP as it declared it
        (entry, content) = pages(host())["ui://ui-tests/get_book"]
    assert entry["_meta"]["ui"]["csp"] == {"resourceDomains": ["https://fonts.example"]}
    assert "integrity=" not in content["text"] and bridge.decode()[-2000:] in content["text"]


@override_settings(ROOT_URLCONF="tests.settings.urls_django_asgi")  # WSGI mode's patterns (django_mcp.urls_wsgi)
def test_the_bridge_is_served_beside_a_wsgi_endpoint_as_it_is_under_asgi(client: Any) -> None:
    import base64
    import gzip
    import hashlib

    from django_mcp import app_bridge

    url = f"/mcp/apps/{app_bridge.file_name()}"
    plain = client.get(url)
    assert plain.status_code == 200 and plain["Content-Type"] == "text/javascript; charset=utf-8"
    assert plain["Access-Control-Allow-Origin"] == "*" and "immutable" in plain["Cache-Control"]
    body = plain.content
    assert body == app_bridge.BRIDGE_FILE.read_bytes()
    assert app_bridge.integrity() == "sha384-" + base64.b64encode(hashlib.sha384(body).digest()).decode()
    zipped = client.get(url, headers={"Accept-Encoding": "gzip, br"})
    assert zipped["Content-Encoding"] == "gzip" and gzip.decompress(zipped.content) == body
    assert len(zipped.content) < len(body) / 3
    assert client.get("/mcp/apps/bridge.0000000000000000.js").status_code == 404  # another version: not here
    assert client.post(url).status_code == 405


def test_the_vendored_bridge_is_the_pinned_ext_apps_package() -> None:
    """scripts/vendor_ext_apps.py makes it from the npm package `make node` installs (Makefile EXT_APPS_VERSION)."""
    check = subprocess.run(
        [sys.executable, "scripts/vendor_ext_apps.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr


# -- a ModelResource's detail UI ------------------------------------------------------------------------------
def test_a_model_resource_ui_is_a_read_only_tool_that_sees_what_a_read_sees() -> None:
    from django_mcp import ModelResource
    from tests.modelapp.models import Shelf

    server = MCPServer("ui-models")

    @server.register
    class ShelfResource(ModelResource):
        model = Shelf
        fields = ["name"]
        ui = "uiapp/shelf.html"

    shelf = Shelf.objects.create(name="Novels")
    alice = User.objects.create_user("alice")
    alice.user_permissions.add(Permission.objects.get(codename="view_shelf"))
    bob = User.objects.create_user("bob")
    as_alice = MCPTestClient(server, capabilities=UI_CAPABILITIES, user=alice)
    listed = tools(as_alice)
    show = listed["show_shelf"]
    assert show["annotations"] == {
        "readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False,
    }  # fmt: skip
    assert (
        show["inputSchema"]["required"] == ["pk"] and show["_meta"]["ui"]["resourceUri"] == "ui://ui-models/show_shelf"
    )
    shown = as_alice.call_tool("show_shelf", {"pk": shelf.pk})
    assert shown.structured_content == {"name": "Novels"}
    read = as_alice.request("resources/read", {"uri": f"django://modelapp/shelf/{shelf.pk}"})["contents"][0]
    assert json.loads(read["text"]) == shown.structured_content  # what a read serializes
    assert shown.content[1].uri == f"django://modelapp/shelf/{shelf.pk}"  # a link to the resource itself
    html = as_alice.call_tool("show_shelf__ui", {"result": shown.structured_content}).structured_content["html"]
    assert "<h2>Novels</h2>" in html and "<p>alice</p>" in html
    missing = as_alice.call_tool("show_shelf", {"pk": 999})
    assert missing.is_error and "No shelf" in missing.content[0].text
    # bob lacks modelapp.view_shelf: neither the tool, its page nor its helper exist for him
    as_bob = MCPTestClient(server, capabilities=UI_CAPABILITIES, user=bob)
    assert not {"show_shelf", "show_shelf__ui"} & set(tools(as_bob))
    with pytest.raises(MCPClientError, match="Unknown tool"):
        as_bob.call_tool("show_shelf", {"pk": shelf.pk})
    with pytest.raises(MCPClientError):
        as_bob.request("resources/read", {"uri": "ui://ui-models/show_shelf"})


@pytest.mark.django_db(transaction=True)  # a switch reaches the workers once its change commits
def test_switching_a_tool_off_takes_its_app_page_and_helper_with_it() -> None:
    from django_mcp.switches import board, switch_off, switch_on

    board.reset()  # what an earlier test left in this process's copy
    client = host()
    assert switch_off("tool", "get_book", reason="incident")
    try:
        assert not {"get_book", "get_book__ui"} & set(tools(client))
        assert "ui://ui-tests/get_book" not in {r["uri"] for r in client.request("resources/list")["resources"]}
        with pytest.raises(MCPClientError) as helper:
            client.call_tool("get_book__ui", {"result": {"id": 1}})
        assert "Tool 'get_book' is disabled" in helper.value.message
        with pytest.raises(MCPClientError):
            client.request("resources/read", {"uri": "ui://ui-tests/get_book"})
        assert "lend_book__ui" in tools(client)  # another tool's app is untouched
    finally:
        switch_on("tool", "get_book")
    assert "get_book__ui" in tools(client)
