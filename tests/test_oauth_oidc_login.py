"""Signing in through the company IdP, behind django-oauth-toolkit: the OIDC login recipe, end to end.

Three real processes: daphne serving the test project with mozilla-django-oidc as its login
(``tests.oidc.settings``), npm ``oidc-provider`` as the company IdP (``tests/oidc/idp.mjs``, its
directory of people a JSON file the tests edit), and Debian's chromium driven by Playwright as the
person at the keyboard. The official SDK's ``OAuthClientProvider`` registers itself with DOT (RFC 7591)
and opens ``/oauth/authorize/``; DOT sends the anonymous browser to the project's OIDC login, which
sends it to the IdP's sign-in page; back at DOT, the person consents and the SDK gets its token.

The IdP's ``groups`` claim becomes the Django user's groups at each sign-in: "user-viewers" carries the
Django permission ``auth.view_user`` (the ``count_users`` tool), and ``SCOPE_GROUPS`` reserves the
``secret:read`` scope (the ``secret`` tool) to "vault-readers".
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from tests.oauth.kit import INIT, OAuthServer, Storage, mcp_post, start_oauth_server, stop_oauth_server
from tests.support.browser import callback, need_chromium, page  # noqa: F401 - shared fixtures
from tests.support.node import NODE
from tests.support.servers import ROOT, free_port, server_env
from tests.support.wsgi_server import start_wsgi_server

OIDC_PROVIDER = ROOT / ".node" / "node_modules" / "oidc-provider" / "lib" / "index.js"
IDP_SCRIPT = ROOT / "tests" / "oidc" / "idp.mjs"
RP_SECRET = "books-rp-secret-for-tests-only"
PASSWORD = "company password 1"
#: own_config: the sign-in, the groups and the scopes do not depend on the database or the layer (pg-redis skips it).
pytestmark = pytest.mark.own_config

#: The company directory: who exists at the IdP, and in which groups.
PEOPLE: dict[str, dict[str, Any]] = {
    "alice": {"email": "alice@example.com", "groups": ["vault-readers", "user-viewers"]},
    "bob": {"email": "bob@example.com", "groups": ["sales"]},
    "dave": {"email": "dave@example.com", "groups": ["vault-readers"]},
    "frank": {"email": "frank@example.com", "groups": ["vault-readers"]},
    "erin": {"email": "erin@example.com", "groups": []},
    # Two IdP accounts sharing one address, which a local Django account (with a permission) also has.
    "gina": {"email": "shared@example.com", "groups": []},
    "hank": {"email": "shared@example.com", "groups": []},
}

#: The site's own groups (an IdP group the site does not have, like "sales", is ignored).
SETUP = """
from django.contrib.auth.models import Group, Permission
Group.objects.create(name="vault-readers")
Group.objects.create(name="user-viewers").permissions.add(Permission.objects.get(codename="view_user"))
from django.contrib.auth.models import User
local = User.objects.create_user("shared-local", email="shared@example.com", password="local password 1")
local.user_permissions.add(Permission.objects.get(codename="view_user"))
"""


@dataclass
class IdP:
    url: str
    directory: Path
    process: subprocess.Popen[bytes]

    def set(self, login: str, **changes: Any) -> None:
        """Edit the company directory (the IdP reads it at every sign-in and token)."""
        people = json.loads(self.directory.read_text())
        people[login].update(changes)
        self.directory.write_text(json.dumps(people))


@dataclass
class Site:
    server: OAuthServer
    idp: IdP


def start_idp(tmp: Path, port: int, redirect_uri: str) -> IdP:
    directory = tmp / "directory.json"
    directory.write_text(json.dumps({name: {**p, "password": PASSWORD} for name, p in PEOPLE.items()}))
    log = (tmp / "idp.log").open("wb")
    process = subprocess.Popen(
        [str(NODE), str(IDP_SCRIPT), str(OIDC_PROVIDER), str(port), str(directory), redirect_uri, RP_SECRET],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert process.poll() is None, (tmp / "idp.log").read_text()
        try:
            if httpx.get(url + "/.well-known/openid-configuration", timeout=2).status_code == 200:
                return IdP(url, directory, process)
        except httpx.TransportError:
            time.sleep(0.1)
    process.terminate()
    raise AssertionError("the IdP did not start: " + (tmp / "idp.log").read_text())


def start_site(tmp: Path, *, wsgi: bool = False) -> Site:
    """The project (daphne, or gunicorn in WSGI mode) and its IdP, each told where the other is."""
    need_chromium()
    if not (NODE.exists() and OIDC_PROVIDER.exists()):
        pytest.fail("npm oidc-provider is not installed: `make node` installs it")
    idp_port = free_port()
    rp = {"MCP_OIDC_ISSUER": f"http://127.0.0.1:{idp_port}", "MCP_OIDC_SECRET": RP_SECRET}
    if wsgi:
        env = server_env(tmp, settings="tests.oidc.settings_wsgi", **rp)
        server = OAuthServer(start_wsgi_server(env, tmp / "gunicorn.log", "tests.oidc.wsgi:application"))
        server.shell(SETUP)
    else:
        server = start_oauth_server(tmp, settings="tests.oidc.settings", setup=SETUP, **rp)
    try:
        return Site(server, start_idp(tmp, idp_port, server.base + "/oidc/callback/"))
    except BaseException:
        stop_oauth_server(server)
        raise


def stop_site(site: Site) -> None:
    site.idp.process.terminate()
    site.idp.process.wait(timeout=10)
    stop_oauth_server(site.server)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    started = start_site(tmp_path_factory.mktemp("oidc"))
    yield started
    stop_site(started)


@pytest.fixture
def site_log(site: Site) -> Iterator[None]:
    """The test fails if the Django server answered 500 or logged a traceback meanwhile."""
    log = site.server.live.log
    start = log.stat().st_size
    yield
    with log.open("rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    assert " 500 " not in text and "Traceback" not in text, text


class Employee:
    """A person with a company account: signs in at the IdP's page when sent there, then consents."""

    def __init__(self, page: Any, callback: str, login: str, *, password: str = PASSWORD) -> None:
        self.page, self.callback, self.login, self.password = page, callback, login, password
        self.tamper_scope: str | None = None  # what a tampering browser puts in the consent form's scope field
        self.idp_pages: list[str] = []
        self.refused = ""
        self.consent_text = ""
        self.scopes: list[str] = []
        self.callback_url = ""

    async def sign_in_at_idp(self) -> None:
        await self.page.wait_for_selector("#login")
        self.idp_pages.append(self.page.url)
        await self.page.fill("#login", self.login)
        await self.page.fill("#password", self.password)
        await self.page.click("#signin")

    async def open(self, url: str) -> None:
        """The SDK's ``redirect_handler``: the browser opens DOT's authorization URL."""
        await self.page.goto(url)
        if "/oauth/authorize/" not in self.page.url:  # not signed in here: the IdP's page
            await self.sign_in_at_idp()
            # Refused: the IdP's page again, with its error; signed in: back here (the consent page, or the
            # project's login failure page when it refuses the user the IdP vouched for).
            await self.page.wait_for_url(lambda u: "/interaction/" not in u or u.endswith("/login"))
            if await self.page.query_selector("#error"):
                self.refused = await self.page.inner_text("#error")
                raise PermissionError(f"the IdP refused the sign-in: {self.refused}")
        if not await self.page.query_selector("#authorizationForm"):
            raise PermissionError(f"the project's login refused the sign-in (landed at {self.page.url})")
        self.consent_text = await self.page.inner_text("main")
        self.scopes = await self.page.eval_on_selector_all("#scopes li", "items => items.map(i => i.dataset.scope)")
        if self.tamper_scope is not None:
            await self.page.eval_on_selector(
                "#authorizationForm input[name=scope]", "(field, value) => { field.value = value; }", self.tamper_scope
            )
        async with self.page.expect_navigation(url=lambda u: u.startswith(self.callback)) as landed:
            await self.page.click("#allow")
        self.callback_url = (await landed.value).url

    async def answer(self) -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(self.callback_url).query)
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )


def provider(site: Site, person: Employee, storage: Storage) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name=f"{person.login}'s desktop client",
        redirect_uris=[person.callback],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope="mcp secret:read",
    )
    return OAuthClientProvider(
        site.server.url, metadata, storage, redirect_handler=person.open, callback_handler=person.answer
    )


async def connect(site: Site, person: Employee) -> tuple[Storage, set[str]]:
    """The SDK's whole OAuth flow through the browser; the client's storage and the tools it lists."""
    storage = Storage()
    async with httpx2.AsyncClient(auth=provider(site, person, storage), timeout=60) as http:
        async with Client(streamable_http_client(site.server.url, http_client=http), mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
    return storage, names


def access_token(storage: Storage) -> str:
    assert storage.tokens is not None
    return storage.tokens.access_token


def call(site: Site, token: str, tool: str) -> httpx.Response:
    """A raw ``tools/call`` in a fresh session (no SDK step-up hiding the refusal)."""
    init = mcp_post(site.server, token, INIT)
    if init.status_code != 200:
        return init
    headers = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}}
    return mcp_post(site.server, token, body, **headers)


def refresh(site: Site, storage: Storage) -> httpx.Response:
    assert storage.tokens is not None and storage.client is not None
    data = {
        "grant_type": "refresh_token",
        "refresh_token": storage.tokens.refresh_token or "",
        "client_id": storage.client.client_id,
        "resource": site.server.url,
    }
    return httpx.post(site.server.base + "/oauth/token/", data=data, timeout=30)


def django_user(site: Site, login: str) -> tuple[Any, ...]:
    """(exists, email, sorted group names) of the Django user the IdP's ``login`` maps to."""
    out = site.server.shell(
        "import json; from django.contrib.auth.models import User; "
        f"u = User.objects.filter(username='idp-{login}').first(); "
        "groups = sorted(u.groups.values_list('name', flat=True)) if u else []; "
        "print(json.dumps([u is not None, u.email if u else '', groups]))"
    )
    return tuple(json.loads(out))


async def test_group_member_gets_the_scope_and_her_permissions(
    site: Site, callback: str, page: Any, site_log: None
) -> None:
    alice = Employee(page, callback, "alice")
    storage, names = await connect(site, alice)
    # The authorization URL sent the anonymous browser to the IdP's own sign-in page.
    assert alice.idp_pages and alice.idp_pages[0].startswith(site.idp.url + "/interaction/")
    # Back at DOT's consent page, signed in as the user the IdP's subject maps to, offered both scopes.
    assert "Signed in as idp-alice" in alice.consent_text
    assert sorted(alice.scopes) == ["mcp", "secret:read"]
    assert storage.tokens is not None and set((storage.tokens.scope or "").split()) == {"mcp", "secret:read"}
    # The IdP's claims made the Django user: email, and the groups this site has ("sales" is not one).
    assert django_user(site, "alice") == (True, "alice@example.com", ["user-viewers", "vault-readers"])
    # The tool calls run as alice, with her group's Django permission and the scope her group grants.
    token = access_token(storage)
    assert "secret" in names and "count_users" in names
    secret = call(site, token, "secret")
    assert secret.status_code == 200 and "the secret is 42" in secret.text
    counted = call(site, token, "count_users")
    assert counted.status_code == 200 and counted.json()["result"]["structuredContent"]["result"] >= 1
    owner = site.server.shell(
        "from oauth2_provider.models import AccessToken as T; "
        f"t = T.objects.get(token_checksum=__import__('hashlib').sha256({token!r}.encode()).hexdigest()); "
        "print(t.user.username, t.application.name)"
    )
    assert owner == "idp-alice alice's desktop client"


async def test_non_member_gets_no_scope_and_no_permission(site: Site, callback: str, page: Any, site_log: None) -> None:
    bob = Employee(page, callback, "bob")
    storage, names = await connect(site, bob)
    # The client asked for "mcp secret:read"; the consent page offered bob only what his groups allow...
    assert "Signed in as idp-bob" in bob.consent_text
    assert bob.scopes == ["mcp"]
    # ...and the token carries only that.
    assert storage.tokens is not None and storage.tokens.scope == "mcp"
    assert django_user(site, "bob") == (True, "bob@example.com", [])
    token = access_token(storage)
    assert "secret" not in names and "count_users" not in names
    # The tool needing the scope refuses with a step-up challenge; the one needing the permission does not exist.
    refused = call(site, token, "secret")
    assert refused.status_code == 403 and 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    unknown = call(site, token, "count_users")
    assert unknown.status_code == 200 and unknown.json()["error"]["message"] == "Unknown tool: count_users"


async def test_a_tampered_consent_form_gets_no_reserved_scope(
    site: Site, callback: str, page: Any, site_log: None
) -> None:
    """bob's browser rewrites the consent form's scope field: the code still carries only what his groups allow."""
    bob = Employee(page, callback, "bob")
    bob.tamper_scope = "mcp secret:read"
    storage, _ = await connect(site, bob)
    assert storage.tokens is not None and storage.tokens.scope == "mcp"
    assert call(site, access_token(storage), "secret").status_code == 403
    # A refresh asking for the reserved scope does not get it either (RFC 6749 §6: no scope beyond the grant).
    r = refresh(site, storage)
    assert r.status_code in (200, 400) and "secret:read" not in r.json().get("scope", "")


async def test_leaving_the_group_at_the_idp_narrows_the_next_token(
    site: Site, callback: str, page: Any, site_log: None
) -> None:
    dave = Employee(page, callback, "dave")
    storage, _ = await connect(site, dave)
    assert storage.tokens is not None and set((storage.tokens.scope or "").split()) == {"mcp", "secret:read"}
    # The IdP removes dave from vault-readers; his next sign-in copies that onto his Django groups.
    site.idp.set("dave", groups=[])
    await page.context.clear_cookies()
    again = Employee(page, callback, "dave")
    second, _ = await connect(site, again)
    assert again.scopes == ["mcp"] and second.tokens is not None and second.tokens.scope == "mcp"
    assert django_user(site, "dave")[2] == []
    # The token he held before refreshes without the scope he lost.
    r = refresh(site, storage)
    assert r.status_code == 200, r.text
    assert r.json()["scope"] == "mcp"
    assert call(site, r.json()["access_token"], "secret").status_code == 403


async def test_a_disabled_user_gets_no_token_and_loses_his_tokens(
    site: Site, callback: str, page: Any, site_log: None
) -> None:
    frank = Employee(page, callback, "frank")
    storage, _ = await connect(site, frank)
    token = access_token(storage)
    assert call(site, token, "secret").status_code == 200
    # Disabled at the IdP: a new sign-in is refused on the IdP's page, no code reaches the client.
    site.idp.set("frank", disabled=True)
    await page.context.clear_cookies()
    refused = Employee(page, callback, "frank")
    with pytest.raises(BaseException) as caught:  # the SDK wraps the refusal in task groups
        await connect(site, refused)
    assert "the IdP refused the sign-in" in repr(caught.value) and refused.refused
    assert refused.callback_url == "" and refused.consent_text == ""
    # Deprovisioned in Django (what the IdP's deprovisioning does): his token and refresh token stop at once.
    site.server.shell(
        "from django.contrib.auth.models import User; User.objects.filter(username='idp-frank').update(is_active=False)"
    )
    assert call(site, token, "secret").status_code == 401
    r = refresh(site, storage)
    assert r.status_code in (400, 401) and r.json()["error"] in ("invalid_grant", "invalid_client"), r.text
    # Re-enabled at the IdP but still inactive here: the IdP's sign-in no longer opens a Django session.
    site.idp.set("frank", disabled=False)
    await page.context.clear_cookies()
    back = Employee(page, callback, "frank")
    with pytest.raises(BaseException) as caught:
        await connect(site, back)
    assert "the project's login refused" in repr(caught.value) and back.consent_text == ""


async def test_idp_accounts_sharing_an_email_stay_apart(site: Site, callback: str, page: Any, site_log: None) -> None:
    """gina and hank share an address at the IdP, as does a local account holding a permission: three users."""
    tokens = {}
    for login in ("gina", "hank"):
        await page.context.clear_cookies()
        person = Employee(page, callback, login)
        storage, names = await connect(site, person)
        assert f"Signed in as idp-{login}" in person.consent_text
        assert "count_users" not in names  # not the local account's permission
        tokens[login] = access_token(storage)
    owners = site.server.shell(
        "from oauth2_provider.models import AccessToken as T; from django.contrib.auth.models import User; "
        "import hashlib; "
        f"print(sorted(T.objects.get(token_checksum=hashlib.sha256(v.encode()).hexdigest()).user.username "
        f"for v in {list(tokens.values())!r}), User.objects.filter(email='shared@example.com').count())"
    )
    assert owners == "['idp-gina', 'idp-hank'] 3"


async def tampered_idp_url(site: Site, page: Any, param: str) -> str:
    """The IdP authorization URL the project's login would send erin's browser to, with ``param`` changed."""
    start = await page.context.request.get(
        site.server.base + "/oidc/authenticate/?next=/oauth/authorize/", max_redirects=0
    )
    location = start.headers["location"]
    assert location.startswith(site.idp.url + "/auth?")
    split = urlsplit(location)
    query = {k: v[0] for k, v in parse_qs(split.query).items()}
    assert param in query
    value = query[param]
    query[param] = ("y" if value[0] == "x" else "x") + value[1:]  # changed, whatever its first character was
    return urlunsplit(split._replace(query=urlencode(query)))


@pytest.mark.parametrize("param", ["state", "nonce"])
async def test_state_and_nonce_tampering_is_refused(site: Site, page: Any, param: str, site_log: None) -> None:
    log = site.server.live.log
    start = log.stat().st_size
    url = await tampered_idp_url(site, page, param)
    await page.goto(url)
    erin = Employee(page, "", "erin")
    async with page.expect_response(lambda r: "/oidc/callback/" in r.url) as answered:
        await erin.sign_in_at_idp()
    response = await answered.value
    # The IdP signed erin in and came back with the tampered value; the project's login refuses it.
    assert response.status == 400
    with log.open("rb") as f:
        f.seek(start)
        refusal = f.read().decode(errors="replace")
    reason = {"state": "state not found in session", "nonce": "Nonce verification failed"}[param]
    assert "OIDC sign-in refused" in refusal and reason in refusal, refusal
    assert django_user(site, "erin") == (False, "", [])
    # No Django session: the authorization endpoint still sends the browser to the login.
    after = await page.context.request.get(site.server.base + "/oauth/authorize/", max_redirects=0)
    assert after.status == 302 and "/oidc/authenticate/" in after.headers["location"]


MACHINE = """
from django.contrib.auth.models import Group, User
from oauth2_provider.generators import generate_client_secret
from oauth2_provider.models import Application
from django_mcp.models import MCPClient
user = User.objects.create_user("{user}")
user.groups.set(Group.objects.filter(name__in={groups!r}))
secret = generate_client_secret()
app = Application.objects.create(name="{user}'s job", client_type="confidential", client_secret=secret,
    authorization_grant_type="client-credentials", user=user)
MCPClient.objects.update_or_create(client_id=app.client_id, defaults={{"allowed_scopes": "mcp secret:read"}})
print(app.client_id, secret)
"""


def test_machine_tokens_follow_their_service_users_groups(site: Site, site_log: None) -> None:
    """Two machine clients allowed the same scopes by staff: each token holds what its service user's groups allow."""
    issued = {}
    for user, groups in (("svc-reader", ["vault-readers"]), ("svc-other", [])):
        client_id, secret = site.server.shell(MACHINE.format(user=user, groups=groups)).split()
        body = {"grant_type": "client_credentials", "scope": "mcp secret:read", "resource": site.server.url}
        r = httpx.post(site.server.base + "/oauth/token/", data=body, auth=(client_id, secret), timeout=30)
        assert r.status_code == 200, r.text
        issued[user] = r.json()
    assert issued["svc-reader"]["scope"] == "mcp secret:read"
    assert issued["svc-other"]["scope"] == "mcp"
    assert call(site, issued["svc-reader"]["access_token"], "secret").status_code == 200
    assert call(site, issued["svc-other"]["access_token"], "secret").status_code == 403


async def test_wsgi_mode_same_sign_in_same_rules(
    tmp_path_factory: pytest.TempPathFactory, callback: str, page: Any
) -> None:
    """gunicorn sync workers, the MCP endpoint as a Django view: the same sign-in, groups and scopes."""
    wsgi = start_site(tmp_path_factory.mktemp("oidc-wsgi"), wsgi=True)
    try:
        alice = Employee(page, callback, "alice")
        storage, names = await connect(wsgi, alice)
        assert alice.idp_pages[0].startswith(wsgi.idp.url + "/interaction/")
        assert "secret" in names and "count_users" in names
        assert call(wsgi, access_token(storage), "secret").status_code == 200
        await page.context.clear_cookies()
        bob = Employee(page, callback, "bob")
        storage, names = await connect(wsgi, bob)
        assert bob.scopes == ["mcp"] and storage.tokens is not None and storage.tokens.scope == "mcp"
        assert "secret" not in names and "count_users" not in names
        assert call(wsgi, access_token(storage), "secret").status_code == 403
        assert "Traceback" not in wsgi.server.live.log.read_text(errors="replace")
    finally:
        stop_site(wsgi)
