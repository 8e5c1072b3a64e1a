"""Tokens from the company's identity provider: a real OpenID Provider (npm ``oidc-provider``) issues RFC 9068
JWT access tokens for this endpoint (``JWT_ISSUER``), and a live daphne verifies them against the keys the
provider publishes.

Two users through two clients (``alice-cli`` and ``alice-web`` are alice, ``bob-cli`` is bob); the attacks are
forged with the provider's own private key where that is the point (expired, wrong issuer...) and with keys it
never published where that is (``alg: none``, HS256 keyed with its public key, an unknown ``kid`` flood).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from jwcrypto import jwk, jwt
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthToken

from tests.oauth.kit import INIT, OAuthServer, Storage, mcp_post, start_oauth_server, stop_oauth_server
from tests.support.node import start_node
from tests.support.servers import IN_CI, ROOT, free_port, server_env, stop_process
from tests.support.wsgi_server import start_wsgi_server

OIDC_PROVIDER = ROOT / ".node" / "node_modules" / "oidc-provider" / "lib" / "index.js"
OTHER_RESOURCE = "https://other.example/mcp/"

SETUP = """
from django.contrib.auth.models import Group, User
for name, active in (("alice", True), ("bob", True), ("carol", False)):
    user = User.objects.create_user(name, email=name.capitalize() + "@Example.com", is_active=active)
    user.groups.add(Group.objects.get_or_create(name=name + "-team")[0])
# Two accounts sharing one address: a token naming it cannot tell which, so it is refused.
User.objects.create_user("erin", email="shared@example.com")
User.objects.create_user("erin-admin", email="Shared@Example.com", is_staff=True)
User.objects.create_user("frank", email="frank@example.com")
"""

#: Each client of the provider stands for one person: the claims the provider adds to its tokens.
PEOPLE = {
    "alice-cli": {"email": "alice@example.com"},
    "alice-web": {"email": "alice@example.com"},
    "bob-cli": {"email": "bob@example.com", "groups": ["library-staff"]},
    "carol-cli": {"email": "carol@example.com"},
    "dave-cli": {"email": "dave@example.com"},
    "erin-cli": {"email": "shared@example.com"},
    "frank-cli": {"email": "frank@example.com"},
}

#: Outside CI a checkout without `make node` skips; under CI=true the tests run and fail without the provider.
#: own_config: what is checked is the provider's tokens and keys, not the database or the layer (pg-redis skips it).
pytestmark = [
    pytest.mark.skipif(
        not OIDC_PROVIDER.exists() and not IN_CI, reason="npm oidc-provider is not installed (make node)"
    ),
    pytest.mark.own_config,
]


def signing_key(kid: str) -> jwk.JWK:
    return jwk.JWK.generate(kty="RSA", size=2048, kid=kid, use="sig", alg="RS256")


@dataclass
class IdP:
    """The ``oidc-provider`` process: its issuer, its current private keys and the key-set fetches it saw."""

    port: int
    keys_file: Path
    resources: list[str]
    keys: list[jwk.JWK]
    process: subprocess.Popen[str] | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def fetches(self) -> int:
        return sum(1 for line in list(self.lines) if line.startswith("JWKS "))

    def start(self) -> None:
        self.keys_file.write_text(json.dumps({"keys": [json.loads(k.export_private()) for k in self.keys]}))
        env = {
            **os.environ,
            "IDP_PORT": str(self.port),
            "IDP_RESOURCES": json.dumps(self.resources),
            "IDP_JWKS": str(self.keys_file),
            "IDP_PEOPLE": json.dumps(PEOPLE),
        }
        script = ROOT / "tests" / "idp" / "provider.mjs"
        self.process = start_node(script, [str(OIDC_PROVIDER)], env, self.lines)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)  # type: ignore[arg-type]
            self.process = None

    def token(self, client: str, scope: str = "mcp", resource: str | None = None) -> str:
        r = httpx.post(
            self.issuer + "/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource or self.resources[0]},
            auth=(client, f"{client}-secret"),
            timeout=30,
        )
        assert r.status_code == 200, r.text
        return str(r.json()["access_token"])


@dataclass
class Servers:
    idp: IdP
    asgi: OAuthServer  # daphne
    wsgi: OAuthServer  # gunicorn, two sync workers (each keeps its own keys)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    tmp = tmp_path_factory.mktemp("jwt")
    idp = IdP(free_port(), tmp / "idp-keys.json", [], [signing_key("k1")])
    env = {"MCP_JWT_ISSUER": idp.issuer, "MCP_JWT_KEYS_MIN_REFRESH": "2", "MCP_JWT_ALGORITHMS": "RS256 PS256 ES256"}
    asgi = start_oauth_server(tmp, settings="tests.jwt_rs.settings", setup=SETUP, **env)
    wsgi_tmp = tmp_path_factory.mktemp("jwt-wsgi")
    live = start_wsgi_server(
        server_env(wsgi_tmp, settings="tests.jwt_rs.settings", MCP_JWT_WSGI="1", **env),
        wsgi_tmp / "gunicorn.log",
        app="tests.oauth.wsgi:application",
    )
    wsgi = OAuthServer(live)
    wsgi.shell(SETUP)
    idp.resources = [asgi.url, OTHER_RESOURCE, wsgi.url]
    try:
        idp.start()
        yield Servers(idp, asgi, wsgi)
    finally:
        idp.stop()
        stop_oauth_server(wsgi)
        stop_oauth_server(asgi)


@pytest.fixture
def idp(servers: Servers) -> IdP:
    return servers.idp


@pytest.fixture
def server(servers: Servers) -> Iterator[OAuthServer]:
    """The resource server; the test fails if it answered 500 or logged a traceback meanwhile."""
    live = servers.asgi
    start = live.live.log.stat().st_size
    yield live
    with live.live.log.open("rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    assert " 500 " not in text and "Traceback" not in text, text


async def call(server: OAuthServer, token: str, tool: str, **arguments: Any) -> Any:
    """``tools/call`` through the official SDK client, the token sent as its bearer header."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with Client(streamable_http_client(server.url, http_client=http), read_timeout_seconds=30) as client:
            return await client.call_tool(tool, arguments)


def text(result: Any) -> str:
    return str(result.content[0].text)


def listed(result: Any) -> list[str]:
    """A list tool's result: its structured content (``{"result": [...]}``)."""
    assert not result.is_error, text(result)
    return list(json.loads(text(result))["result"])


def refused(server: OAuthServer, token: str) -> str:
    """The ``error_description`` of a 401 ``invalid_token`` for ``token``."""
    r = mcp_post(server, token, INIT)
    challenge = r.headers.get("www-authenticate", "")
    assert r.status_code == 401, (r.status_code, r.text)
    assert 'error="invalid_token"' in challenge and "resource_metadata=" in challenge, challenge
    return challenge.split('error_description="', 1)[1].split('"', 1)[0]


def forge(key: jwk.JWK, claims: dict[str, Any], alg: str = "RS256", **header: Any) -> str:
    token = jwt.JWT(header={"alg": alg, "kid": key.get("kid"), "typ": "at+jwt", **header}, claims=claims)
    token.make_signed_token(key)
    return str(token.serialize())


def claims(idp: IdP, server: OAuthServer, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {
        "iss": idp.issuer,
        "aud": server.url,
        "sub": "alice-cli",
        "client_id": "alice-cli",
        "email": "alice@example.com",
        "scope": "mcp",
        "iat": now,
        "exp": now + 300,
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# -- what works --------------------------------------------------------------------------------------------------


async def test_the_providers_token_acts_as_the_mapped_user(idp: IdP, server: OAuthServer) -> None:
    for client in ("alice-cli", "alice-web"):
        token = idp.token(client)
        assert text(await call(server, token, "whoami")) == "alice authenticated=True"
        assert listed(await call(server, token, "my_teams")) == ["alice-team"]
    bob = idp.token("bob-cli")
    assert text(await call(server, bob, "whoami")) == "bob authenticated=True"
    assert listed(await call(server, bob, "team_members", team="bob-team")) == ["bob"]


async def test_the_sdk_finds_the_provider_on_its_own(idp: IdP, server: OAuthServer) -> None:
    """No token given: the official SDK goes from the 401 to the protected-resource metadata, then to the
    provider named there, and gets a token for this endpoint by client credentials (RFC 8707 ``resource``)."""
    storage = Storage()
    provider = ClientCredentialsOAuthProvider(server.url, storage, "bob-cli", "bob-cli-secret", issuer=idp.issuer)
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
        async with Client(streamable_http_client(server.url, http_client=http), read_timeout_seconds=30) as client:
            assert text(await client.call_tool("whoami", {})) == "bob authenticated=True"
    assert storage.tokens is not None


async def test_the_sdk_steps_up_from_the_challenge(idp: IdP, server: OAuthServer) -> None:
    """Holding a token with "mcp" only, the SDK meets the 403, asks the provider for the scope the
    challenge names on top of what it holds, and retries the call."""
    storage = Storage()
    storage.tokens = OAuthToken(access_token=idp.token("alice-cli", scope="mcp"), token_type="Bearer", scope="mcp")
    provider = ClientCredentialsOAuthProvider(
        server.url, storage, "alice-cli", "alice-cli-secret", scope="mcp", issuer=idp.issuer
    )
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
        async with Client(streamable_http_client(server.url, http_client=http), read_timeout_seconds=30) as client:
            assert text(await client.call_tool("whoami", {})) == "alice authenticated=True"
            assert text(await client.call_tool("secret", {})) == "the secret is 42"
    assert storage.tokens is not None and "secret:read" in (storage.tokens.scope or "").split()


def test_protected_resource_metadata_names_the_provider(idp: IdP, server: OAuthServer) -> None:
    r = httpx.get(server.base + "/.well-known/oauth-protected-resource/mcp/", timeout=30)
    assert r.status_code == 200 and r.json()["authorization_servers"] == [idp.issuer], r.text
    assert r.json()["resource"] == server.url


# -- two users, two clients -------------------------------------------------------------------------------------


async def test_a_user_never_sees_another_users_objects(idp: IdP, server: OAuthServer) -> None:
    bob = idp.token("bob-cli")
    stolen = await call(server, bob, "team_members", team="alice-team")
    assert stolen.is_error and "No team" in text(stolen)
    assert listed(await call(server, bob, "my_teams")) == ["bob-team"]
    # The same for alice, through either of her clients.
    for client in ("alice-cli", "alice-web"):
        stolen = await call(server, idp.token(client), "team_members", team="bob-team")
        assert stolen.is_error


def test_a_session_stays_with_the_client_that_opened_it(idp: IdP, server: OAuthServer) -> None:
    """alice's token from her other client, or bob's, cannot use the session alice-cli opened."""
    init = mcp_post(server, idp.token("alice-cli"), INIT)
    assert init.status_code == 200, init.text
    headers = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert mcp_post(server, idp.token("alice-cli"), ping, **headers).status_code == 200
    for other in ("alice-web", "bob-cli"):
        assert mcp_post(server, idp.token(other), ping, **headers).status_code == 404


def test_an_inactive_unknown_or_ambiguous_user_is_refused(idp: IdP, server: OAuthServer) -> None:
    assert refused(server, idp.token("carol-cli")) == "The access token's user is inactive."
    assert refused(server, idp.token("dave-cli")) == "The access token's email matches no user of this site."
    # Two Django accounts share the address (erin and erin-admin): neither is picked.
    assert refused(server, idp.token("erin-cli")) == "The access token's email matches more than one user."


def test_disabling_the_user_refuses_their_valid_token_at_once(idp: IdP, server: OAuthServer) -> None:
    token = idp.token("frank-cli")
    init = mcp_post(server, token, INIT)
    assert init.status_code == 200
    server.shell(
        'from django.contrib.auth.models import User; User.objects.filter(username="frank").update(is_active=False)'
    )
    headers = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    r = mcp_post(server, token, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, **headers)
    assert r.status_code == 401 and "inactive" in r.headers["www-authenticate"], r.text


# -- forged and misdirected tokens --------------------------------------------------------------------------------


def test_a_token_for_another_resource_is_refused(idp: IdP, server: OAuthServer) -> None:
    assert refused(server, idp.token("alice-cli", resource=OTHER_RESOURCE)) == (
        "The access token is not valid for this resource."
    )


def test_expired_and_not_yet_valid_tokens_are_refused(idp: IdP, server: OAuthServer) -> None:
    key, now = idp.keys[0], int(time.time())
    expired = forge(key, claims(idp, server, iat=now - 600, exp=now - 120))
    assert refused(server, expired) == "The access token has expired."
    assert refused(server, forge(key, claims(idp, server, nbf=now + 600))) == "The access token is not valid yet (nbf)."
    assert refused(server, forge(key, claims(idp, server, exp=None))) == "The access token has no expiry (exp)."
    # Within the leeway (30 s) an expiry just past still counts: clocks differ a little.
    assert mcp_post(server, forge(key, claims(idp, server, exp=now - 5)), INIT).status_code == 200


def test_another_issuer_is_not_trusted(idp: IdP, server: OAuthServer) -> None:
    """Signed with the provider's own key but claiming another issuer; or claiming this one with another key."""
    before = idp.fetches
    assert refused(server, forge(idp.keys[0], claims(idp, server, iss="http://127.0.0.1:9/other")))
    rogue = signing_key(str(idp.keys[0].get("kid")))  # the provider's kid, not its key
    assert refused(server, forge(rogue, claims(idp, server))) == "The access token's signature is invalid."
    assert idp.fetches == before  # nothing fetched for either


def test_alg_none_and_hmac_keyed_with_the_public_key_are_refused(idp: IdP, server: OAuthServer) -> None:
    body = b64(json.dumps(claims(idp, server)).encode())
    unsigned = b64(json.dumps({"alg": "none", "typ": "at+jwt", "kid": "k1"}).encode()) + "." + body + "."
    assert refused(server, unsigned) == "The access token's signature algorithm is not accepted."
    # HS256 whose "secret" is the provider's public key (PEM and JWK forms): an attacker knows both.
    public = idp.keys[0].export_to_pem(private_key=False, password=None)
    for secret in (public, idp.keys[0].export_public().encode()):
        hmac = jwk.JWK(kty="oct", k=b64(secret), kid="k1")
        forged = forge(hmac, claims(idp, server), alg="HS256")
        assert refused(server, forged) == "The access token's signature algorithm is not accepted."


def test_a_key_is_used_only_with_its_own_algorithm(idp: IdP, server: OAuthServer) -> None:
    """The provider publishes k1 for RS256: a PS256 signature by the same key is not accepted."""
    forged = forge(idp.keys[0], claims(idp, server), alg="PS256")
    assert refused(server, forged) == "The access token's algorithm is not its key's."


def test_an_id_token_or_other_jwt_type_is_refused(idp: IdP, server: OAuthServer) -> None:
    forged = forge(idp.keys[0], claims(idp, server), typ="dpop+jwt")
    assert refused(server, forged) == "The JWT is not an access token (typ)."


def test_unknown_kid_flood_refetches_at_a_bounded_rate(idp: IdP, server: OAuthServer) -> None:
    time.sleep(2.1)  # past JWT_KEYS_MIN_REFRESH (2 s in this project) since any earlier fetch
    before = idp.fetches
    started = time.monotonic()
    stranger = jwk.JWK.generate(kty="EC", crv="P-256")
    for n in range(40):
        forged = forge(stranger, claims(idp, server), alg="ES256", kid=f"made-up-{n}")
        assert refused(server, forged) == "The access token is signed with a key the issuer does not publish."
    elapsed = time.monotonic() - started
    # One fetch per 2 s window at most, whatever the number of unknown kids.
    assert 1 <= idp.fetches - before <= int(elapsed / 2) + 1, (idp.fetches - before, elapsed)


def test_a_rotated_key_is_fetched_and_accepted(idp: IdP, server: OAuthServer) -> None:
    """The provider starts signing with a new key: the first token with its kid fetches the key set again."""
    token = idp.token("alice-cli")
    assert mcp_post(server, token, INIT).status_code == 200
    idp.stop()
    idp.keys = [signing_key("k2"), *idp.keys]  # k2 signs from now on; k1 is still published
    idp.start()
    time.sleep(2.1)  # past the minimum interval between fetches
    before = idp.fetches
    rotated = idp.token("alice-cli")
    assert json.loads(base64.urlsafe_b64decode(rotated.split(".")[0] + "=="))["kid"] == "k2"
    assert mcp_post(server, rotated, INIT).status_code == 200
    assert idp.fetches == before + 1
    assert mcp_post(server, token, INIT).status_code == 200  # the k1 token too, without another fetch
    assert idp.fetches == before + 1


def test_keys_already_fetched_keep_serving_while_the_provider_is_down(idp: IdP, server: OAuthServer) -> None:
    idp.stop()
    try:
        time.sleep(2.1)  # past the minimum interval: an unknown kid now tries to fetch, and fails
        stranger = jwk.JWK.generate(kty="EC", crv="P-256")
        forged = forge(stranger, claims(idp, server), alg="ES256", kid="made-up")
        assert refused(server, forged) == "The access token is signed with a key the issuer does not publish."
        assert mcp_post(server, forge(idp.keys[0], claims(idp, server)), INIT).status_code == 200
    finally:
        idp.start()


# -- scopes and step-up -------------------------------------------------------------------------------------------


async def test_too_few_scopes_is_a_403_challenge_and_stepping_up_works(idp: IdP, server: OAuthServer) -> None:
    narrow = idp.token("alice-cli", scope="mcp")
    init = mcp_post(server, narrow, INIT)
    assert init.status_code == 200
    headers = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    secret = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "secret", "arguments": {}}}
    r = mcp_post(server, narrow, secret, **headers)
    assert r.status_code == 403, r.text
    challenge = r.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="secret:read"' in challenge, challenge
    metadata = server.base + "/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{metadata}"' in challenge, challenge
    # Completing an argument of a scoped prompt is using it: the same challenge, naming its scope.
    complete = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "completion/complete",
        "params": {"ref": {"type": "ref/prompt", "name": "secret_prompt"}, "argument": {"name": "x", "value": ""}},
    }
    r = mcp_post(server, narrow, complete, **headers)
    assert r.status_code == 403 and 'scope="secret:read"' in r.headers["www-authenticate"], r.text
    # Step up: a token holding the scope the challenge named; the same calls succeed.
    wide = idp.token("alice-cli", scope="mcp secret:read")
    assert text(await call(server, wide, "secret")) == "the secret is 42"
    init = mcp_post(server, wide, INIT)
    headers["Mcp-Session-Id"] = init.headers["mcp-session-id"]
    r = mcp_post(server, wide, complete, **headers)
    assert r.status_code == 200 and r.json()["result"]["completion"]["values"] == [], r.text


async def test_a_group_claim_grants_the_mapped_scope(idp: IdP, server: OAuthServer) -> None:
    """bob is in the provider's "library-staff" group, which JWT_ROLE_SCOPES maps to secret:read."""
    assert text(await call(server, idp.token("bob-cli", scope="mcp"), "secret")) == "the secret is 42"


# -- WSGI mode --------------------------------------------------------------------------------------------------


async def test_wsgi_mode_verifies_the_same_way(idp: IdP, servers: Servers) -> None:
    """gunicorn, two worker processes: each fetches the keys once; the user, the attacks and step-up as above."""
    wsgi = servers.wsgi
    token = idp.token("alice-cli", resource=wsgi.url)
    assert text(await call(wsgi, token, "whoami")) == "alice authenticated=True"
    assert listed(await call(wsgi, idp.token("bob-cli", resource=wsgi.url), "my_teams")) == ["bob-team"]
    # A token for the daphne endpoint is not one for this one.
    assert refused(wsgi, idp.token("alice-cli")) == "The access token is not valid for this resource."
    body = b64(json.dumps(claims(idp, wsgi)).encode())
    unsigned = b64(json.dumps({"alg": "none", "typ": "at+jwt", "kid": "k1"}).encode()) + "." + body + "."
    assert refused(wsgi, unsigned) == "The access token's signature algorithm is not accepted."
    call_secret = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "secret", "arguments": {}}}
    init = mcp_post(wsgi, token, INIT)
    assert init.status_code == 200, init.text
    headers = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    r = mcp_post(wsgi, token, call_secret, **headers)
    assert r.status_code == 403 and 'scope="secret:read"' in r.headers["www-authenticate"], r.text
    wide = idp.token("alice-cli", scope="mcp secret:read", resource=wsgi.url)
    assert text(await call(wsgi, wide, "secret")) == "the secret is 42"
