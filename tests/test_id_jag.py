"""Enterprise-managed authorization: the company IdP's identity assertions (ID-JAG) exchanged for our tokens.

A real IdP process (``tests/idp/enterprise.mjs``, signing with the npm ``jose`` package) signs alice and bob in
and issues ID-JAGs by RFC 8693 token exchange; a live daphne (``IDJAG_ISSUERS``) exchanges them at
django-oauth-toolkit's token endpoint (RFC 7523 ``jwt-bearer``), and the official SDK client calls tools with
the token as the mapped user. Two clients (``agent-one`` may hold ``mcp secret:read``, ``agent-two`` only
``mcp``), two users (alice is a librarian, so may hold ``secret:read``; bob is not) and an inactive carol.
The attacks use the IdP itself where it can make them (another audience, another resource, another client's
assertion, a second IdP nobody trusts) and the IdP's own private key or keys it never published otherwise.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from jwcrypto import jwk, jwt
from mcp import Client
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.streamable_http import streamable_http_client

from tests.oauth.kit import OAuthServer, Storage, start_oauth_server, stop_oauth_server
from tests.support.node import start_node
from tests.support.servers import IN_CI, ROOT, free_port, server_env, stop_process
from tests.support.wsgi_server import start_wsgi_server

JOSE = ROOT / ".node" / "node_modules" / "jose" / "dist" / "webapi" / "index.js"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"

#: Outside CI a checkout without `make node` skips; under CI=true the tests run and fail without the package.
pytestmark = pytest.mark.skipif(not JOSE.exists() and not IN_CI, reason="npm jose is not installed (make node)")

CLIENTS = {
    "agent-one": {"secret": "agent-one-secret", "scope": "mcp secret:read"},
    "agent-two": {"secret": "agent-two-secret", "scope": "mcp secret:read"},
}
PEOPLE = {
    "alice": {"password": "alice-pw", "email": "alice@example.com"},
    "bob": {"password": "bob-pw", "email": "bob@example.com"},
    "carol": {"password": "carol-pw", "email": "carol@example.com"},
}

SETUP = """
from django.contrib.auth.models import Group, User
from oauth2_provider.models import Application
from django_mcp.models import MCPClient
librarians = Group.objects.create(name="librarians")
for name, active in (("alice", True), ("bob", True), ("carol", False)):
    User.objects.create_user(name, email=name + "@example.com", is_active=active)
User.objects.get(username="alice").groups.add(librarians)
for client_id, allowed in (("agent-one", "mcp secret:read"), ("agent-two", "mcp")):
    Application.objects.create(name=client_id, client_id=client_id, client_secret=client_id + "-secret",
        client_type="confidential", authorization_grant_type="authorization-code",
        redirect_uris="https://agent.example/callback")
    MCPClient.objects.update_or_create(client_id=client_id, defaults={"allowed_scopes": allowed})
"""


@dataclass
class IdP:
    """One ``enterprise.mjs`` process: its issuer and its private signing key."""

    port: int
    key: jwk.JWK
    keys_file: Path
    process: subprocess.Popen[str] | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.keys_file.write_text(json.dumps({"keys": [json.loads(self.key.export_private())]}))
        env = {
            **os.environ,
            "IDP_PORT": str(self.port),
            "IDP_JWKS": str(self.keys_file),
            "IDP_PEOPLE": json.dumps(PEOPLE),
            "IDP_CLIENTS": json.dumps(CLIENTS),
        }
        script = ROOT / "tests" / "idp" / "enterprise.mjs"
        self.process = start_node(script, [str(JOSE)], env, self.lines)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)  # type: ignore[arg-type]
            self.process = None

    def sign_in(self, person: str, client: str) -> str:
        """The ID token the IdP gives ``client`` when ``person`` signs in (what SSO leaves the MCP host with)."""
        password = PEOPLE[person]["password"]
        r = httpx.post(self.issuer + "/login", data={"username": person, "password": password, "client_id": client})
        assert r.status_code == 200, r.text
        return str(r.json()["id_token"])

    def id_jag(self, person: str, client: str, audience: str, resource: str, scope: str | None = None) -> str:
        """RFC 8693 token exchange at the IdP: ``person``'s ID token for an ID-JAG for ``client``."""
        data = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "subject_token": self.sign_in(person, client),
            "audience": audience,
            "resource": resource,
        }
        if scope is not None:
            data["scope"] = scope
        r = httpx.post(self.issuer + "/token", data=data, auth=(client, CLIENTS[client]["secret"]), timeout=30)
        assert r.status_code == 200, r.text
        assert r.json()["issued_token_type"] == "urn:ietf:params:oauth:token-type:id-jag"
        return str(r.json()["access_token"])


def signing_key(kid: str) -> jwk.JWK:
    return jwk.JWK.generate(kty="RSA", size=2048, kid=kid, use="sig", alg="RS256")


@dataclass
class Servers:
    idp: IdP
    stranger: IdP  # a working IdP this site does not trust
    server: OAuthServer

    @property
    def issuer(self) -> str:
        """Our authorization server's issuer (its RFC 8414 metadata's), the audience of its ID-JAGs."""
        return str(metadata(self.server)["issuer"])


def metadata(server: OAuthServer) -> dict[str, Any]:
    r = httpx.get(server.base + "/.well-known/oauth-authorization-server", timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    tmp = tmp_path_factory.mktemp("idjag")
    idp = IdP(free_port(), signing_key("idp-1"), tmp / "idp.json")
    stranger = IdP(free_port(), signing_key("stranger-1"), tmp / "stranger.json")
    server = start_oauth_server(tmp, settings="tests.id_jag.settings", setup=SETUP, MCP_IDJAG_ISSUERS=idp.issuer)
    try:
        idp.start()
        stranger.start()
        yield Servers(idp, stranger, server)
    finally:
        stranger.stop()
        idp.stop()
        stop_oauth_server(server)


@pytest.fixture
def live(servers: Servers) -> Iterator[Servers]:
    """The servers; the test fails if daphne answered 500 or logged a traceback meanwhile."""
    log = servers.server.live.log
    start = log.stat().st_size
    yield servers
    with log.open("rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    assert " 500 " not in text and "Traceback" not in text, text


def exchange(servers: Servers, assertion: str, client: str = "agent-one", **extra: str) -> httpx.Response:
    """The RFC 7523 jwt-bearer grant at our token endpoint, the client authenticated by HTTP Basic."""
    return httpx.post(
        servers.server.base + "/oauth/token/",
        data={"grant_type": GRANT, "assertion": assertion, **extra},
        auth=(client, CLIENTS[client]["secret"]),
        timeout=30,
    )


def refused(response: httpx.Response, error: str = "invalid_grant") -> str:
    assert response.status_code in (400, 401), response.text
    body = response.json()
    assert body["error"] == error, body
    assert "access_token" not in body
    return str(body.get("error_description", ""))


async def call(servers: Servers, token: str, tool: str, **arguments: Any) -> Any:
    """``tools/call`` through the official SDK client, the token sent as its bearer header."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(servers.server.url, http_client=http), read_timeout_seconds=30) as c:
            return await c.call_tool(tool, arguments)


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    inner = getattr(error, "exceptions", None)  # an (anyio) exception group
    if isinstance(inner, (list, tuple)):
        return [leaf for each in inner for leaf in leaves(each)]
    return [error]


def text(result: Any) -> str:
    return str(result.content[0].text)


def good_id_jag(servers: Servers, person: str = "alice", client: str = "agent-one", scope: str | None = None) -> str:
    return servers.idp.id_jag(person, client, servers.issuer, servers.server.url, scope)


def forge(key: jwk.JWK, claims: dict[str, Any], alg: str = "RS256", typ: str = "oauth-id-jag+jwt") -> str:
    token = jwt.JWT(header={"alg": alg, "kid": key.get("kid"), "typ": typ}, claims=claims)
    token.make_signed_token(key)
    return str(token.serialize())


def claims(servers: Servers, **override: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {
        "iss": servers.idp.issuer,
        "sub": "alice",
        "email": "alice@example.com",
        "aud": servers.issuer,
        "client_id": "agent-one",
        "jti": str(uuid.uuid4()),
        "iat": now,
        "exp": now + 300,
        "resource": servers.server.url,
        "scope": "mcp",
    }
    base.update(override)
    return base


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# -- what works ----------------------------------------------------------------------------------------------


def test_metadata_offers_the_jwt_bearer_grant(live: Servers) -> None:
    assert GRANT in metadata(live.server)["grant_types_supported"]


async def test_an_id_jag_gets_a_token_that_acts_as_the_user(live: Servers) -> None:
    r = exchange(live, good_id_jag(live))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "Bearer" and "refresh_token" not in body
    assert set(body["scope"].split()) == {"mcp", "secret:read"}
    assert r.headers["Cache-Control"] == "no-store"
    assert text(await call(live, body["access_token"], "secret")) == "the secret is 42"
    teams = await call(live, body["access_token"], "my_teams")
    assert json.loads(text(teams))["result"] == ["librarians"]  # alice's own Django groups
    # Bound to this resource (RFC 8707), as the server's other tokens.
    out = live.server.shell(
        "import hashlib; from oauth2_provider.models import AccessToken; "
        f"c = hashlib.sha256({body['access_token']!r}.encode()).hexdigest(); "
        "t = AccessToken.objects.get(token_checksum=c); print(t.user.username, t.resource)"
    )
    assert out == f"alice ['{live.server.url}']"


async def test_the_official_sdk_clients_identity_assertion_flow(live: Servers) -> None:
    """The SDK's ``IdentityAssertionOAuthProvider``: our metadata, the jwt-bearer grant, then the tool calls."""
    asked: list[tuple[str, str]] = []

    async def fetch_id_jag(audience: str, resource: str) -> str:
        asked.append((audience, resource))
        return await anyio.to_thread.run_sync(lambda: live.idp.id_jag("bob", "agent-one", audience, resource))

    storage = Storage()
    provider = IdentityAssertionOAuthProvider(
        server_url=live.server.url,
        storage=storage,
        client_id="agent-one",
        client_secret=CLIENTS["agent-one"]["secret"],
        issuer=live.issuer,
        assertion_provider=fetch_id_jag,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
        async with Client(streamable_http_client(live.server.url, http_client=http), read_timeout_seconds=30) as c:
            teams = await c.call_tool("my_teams", {})
            assert json.loads(text(teams))["result"] == []  # bob's groups: none
            names = {tool.name for tool in (await c.list_tools()).tools}
    assert asked == [(live.issuer, live.server.url)]
    assert storage.tokens is not None and storage.tokens.scope == "mcp"  # secret:read is the librarians'
    assert "secret" not in names and "my_teams" in names


def test_a_token_request_for_another_resource_is_refused(live: Servers) -> None:
    r = exchange(live, good_id_jag(live), resource="https://other.example/mcp/")
    assert refused(r, "invalid_target")


def test_a_disabled_client_gets_nothing(live: Servers) -> None:
    assertion = good_id_jag(live, "alice", "agent-two")
    live.server.shell(
        "from django_mcp.models import MCPClient; MCPClient.objects.filter(client_id='agent-two').update(disabled=True)"
    )
    try:
        assert exchange(live, assertion, "agent-two").status_code == 401
    finally:
        live.server.shell(
            "from django_mcp.models import MCPClient; MCPClient.objects.filter(client_id='agent-two')"
            ".update(disabled=False)"
        )
    assert exchange(live, assertion, "agent-two").status_code == 200


# -- attacks -------------------------------------------------------------------------------------------------


async def test_scope_is_narrowed_to_the_users_groups_and_the_clients_allowed_scopes(live: Servers) -> None:
    bob = exchange(live, good_id_jag(live, "bob"))  # the IdP grants secret:read; bob is not a librarian
    assert bob.status_code == 200, bob.text
    assert bob.json()["scope"] == "mcp"
    with pytest.raises(BaseException) as denied:  # 403 insufficient_scope, raised inside the SDK's task group
        await call(live, bob.json()["access_token"], "secret")
    assert "lacks the scope" in repr(leaves(denied.value))
    assert json.loads(text(await call(live, bob.json()["access_token"], "my_teams")))["result"] == []
    # Asking for it explicitly gets nothing more.
    assert refused(exchange(live, good_id_jag(live, "bob"), scope="secret:read"), "invalid_scope")
    # agent-two may hold only mcp, whatever the IdP and the user allow.
    two = exchange(live, good_id_jag(live, "alice", "agent-two"), "agent-two")
    assert two.status_code == 200, two.text
    assert two.json()["scope"] == "mcp"
    # The IdP's scope claim bounds the token too.
    narrow = exchange(live, good_id_jag(live, "alice", scope="mcp"))
    assert narrow.status_code == 200 and narrow.json()["scope"] == "mcp"


def test_replayed_id_jag_is_refused(live: Servers) -> None:
    assertion = good_id_jag(live)
    assert exchange(live, assertion).status_code == 200
    assert "already used" in refused(exchange(live, assertion))


def test_id_jag_for_another_client_is_refused(live: Servers) -> None:
    assertion = good_id_jag(live, "alice", "agent-one")
    assert "another client" in refused(exchange(live, assertion, "agent-two"))
    assert exchange(live, assertion, "agent-one").status_code == 200  # not spent by the refusal above


def test_wrong_client_secret_is_invalid_client(live: Servers) -> None:
    r = httpx.post(
        live.server.base + "/oauth/token/",
        data={"grant_type": GRANT, "assertion": good_id_jag(live)},
        auth=("agent-one", "agent-two-secret"),
        timeout=30,
    )
    assert r.status_code == 401
    assert refused(r, "invalid_client") is not None


def test_id_jag_for_another_audience_or_resource_is_refused(live: Servers) -> None:
    other_as = live.idp.id_jag("alice", "agent-one", "https://other-as.example/", live.server.url)
    assert "(aud)" in refused(exchange(live, other_as))
    other_rs = live.idp.id_jag("alice", "agent-one", live.issuer, "https://other.example/mcp/")
    assert "another resource" in refused(exchange(live, other_rs))
    unbound = claims(live)
    del unbound["resource"]  # required by the MCP profile
    assert "(resource)" in refused(exchange(live, forge(live.idp.key, unbound)))


def test_expired_or_future_id_jag_is_refused(live: Servers) -> None:
    now = int(time.time())
    expired = forge(live.idp.key, claims(live, iat=now - 900, exp=now - 600))
    assert "expired" in refused(exchange(live, expired))
    future = forge(live.idp.key, claims(live, iat=now + 600, exp=now + 900))
    assert "future" in refused(exchange(live, future))
    no_jti = claims(live)
    del no_jti["jti"]
    assert "jti" in refused(exchange(live, forge(live.idp.key, no_jti)))
    # Signed by the IdP's own key, so the refusals above are the claims'.
    assert exchange(live, forge(live.idp.key, claims(live))).status_code == 200


def test_untrusted_issuer_is_refused_without_a_fetch(live: Servers) -> None:
    stranger = live.stranger.id_jag("alice", "agent-one", live.issuer, live.server.url)
    assert "trusted" in refused(exchange(live, stranger))
    assert not [line for line in live.stranger.lines if line.startswith("FETCH")]  # its keys were never asked for
    # A stranger's assertion naming the trusted issuer fails its signature check.
    posing = forge(live.stranger.key, claims(live))
    assert "signed" in refused(exchange(live, posing)) or "signature" in refused(exchange(live, posing))


def test_alg_none_and_hs256_with_the_public_key_are_refused(live: Servers) -> None:
    body = b64(json.dumps(claims(live)).encode())
    none = b64(json.dumps({"alg": "none", "typ": "oauth-id-jag+jwt"}).encode()) + "." + body + "."
    assert "algorithm" in refused(exchange(live, none))
    public = live.idp.key.export_to_pem().decode()
    hmac = jwk.JWK(kty="oct", k=b64(public.encode()), kid=live.idp.key.get("kid"))
    assert "algorithm" in refused(exchange(live, forge(hmac, claims(live), alg="HS256")))


def test_a_jwt_that_is_not_an_id_jag_is_refused(live: Servers) -> None:
    id_token = live.idp.sign_in("alice", "agent-one")  # signed by the trusted IdP, typ JWT
    assert "(typ)" in refused(exchange(live, id_token))
    access_token_typ = forge(live.idp.key, claims(live), typ="at+jwt")
    assert "(typ)" in refused(exchange(live, access_token_typ))


def test_inactive_or_unknown_user_is_refused(live: Servers) -> None:
    assert "inactive" in refused(exchange(live, good_id_jag(live, "carol")))
    stranger = forge(live.idp.key, claims(live, email="mallory@example.com"))
    assert "no user" in refused(exchange(live, stranger))


def test_bad_requests_are_oauth_errors(live: Servers) -> None:
    assert refused(exchange(live, ""), "invalid_request")
    assert refused(exchange(live, "not.a.jwt"))
    assert refused(exchange(live, "x" * 20000))
    public = httpx.post(
        live.server.base + "/oauth/token/",
        data={"grant_type": GRANT, "assertion": good_id_jag(live), "client_id": "agent-one"},
        timeout=30,
    )
    assert public.status_code == 401 and public.json()["error"] == "invalid_client"


# -- WSGI mode -------------------------------------------------------------------------------------------------


@pytest.mark.own_config  # the front end is what differs here; pg-redis runs the daphne tests (the replay store)
async def test_wsgi_mode_exchanges_and_refuses_the_same_way(servers: Servers, tmp_path: Path) -> None:
    """gunicorn, two sync workers, the endpoint as a Django view: the exchange, a call as the user, and the
    refusals (a replay through the other worker, an ID-JAG made for the daphne server) as under daphne."""
    env = server_env(
        tmp_path, settings="tests.id_jag.settings", MCP_IDJAG_ISSUERS=servers.idp.issuer, MCP_IDJAG_WSGI="1"
    )
    wsgi = OAuthServer(start_wsgi_server(env, tmp_path / "gunicorn.log", app="tests.oauth.wsgi:application"))
    try:
        wsgi.shell(SETUP)
        here = Servers(servers.idp, servers.stranger, wsgi)
        assertion = good_id_jag(here)
        r = exchange(here, assertion)
        assert r.status_code == 200, r.text
        assert text(await call(here, r.json()["access_token"], "secret")) == "the secret is 42"
        assert "already used" in refused(exchange(here, assertion))  # replayed, whichever worker answers
        assert refused(exchange(here, good_id_jag(servers)))  # made for the daphne server: another audience
    finally:
        stop_oauth_server(wsgi)
    log = (tmp_path / "gunicorn.log").read_text(errors="replace")
    assert "Traceback" not in log, log
