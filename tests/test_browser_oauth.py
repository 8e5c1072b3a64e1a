"""OAuth in a real browser: Debian's chromium driven by Playwright, the official SDK client on the other end.

The SDK's ``OAuthClientProvider`` discovers the server from a 401, registers
itself (RFC 7591) and hands the authorization URL to its ``redirect_handler``,
which opens it in chromium. A person logs in on the Django login page, reads
the consent page (the client's name, each scope's description) and clicks
Allow or Deny; the browser's final redirect lands on the client's loopback
callback server (as with a desktop client) and its URL is given to the SDK's
``callback_handler``. Allow: the client ends
with a token and lists the tools. Deny: it ends with nothing, and the server
issued nothing. Without chromium the test skips, except under ``CI=true``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from tests.oauth.kit import PASSWORD, OAuthServer, Storage, start_oauth_server, stop_oauth_server
from tests.support.browser import callback as callback  # the shared fixtures
from tests.support.browser import need_chromium
from tests.support.browser import page as page

#: own_config: the sign-in and consent pages work the same on any database and layer (pg-redis skips it).
pytestmark = pytest.mark.own_config

CLIENT_NAME = "Browser Test Client"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    need_chromium()
    srv = start_oauth_server(tmp_path_factory.mktemp("browser"))
    yield srv
    stop_oauth_server(srv)


class Person:
    """Someone at the browser: logs in when asked, reads the consent page, clicks one button."""

    def __init__(self, page: Any, server: OAuthServer, callback: str, username: str, allow: bool) -> None:
        self.page, self.server, self.callback, self.username, self.allow = page, server, callback, username, allow
        self.callback_url = ""
        self.consent_text = ""
        self.scopes: list[str] = []

    async def open(self, url: str) -> None:
        """The SDK's ``redirect_handler``: what a desktop client does with ``webbrowser.open``."""
        await self.page.goto(url)
        # Not signed in: Django's login page, then back to the authorization URL.
        await self.page.fill("#id_username", self.username)
        await self.page.fill("#id_password", PASSWORD)
        await self.page.click("button[type=submit]")
        await self.page.wait_for_selector("#authorizationForm")
        self.consent_text = await self.page.inner_text("main")
        self.scopes = await self.page.eval_on_selector_all("#scopes li", "items => items.map(i => i.dataset.scope)")
        async with self.page.expect_navigation(url=lambda u: u.startswith(self.callback)) as landed:
            await self.page.click("#allow" if self.allow else "#deny")
        self.callback_url = (await landed.value).url

    async def answer(self) -> AuthorizationCodeResult:
        """The SDK's ``callback_handler``: the code from the intercepted redirect, or the refusal."""
        query = parse_qs(urlsplit(self.callback_url).query)
        if "code" not in query:
            raise PermissionError(f"authorization refused: {query.get('error', ['?'])[0]}")
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )


def provider(server: OAuthServer, person: Person, storage: Storage) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[person.callback],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope="mcp secret:read",
    )
    return OAuthClientProvider(
        server.url, metadata, storage, redirect_handler=person.open, callback_handler=person.answer
    )


async def test_login_consent_allow(server: OAuthServer, callback: str, page: Any) -> None:
    person = Person(page, server, callback, "alice", allow=True)
    storage = Storage()
    async with httpx2.AsyncClient(auth=provider(server, person, storage), timeout=60) as http:
        async with Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("secret", {})
    # The consent page named the client and described each scope it asked for.
    assert CLIENT_NAME in person.consent_text
    assert "Connect to the test server" in person.consent_text and "Read the secret" in person.consent_text
    assert sorted(person.scopes) == ["mcp", "secret:read"]
    assert "Signed in as alice" in person.consent_text
    assert "registered itself automatically" in person.consent_text
    assert "secret" in names and "echo" in names
    assert "the secret is 42" in str(result.content)
    assert storage.tokens is not None and storage.client is not None
    # The token the browser's consent produced belongs to alice and that client (DCR's own
    # registration-management token has no user).
    owner = server.shell(
        "from oauth2_provider.models import AccessToken as T; "
        f"ts = T.objects.filter(application__client_id={storage.client.client_id!r}, user__isnull=False); "
        "print([(t.user.username, t.application.name, t.scope) for t in ts])"
    )
    assert owner == repr([("alice", CLIENT_NAME, "mcp secret:read")])
    assert await page.inner_text("body") == "You may close this window."


async def test_login_consent_deny(server: OAuthServer, callback: str, page: Any) -> None:
    person = Person(page, server, callback, "bob", allow=False)
    storage = Storage()
    with pytest.raises(BaseException) as caught:  # the SDK wraps the refusal in task groups
        async with httpx2.AsyncClient(auth=provider(server, person, storage), timeout=60) as http:
            async with Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client:
                await client.list_tools()
    assert "access_denied" in repr(caught.value) or "access_denied" in person.callback_url
    assert "error=access_denied" in person.callback_url
    assert CLIENT_NAME in person.consent_text
    assert storage.tokens is None, "a denied client holds no token"
    assert storage.client is not None
    issued = server.shell(
        "from oauth2_provider.models import AccessToken, Grant; "
        f"cid = {storage.client.client_id!r}; "
        "print(AccessToken.objects.filter(application__client_id=cid, user__isnull=False).count(), "
        "Grant.objects.filter(application__client_id=cid).count())"
    )
    assert issued == "0 0", "no user token and no authorization code for a denied client"
