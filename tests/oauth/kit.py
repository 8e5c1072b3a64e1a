"""Helpers for the OAuth tests: a live server with ``AUTH = "oauth"``, a "browser" and the SDK client.

The browser is an httpx client holding a Django session: it logs in through the real
login form and answers DOT's real consent form, so the official SDK's
``OAuthClientProvider`` runs its whole flow (discovery from a 401, registration,
authorization code + PKCE + ``resource``, token, refresh) against the real server.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.support.servers import ROOT, LiveServer, drop_pg_database, free_port, server_env, start_server

PASSWORD = "correct horse battery staple"
REDIRECT = "http://127.0.0.1:9/callback"

SETUP = """
from django.contrib.auth.models import Permission, User
for name in ("alice", "bob", "carol"):
    User.objects.create_user(name, password={password!r})
User.objects.get(username="carol").user_permissions.add(Permission.objects.get(codename="view_user"))
"""


@dataclass
class OAuthServer:
    live: LiveServer

    @property
    def url(self) -> str:
        return self.live.url

    @property
    def base(self) -> str:
        return self.live.base

    def shell(self, code: str) -> str:
        """Run Python inside the server's Django project (its own database); its last printed line."""
        lines = self.live.manage("shell", "-c", code).strip().splitlines()
        return lines[-1] if lines else ""


def start_oauth_server(
    tmp: Path,
    *,
    settings: str = "tests.oauth.settings",
    app: str = "tests.oauth.asgi:application",
    cwd: Path = ROOT,
    setup: str | None = SETUP.format(password=PASSWORD),
    db: str | None = None,
    port: int | None = None,
    **env: str,
) -> OAuthServer:
    """A live daphne serving an OAuth project: the test project by default, any project by its settings.

    ``setup`` (Python run in the project's shell) creates the users; ``env`` adds to the server environment.
    """
    environ = server_env(tmp, db=db, settings=settings, **env)  # on PostgreSQL, a fresh database of its own
    live = start_server(environ, tmp / "daphne.log", app=app, cwd=cwd, port=port)
    server = OAuthServer(live)
    if setup is not None:
        server.shell(setup)
    return server


EXAMPLE = ROOT / "example_project"
#: The example project's demo reader, as ``manage.py demo_setup`` creates it.
EXAMPLE_USER = ("reader", "library-demo")


def start_example_server(
    tmp: Path, app: str = "example_project.asgi:application", port: int | None = None, **env: str
) -> OAuthServer:
    """The example lending library (``example_project.settings``, OAuth on) on a fresh SQLite file.

    Served from its own directory the way ``make demo`` serves it; ``demo_setup`` creates the reader.
    """
    server = start_oauth_server(
        tmp,
        settings="example_project.settings",
        app=app,
        cwd=EXAMPLE,
        setup=None,
        db="sqlite",  # the example project knows only SQLite
        PYTHONPATH=os.pathsep.join((str(EXAMPLE), str(ROOT))),
        DJANGO_DB_PATH=str(tmp / "example.sqlite3"),
        port=port,
        **env,
    )
    server.live.manage("demo_setup")
    return server


#: Two OAuth clients ("first", "second") and three bearer tokens: alice through each, bob through "first".
_TWO_USERS_TWO_CLIENTS = """
import io
from django.core.management import call_command
from oauth2_provider.models import Application
for name in ("first", "second"):
    Application.objects.create(name=name, client_type="public", authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:9/callback")
for user, app in (("alice", "first"), ("alice", "second"), ("bob", "first")):
    out = io.StringIO()
    call_command("mcp_token", user=user, scope=["mcp"], application=app, resource=[{url!r}], stdout=out)
    print(out.getvalue().strip())
"""


def mint_two_users_two_clients(server: OAuthServer) -> list[str]:
    """The attack tests' callers: tokens of alice via "first", alice via "second" and bob via "first"."""
    out = server.live.manage("shell", "-c", _TWO_USERS_TWO_CLIENTS.format(url=server.url))
    return out.strip().splitlines()[-3:]


def stop_oauth_server(server: OAuthServer) -> None:
    server.live.stop()
    if server.live.env["MCP_TEST_DB"] == "postgres":
        drop_pg_database(server.live.env["MCP_PG_NAME"])


@pytest.fixture(scope="module")
def oauth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    tmp = tmp_path_factory.mktemp("oauth")
    cimd = CIMDHost()
    server = start_oauth_server(tmp, MCP_CIMD_PORT=str(cimd.port))
    server.cimd = cimd  # type: ignore[attr-defined]
    yield server
    stop_oauth_server(server)
    cimd.close()


@pytest.fixture
def oauth_log(oauth_server: OAuthServer) -> Iterator[Path]:
    """The server's log; the test fails if the server answered 500 or logged a traceback meanwhile."""
    log = oauth_server.live.log
    start = log.stat().st_size
    yield log
    with log.open("rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    assert " 500 " not in text and "Traceback" not in text, text


class Browser:
    """A user agent with a Django session: logs in and answers the consent page."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.http = httpx.AsyncClient(base_url=base, timeout=30)

    async def login(self, username: str, password: str = PASSWORD) -> None:
        page = await self.http.get("/accounts/login/")
        assert page.status_code == 200
        r = await self.http.post(
            "/accounts/login/",
            data={"username": username, "password": password, "csrfmiddlewaretoken": self.http.cookies["csrftoken"]},
            headers={"Referer": self.base + "/accounts/login/"},
        )
        assert r.status_code == 302, r.text

    async def consent(self, url: str, allow: bool = True, scope: str | None = None) -> httpx.Response:
        """Open the authorization URL and submit the consent form; returns the redirect response.

        ``scope`` narrows what the user approves (the form's scope field), as a user unticking scopes would.
        """
        page = await self.http.get(url)
        if page.status_code != 200:
            return page
        fields = dict(
            (unescape(m.group(1)), unescape(m.group(2)))
            for m in re.finditer(r'<input[^>]*type="hidden"[^>]*name="([^"]*)"[^>]*value="([^"]*)"', page.text)
        )
        fields.update(
            (unescape(m.group(1)), "")
            for m in re.finditer(r'<input[^>]*type="hidden"[^>]*name="([^"]*)"(?![^>]*value=)', page.text)
        )
        if allow:
            fields["allow"] = "Authorize"
        if scope is not None:
            fields["scope"] = scope
        split = urlsplit(url)
        return await self.http.post(
            f"{split.path}?{split.query}", data=fields, headers={"Referer": self.base + split.path}
        )

    async def close(self) -> None:
        await self.http.aclose()


class Storage:
    """In-memory ``TokenStorage`` for the SDK provider."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@dataclass
class SDKUser:
    """The official SDK's ``OAuthClientProvider`` wired to a ``Browser`` for consent."""

    server: OAuthServer
    browser: Browser
    approve: str | None = None  # the scopes the user approves (default: all requested)
    allow: bool = True
    client_metadata_url: str | None = None
    storage: Storage = field(default_factory=Storage)
    authorizations: list[str] = field(default_factory=list)
    last_provider: OAuthClientProvider | None = None
    _location: str = ""

    def provider(self) -> OAuthClientProvider:
        async def redirect(url: str) -> None:
            self.authorizations.append(url)
            response = await self.browser.consent(url, allow=self.allow, scope=self.approve)
            assert response.status_code == 302, response.text[:500]
            self._location = response.headers["location"]

        async def callback() -> AuthorizationCodeResult:
            query = parse_qs(urlsplit(self._location).query)
            if "code" not in query:
                raise RuntimeError(f"authorization refused: {self._location}")
            return AuthorizationCodeResult(
                code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
            )

        metadata = OAuthClientMetadata(
            client_name="SDK test client",
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )
        self.last_provider = OAuthClientProvider(
            self.server.url,
            metadata,
            self.storage,
            redirect_handler=redirect,
            callback_handler=callback,
            client_metadata_url=self.client_metadata_url,
        )
        return self.last_provider

    def expire_access_token(self) -> None:
        """Make the provider consider its access token expired, so the next request refreshes it."""
        assert self.last_provider is not None
        self.last_provider.context.token_expiry_time = 1.0  # 1970: expired (0 would mean "no expiry")

    @asynccontextmanager
    async def client(self, mode: str = "legacy") -> AsyncIterator[Client]:
        async with httpx2.AsyncClient(auth=self.provider(), timeout=30) as http:
            transport = streamable_http_client(self.server.url, http_client=http)
            kwargs: dict[str, Any] = {"mode": mode, "read_timeout_seconds": 30}
            if mode != "legacy":
                kwargs["cache"] = None
            async with Client(transport, **kwargs) as client:
                yield client


class CIMDHost:
    """Serves Client ID Metadata Documents on loopback (the test server's fetcher maps https here)."""

    def __init__(self) -> None:
        self.documents: dict[str, dict[str, Any]] = {}
        self.fetched: list[str] = []
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                host.fetched.append(self.path)
                doc = host.documents.get(self.path)
                body = json.dumps(doc).encode() if doc is not None else b"{}"
                self.send_response(200 if doc is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.port = free_port()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(64)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def register(server: OAuthServer, **metadata: Any) -> httpx.Response:
    body = {
        "client_name": "raw client",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    return httpx.post(server.base + "/oauth/register/", json=body, timeout=30)


def authorize_url(server: OAuthServer, client_id: str, challenge: str | None, **extra: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "s1",
        "scope": "mcp secret:read",
        "resource": server.url,
        **extra,
    }
    if challenge is not None:
        params.setdefault("code_challenge", challenge)
        params.setdefault("code_challenge_method", "S256")
    return f"/oauth/authorize/?{urlencode(params)}"


def token(server: OAuthServer, **data: str) -> httpx.Response:
    return httpx.post(server.base + "/oauth/token/", data=data, timeout=30)


def mcp_post(server: OAuthServer, token_value: str | None, body: dict[str, Any], **headers: str) -> httpx.Response:
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **headers}
    if token_value is not None:
        h["Authorization"] = f"Bearer {token_value}"
    return httpx.post(server.url, json=body, headers=h, timeout=30)


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def new_client(server: OAuthServer) -> str:
    r = register(server)
    assert r.status_code == 201, r.text
    return str(r.json()["client_id"])


async def authorize(browser: Browser, url: str) -> dict[str, list[str]]:
    """Consent to ``url``; the query of the redirect back to the client (a code or an error)."""
    r = await browser.consent(url)
    assert r.status_code == 302, (r.status_code, r.text[:300])
    location = r.headers["location"]
    assert location.startswith(REDIRECT), location
    return parse_qs(urlsplit(location).query)


async def code_flow(server: OAuthServer, browser: Browser, **extra: str) -> dict[str, Any]:
    """A full authorization code + PKCE exchange; the token response."""
    client_id = new_client(server)
    verifier, challenge = pkce()
    query = await authorize(browser, authorize_url(server, client_id, challenge, **extra))
    assert query["iss"] == [server.base]  # RFC 9207
    r = token(
        server,
        grant_type="authorization_code",
        code=query["code"][0],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=verifier,
    )
    assert r.status_code == 200, r.text
    return {**r.json(), "client_id": client_id}


def assert_invalid_token(r: httpx.Response) -> None:
    assert r.status_code == 401, r.text
    assert 'error="invalid_token"' in r.headers["www-authenticate"]
    assert "resource_metadata=" in r.headers["www-authenticate"]


MINT = f"""
from datetime import timedelta
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application
from django.contrib.auth.models import User
app, _ = Application.objects.get_or_create(name="minted", defaults=dict(
    client_type="public", authorization_grant_type="authorization-code", redirect_uris={REDIRECT!r}))
import secrets
value = secrets.token_urlsafe(30)
AccessToken.objects.create(user=User.objects.get(username="{{user}}"), application=app, token=value,
    expires=timezone.now() + timedelta(hours=1), scope="{{scope}}", resource=["{{resource}}"])
print(value)
"""

CONFIDENTIAL_APP = """
from oauth2_provider.models import Application
from django.contrib.auth.models import User
from oauth2_provider.generators import generate_client_secret
secret = generate_client_secret()
app = Application.objects.create(name="machine", client_type="confidential", client_secret=secret,
    authorization_grant_type="client-credentials", user=User.objects.get(username="bob"))
from django_mcp.models import MCPClient
# Staff list the scopes a machine client may request; by hand, the application's user is its service user.
MCPClient.objects.update_or_create(client_id=app.client_id, defaults={"allowed_scopes": "mcp secret:read"})
print(app.client_id, secret)
"""
