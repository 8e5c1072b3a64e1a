"""The per-worker cache of verified OAuth tokens (``django_mcp.auth.token_cache``).

In process, on the Redis channel layer (what makes a worker cache at all): a repeated token is answered
with no query and no thread; the cache never widens access (another endpoint's audience, another
user's token, an expired token); revoking the token, deactivating the user, disabling the client take
effect on the very next request; ``TOKEN_CACHE_MAX_AGE = 0`` and the in-memory layer cache nothing.

Live, two daphne workers on PostgreSQL sharing Redis, two users and two clients: a token used on both
workers, then revoked at DOT's revocation endpoint, its user deactivated by a model save in another
process, its client disabled with ``manage.py mcp_client``, a user's tokens revoked with
``mcp_client revoke --user``: the very next request on each worker is refused 401 with the
``invalid_token`` challenge, while the other user's or client's token goes on working.
"""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from django_mcp.auth import oauth2_provider_settings
from django_mcp.auth.bearer import AuthInfo, authenticate
from django_mcp.auth.challenge import Challenge
from django_mcp.auth.clients import disable_clients
from django_mcp.auth.token_cache import cache
from django_mcp.runtime.sync_pool import run_bookkeeping
from django_mcp.state.hub import hub
from tests.oauth.kit import OAuthServer, start_oauth_server, stop_oauth_server
from tests.support.raw import Raw
from tests.support.servers import LiveServer, need_service, start_server

ENDPOINT = "http://testserver/mcp/"


def request(token: str, path: str = "/mcp/") -> tuple[dict[str, Any], dict[bytes, bytes]]:
    """An ASGI scope and headers of a POST to ``path`` with ``token``."""
    headers = [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode())]
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "server": ("testserver", 80),
    }
    return scope, dict(headers)


def make_token(username: str, client: str, scope: str = "mcp", seconds: float = 3600) -> tuple[str, Any]:
    from oauth2_provider.models import AccessToken, Application

    user = User.objects.filter(username=username).first() or User.objects.create_user(username)
    app = Application.objects.filter(name=client).first() or Application.objects.create(
        name=client, client_type="public", authorization_grant_type="authorization-code", redirect_uris=""
    )
    value = secrets.token_urlsafe(30)
    token = AccessToken.objects.create(
        user=user,
        application=app,
        token=value,
        expires=timezone.now() + timedelta(seconds=seconds),
        scope=scope,
        resource=[ENDPOINT],
    )
    return value, token


class Queries:
    """The SQL the bookkeeping thread (the only one, ``SYNC_BOOKKEEPING_WORKERS = 1``) runs."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        self.sql.append(sql)
        return execute(sql, params, many, context)

    async def install(self) -> None:
        await run_bookkeeping(lambda: connection.execute_wrappers.append(self))

    def take(self) -> list[str]:
        taken, self.sql = self.sql, []
        return taken


def _settings(layer: str, **mcp: Any) -> Any:
    prefix = f"tokencache-{uuid.uuid4().hex[:8]}"
    layers = {
        "redis": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:6379/0"], "prefix": prefix},
        },
        "memory": {"BACKEND": "channels.layers.InMemoryChannelLayer"},
    }
    return override_settings(
        CHANNEL_LAYERS={"default": layers[layer]},
        DJANGO_MCP={**settings.DJANGO_MCP, "AUTH": "oauth", "SYNC_BOOKKEEPING_WORKERS": 1, **mcp},
        OAUTH2_PROVIDER=oauth2_provider_settings(),
    )


@pytest.fixture
async def queries(request: pytest.FixtureRequest) -> AsyncIterator[Queries]:
    """The Redis layer (a prefix of this test's own), OAuth on, one bookkeeping thread whose queries are counted."""
    layer, mcp = getattr(request, "param", ("redis", {}))
    if layer == "redis":
        need_service("Redis", 6379)
    with _settings(layer, **mcp):
        counted = Queries()
        await counted.install()
        try:
            yield counted
        finally:
            await hub.stop()
            cache.clear()


async def refused(token: str, path: str = "/mcp/") -> Challenge:
    with pytest.raises(Challenge) as caught:
        await authenticate(*request(token, path))
    assert caught.value.status == 401
    return caught.value


inprocess = pytest.mark.django_db(transaction=True)


async def heard() -> None:
    """Wait until the hub hears its layer (its probe answered within ``PROBE_INTERVAL``).

    On a loaded machine a probe can come back late; the cache is then off, as it must be, and a
    repeat checks the database again: what these tests count is the cache while it may be used.
    """
    await hub.start()  # the hub starts on a worker's first request; here it may not have yet
    deadline = time.monotonic() + 15
    while not hub.hearing():
        assert time.monotonic() < deadline, "the hub never heard the Redis layer"
        await asyncio.sleep(0.05)


async def first_check(token: str) -> AuthInfo:
    """The token's first check, which queries and keeps it (again if the hub stopped hearing meanwhile)."""
    deadline = time.monotonic() + 15
    while True:
        await heard()
        kept = len(cache)
        info = await authenticate(*request(token))
        if len(cache) > kept:
            return info
        assert time.monotonic() < deadline, "a verified token was never kept"


@inprocess
async def test_a_repeated_token_costs_no_query_and_the_cache_widens_nothing(queries: Queries) -> None:
    alice, _ = await run_bookkeeping(make_token, "alice", "first", "mcp secret:read")
    bob, _ = await run_bookkeeping(make_token, "bob", "first")
    queries.take()
    first = await first_check(alice)
    assert queries.take(), "the first request checks the token in the database"
    for _ in range(3):
        await heard()
        again = await authenticate(*request(alice))
        assert queries.take() == [], "a repeated token is answered from memory"
        assert (again.user.username, again.client_id, again.scopes) == ("alice", first.client_id, first.scopes)
    assert len(cache) == 1
    # Another endpoint: the audience is checked again there (the token names /mcp/ only).
    challenge = await refused(alice, "/other/")
    assert "not valid for this resource" in challenge.description and "invalid_token" in challenge.header
    # Another user's token is its own entry, with its own user and scopes.
    other = await authenticate(*request(bob))
    assert (other.user.username, other.scopes) == ("bob", frozenset({"mcp"}))
    # A token one character off is no entry of alice's.
    await refused(alice[:-1] + ("A" if alice[-1] != "A" else "B"))


def test_the_endpoint_url_is_remembered_by_what_builds_it() -> None:
    """The audience a cached token is keyed by: each host, proxy header and path its own URL."""
    from django_mcp.auth.bearer import _endpoint_url

    def url(path: str = "/mcp/", **headers: str) -> str | None:
        scope, _ = request("t", path)
        scope["headers"] = [
            *scope["headers"],
            *((k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()),
        ]
        return _endpoint_url(scope)

    for _ in range(2):  # built, then remembered: the same answers
        assert url() == "http://testserver/mcp/"
        assert url("/other/") == "http://testserver/other/"
        assert url(x_forwarded_host="localhost") == "http://testserver/mcp/"  # not trusted by default
        assert url(x_forwarded_proto="https") == "http://testserver/mcp/"
    with override_settings(USE_X_FORWARDED_HOST=True, SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https")):
        assert url(x_forwarded_host="localhost") == "http://localhost/mcp/"
        assert url(x_forwarded_proto="https") == "https://testserver/mcp/"
        assert url(x_forwarded_host="evil.example") is None  # not in ALLOWED_HOSTS, every time
        assert url(x_forwarded_host="evil.example") is None
    assert url(x_forwarded_host="localhost") == "http://testserver/mcp/"  # the settings' change forgot them
    with override_settings(ALLOWED_HOSTS=["localhost"]):
        assert url() is None  # testserver no longer allowed: nothing remembered answers for it


@inprocess
async def test_a_token_kept_for_one_host_is_checked_again_for_another(queries: Queries) -> None:
    alice, _ = await run_bookkeeping(make_token, "alice", "first")
    await first_check(alice)
    scope, _ = request(alice)
    scope["headers"] = [(b"host", b"localhost"), (b"authorization", f"Bearer {alice}".encode())]
    queries.take()
    with pytest.raises(Challenge) as caught:  # its audience is http://testserver/mcp/, not http://localhost/mcp/
        await authenticate(scope, dict(scope["headers"]))
    assert caught.value.status == 401 and "not valid for this resource" in caught.value.description
    assert queries.take(), "checked in the database, not answered from the entry kept for testserver"


@inprocess
async def test_revoking_deactivating_and_disabling_apply_to_the_next_request(queries: Queries) -> None:
    alice, alice_token = await run_bookkeeping(make_token, "alice", "first")
    alice2, _ = await run_bookkeeping(make_token, "alice", "second")
    bob, _ = await run_bookkeeping(make_token, "bob", "second")
    carol, _ = await run_bookkeeping(make_token, "carol", "first")
    for token in (alice, alice2, bob, carol):
        await first_check(token)
    assert len(cache) == 4
    queries.take()

    await run_bookkeeping(alice_token.delete)  # what DOT's revocation endpoint and the admin do
    assert "invalid_token" in (await refused(alice)).header
    assert (await authenticate(*request(alice2))).user.username == "alice"  # her other client's token stays

    def deactivate() -> None:
        user = User.objects.get(username="bob")
        user.is_active = False
        user.save()

    await run_bookkeeping(deactivate)
    assert "inactive" in (await refused(bob)).description

    client_id = await run_bookkeeping(lambda: alice_token.application.client_id)
    await run_bookkeeping(disable_clients, [client_id])
    await refused(carol)  # carol's token went through the disabled client "first"
    assert (await authenticate(*request(alice2))).user.username == "alice"


@inprocess
async def test_a_scope_taken_from_a_token_applies_at_once(queries: Queries) -> None:
    value, token = await run_bookkeeping(make_token, "alice", "first", "mcp secret:read")
    assert "secret:read" in (await first_check(value)).scopes

    def narrow() -> None:
        token.scope = "mcp"
        token.save()

    await run_bookkeeping(narrow)
    assert (await authenticate(*request(value))).scopes == frozenset({"mcp"})


@inprocess
async def test_an_entry_never_outlives_its_token(queries: Queries) -> None:
    # Long enough to be checked twice on a loaded machine; the sleep then ends just past its expiry.
    value, token = await run_bookkeeping(make_token, "alice", "first", "mcp", 3.0)
    await first_check(value)
    queries.take()
    await heard()
    await authenticate(*request(value))
    assert queries.take() == []
    await asyncio.sleep(max(0.0, (token.expires - timezone.now()).total_seconds()) + 0.1)
    assert "expired" in (await refused(value)).description.lower()


@inprocess
async def test_a_check_under_way_when_a_change_is_heard_is_not_kept(queries: Queries) -> None:
    value, _ = await run_bookkeeping(make_token, "alice", "first")
    generation = cache.generation
    info = await authenticate(*request(value))
    cache.clear()
    cache.drop(set(), {"nobody"}, set())  # a change heard meanwhile
    assert not cache.put("k", info, generation)
    assert cache.put("k", info, cache.generation)


@inprocess
async def test_project_tokens_and_jwts_are_never_kept(queries: Queries) -> None:
    """Nothing this cache hears takes them back: a project's API token (``AUTHENTICATION_CLASSES``) or a JWT."""
    value, token = await run_bookkeeping(make_token, "alice", "first")
    oauth = await authenticate(*request(value))
    project = AuthInfo(user=oauth.user, client_id="", scopes=oauth.scopes, token=token, authenticator="x.Auth")
    jwt = AuthInfo(user=oauth.user, client_id="idp", scopes=oauth.scopes, token={"exp": time.time() + 60})
    generation = cache.generation
    assert not cache.put("project", project, generation) and not cache.put("jwt", jwt, generation)
    assert "project" not in cache.keys() and "jwt" not in cache.keys()


@inprocess
@pytest.mark.parametrize("queries", [("redis", {"TOKEN_CACHE_MAX_AGE": 0})], indirect=True)
async def test_max_age_zero_turns_the_cache_off(queries: Queries) -> None:
    value, _ = await run_bookkeeping(make_token, "alice", "first")
    for _ in range(2):
        queries.take()
        await authenticate(*request(value))
        assert queries.take()
    assert len(cache) == 0


@inprocess
@pytest.mark.parametrize("queries", [("memory", {})], indirect=True)
async def test_a_worker_that_hears_no_other_process_caches_nothing(queries: Queries) -> None:
    """The in-memory layer: a management command's revocation could never reach this worker."""
    value, _ = await run_bookkeeping(make_token, "alice", "first")
    for _ in range(2):
        queries.take()
        assert isinstance(await authenticate(*request(value)), AuthInfo)
        assert queries.take()
    assert len(cache) == 0


# -- live: two daphne workers on PostgreSQL sharing Redis ---------------------------------------------------
STAFF, STAFF_PASSWORD = "ops", "ops-password-4242"
MINT = """
import io
from django.contrib.auth.models import User
from django.core.management import call_command
from oauth2_provider.models import Application
for name in {users!r}:
    User.objects.get_or_create(username=name)
for name in {clients!r}:
    Application.objects.get_or_create(name=name, defaults=dict(client_type="public",
        authorization_grant_type="authorization-code", redirect_uris="http://127.0.0.1:9/callback"))
for user in {users!r}:
    for app in {clients!r}:
        out = io.StringIO()
        call_command("mcp_token", user=user, scope=["mcp"], application=app, resource={urls!r}, stdout=out)
        print("TOKEN", user, app, Application.objects.get(name=app).client_id, out.getvalue().strip())
"""


@dataclass
class Pair:
    a: OAuthServer
    b: OAuthServer

    @property
    def workers(self) -> list[LiveServer]:
        return [self.a.live, self.b.live]

    def mint(self, tag: str) -> dict[tuple[str, str], tuple[str, str]]:
        """Tokens of two users through two clients, fresh for one test: (user, client) -> (client_id, token)."""
        users, clients = [f"alice-{tag}", f"bob-{tag}"], [f"first-{tag}", f"second-{tag}"]
        out = self.a.live.manage(
            "shell", "-c", MINT.format(users=users, clients=clients, urls=[self.a.url, self.b.url])
        )
        found = {}
        for line in out.splitlines():
            if line.startswith("TOKEN "):
                _, user, client, client_id, token = line.split()
                found[(user.split("-")[0], client.split("-")[0])] = (client_id, token)
        assert len(found) == 4, out
        return found


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    need_service("Redis", 6379)
    tmp = tmp_path_factory.mktemp("token-cache")
    a = start_oauth_server(tmp, db="postgres", layer="redis", setup=None)
    b: OAuthServer | None = None
    try:
        b = OAuthServer(start_server(a.live.env, tmp / "b.log", migrate=False, app="tests.oauth.asgi:application"))
        yield Pair(a, b)
    finally:
        if b is not None:
            b.live.stop()
        stop_oauth_server(a)
    for log in (a.live.log, tmp / "b.log"):
        text = log.read_text(errors="replace")
        assert "Traceback" not in text and " 500 " not in text, text


def echo(worker: LiveServer, token: str) -> httpx.Response:
    return Raw(worker).modern(
        "tools/call", {"name": "echo", "arguments": {"text": "hi"}}, authorization=f"Bearer {token}"
    )


def works(worker: LiveServer, token: str) -> bool:
    r = echo(worker, token)
    return r.status_code == 200 and r.json().get("result", {}).get("content", [{}])[0].get("text") == "hi"


def assert_refused(worker: LiveServer, token: str, words: str) -> None:
    r = echo(worker, token)
    assert r.status_code == 401, (worker.port, r.status_code, r.text)
    challenge = r.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge, challenge
    assert "resource_metadata=" in challenge and words in challenge, challenge


def cached(worker: LiveServer) -> int:
    health = httpx.get(worker.url.rstrip("/") + "/health", timeout=10).json()
    return int(health["worker"]["tokens_cached"])


def warm(pair: Pair, tokens: dict[tuple[str, str], tuple[str, str]]) -> None:
    """Every token used twice on both workers: each worker now answers them from memory."""
    before = [cached(w) for w in pair.workers]
    for worker in pair.workers:
        for _client_id, token in tokens.values():
            assert works(worker, token) and works(worker, token), worker.port
    assert [cached(w) - n for w, n in zip(pair.workers, before, strict=True)] == [len(tokens)] * 2


@pytest.mark.own_config
def test_a_token_revoked_at_the_revocation_endpoint_is_refused_on_every_worker(pair: Pair) -> None:
    tokens = pair.mint("revoke")
    warm(pair, tokens)
    client_id, token = tokens[("alice", "first")]
    r = httpx.post(pair.a.base + "/oauth/revoke_token/", data={"token": token, "client_id": client_id}, timeout=10)
    assert r.status_code == 200, r.text
    for worker in reversed(pair.workers):  # the other worker first
        assert_refused(worker, token, "")
    for worker in pair.workers:
        for key in (("alice", "second"), ("bob", "first"), ("bob", "second")):
            assert works(worker, tokens[key][1]), (worker.port, key)


@pytest.mark.own_config
def test_a_user_deactivated_in_another_process_is_refused_on_every_worker(pair: Pair) -> None:
    tokens = pair.mint("inactive")
    warm(pair, tokens)
    pair.a.shell(
        "from django.contrib.auth.models import User\n"
        "u = User.objects.get(username='bob-inactive'); u.is_active = False; u.save()"
    )
    for worker in reversed(pair.workers):
        for client in ("first", "second"):
            assert_refused(worker, tokens[("bob", client)][1], "inactive")
        for client in ("first", "second"):
            assert works(worker, tokens[("alice", client)][1])


@pytest.mark.own_config
def test_a_client_disabled_and_a_users_tokens_revoked_by_command_are_refused_on_every_worker(pair: Pair) -> None:
    tokens = pair.mint("command")
    warm(pair, tokens)
    pair.a.live.manage("mcp_client", "disable", tokens[("alice", "first")][0])
    for worker in reversed(pair.workers):
        for user in ("alice", "bob"):
            assert_refused(worker, tokens[(user, "first")][1], "")
            assert works(worker, tokens[(user, "second")][1])
    pair.a.live.manage("mcp_client", "revoke", "--user", "bob-command")
    for worker in reversed(pair.workers):
        assert_refused(worker, tokens[("bob", "second")][1], "")
        assert works(worker, tokens[("alice", "second")][1])


def test_a_long_max_age_is_warned_of() -> None:
    """``W295``: a lost revocation broadcast would leave a token usable for the whole age."""
    from django_mcp.auth.checks import check_token_cache

    oauth = {**settings.DJANGO_MCP, "AUTH": "oauth"}
    with override_settings(DJANGO_MCP={**oauth, "TOKEN_CACHE_MAX_AGE": 3600}):
        assert [w.id for w in check_token_cache()] == ["django_mcp.W295"]
    for age in (0, 10, 300):
        with override_settings(DJANGO_MCP={**oauth, "TOKEN_CACHE_MAX_AGE": age}):
            assert check_token_cache() == []
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "AUTH": "none", "TOKEN_CACHE_MAX_AGE": 3600}):
        assert check_token_cache() == []
