"""``mcp_stdio`` fails closed under ``AUTH = "oauth"``: a user or a verified token, never an implicit one.

Real subprocesses on a migrated SQLite file with the OAuth test settings; tokens
are minted by ``manage.py mcp_token`` and checked by django-oauth-toolkit inside
the stdio process; the official SDK client drives both eras.
"""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from django_mcp import Context
from django_mcp.server import MCPServer
from tests.support.servers import ROOT, migrate_database

#: own_config: every process runs on its own SQLite file and the in-memory layer (the env fixture), so pg-redis
#: would run the same thing again.
pytestmark = pytest.mark.own_config

TIMEOUT = 60
RESOURCE = "http://127.0.0.1:8000/mcp/"

guarded = MCPServer("guarded-server")


@guarded.tool
def whoami(ctx: Context) -> str:
    """The user the process serves as."""
    return ctx.user.get_username() or "anonymous"


@guarded.tool(scopes=["secret:read"])
def secret() -> str:
    """Needs the secret:read scope."""
    return "the secret"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("stdio-auth")
    env = dict(os.environ)
    env.pop("DJANGO_MCP_TOKEN", None)
    env.update(
        DJANGO_SETTINGS_MODULE="tests.oauth.settings",
        PYTHONPATH=str(ROOT),
        MCP_TEST_DB="sqlite",
        MCP_TEST_LAYER="memory",
        MCP_SQLITE=str(tmp / "stdio-auth.sqlite3"),
    )
    migrate_database(env)  # a copy of the run's migrated tests.oauth.settings file, as the live servers get
    code = (
        "from django.contrib.auth import get_user_model; U = get_user_model(); "
        "U.objects.create_user('alice', password='pw-alice-123'); "
        "U.objects.create_user('gone', password='pw-gone-123', is_active=False)"
    )
    manage(env, "shell", "-c", code)
    return env


def run(env: dict[str, str], *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    e = dict(env)
    if token is not None:
        e["DJANGO_MCP_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "django", *args], env=e, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT
    )


def manage(env: dict[str, str], *args: str) -> str:
    out = run(env, *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


def mint(env: dict[str, str], *scopes: str) -> str:
    return manage(env, "mcp_token", "--user", "alice", "--resource", RESOURCE, "--scope", " ".join(scopes)).strip()


def params(env: dict[str, str], *extra: str, token: str | None = None) -> StdioServerParameters:
    keys = ("DJANGO_SETTINGS_MODULE", "PYTHONPATH", "MCP_TEST_DB", "MCP_TEST_LAYER", "MCP_SQLITE")
    server_env = {k: env[k] for k in keys}
    if token is not None:
        server_env["DJANGO_MCP_TOKEN"] = token
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "django", "mcp_stdio", "--server", "tests.test_stdio_auth.guarded", *extra],
        env=server_env,
        cwd=str(ROOT),
    )


def refused(out: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert out.returncode != 0
    assert fragment in out.stderr, out.stderr
    assert out.stdout == "", "nothing may reach the protocol stream"


def test_no_identity_is_refused(env: dict[str, str]) -> None:
    out = run(env, "mcp_stdio")
    refused(out, "refuses to serve anonymously")
    assert "--user" in out.stderr and "DJANGO_MCP_TOKEN" in out.stderr


@pytest.mark.parametrize(
    ("args", "token", "fragment"),
    [
        ((), "not-a-token", "not a valid access token"),
        (("--user", "alice"), "whatever", "not both"),
        (("--user", "nobody"), None, "No user named 'nobody'"),
        (("--user", "gone"), None, "inactive"),
    ],
)
def test_bad_identity_is_refused(env: dict[str, str], args: tuple[str, ...], token: str | None, fragment: str) -> None:
    refused(run(env, "mcp_stdio", *args, token=token), fragment)


def test_revoked_and_disabled_tokens_are_refused(env: dict[str, str]) -> None:
    token = mint(env, "mcp")
    code = (
        "from django_mcp.auth.clients import disable_clients; "
        "from oauth2_provider.models import get_application_model as g; "
        "disable_clients([g().objects.get(name='mcp_token').client_id])"
    )
    manage(env, "shell", "-c", code)
    try:
        refused(run(env, "mcp_stdio", token=token), "not a valid access token")
        refused(run(env, "mcp_token", "--user", "alice", "--resource", RESOURCE), "disabled")
    finally:
        code = (
            "from django_mcp.auth.clients import enable_clients; "
            "from oauth2_provider.models import get_application_model as g; "
            "enable_clients([g().objects.get(name='mcp_token').client_id])"
        )
        manage(env, "shell", "-c", code)


async def tool_names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


async def text(client: Client, name: str) -> str:
    result = await client.call_tool(name, {})
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_user_gets_the_users_full_rights(env: dict[str, str], mode: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with Client(params(env, "--user", "alice"), mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            assert await text(client, "whoami") == "alice"
            assert await tool_names(client) == {"whoami", "secret"}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_token_limits_to_its_scopes(env: dict[str, str], mode: str) -> None:
    narrow = mint(env, "mcp")
    wide = mint(env, "mcp", "secret:read")
    with anyio.fail_after(TIMEOUT):
        async with Client(params(env, token=narrow), mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            assert await text(client, "whoami") == "alice"
            assert await tool_names(client) == {"whoami"}, "a tool outside the token's scopes is invisible"
            with pytest.raises(MCPError, match="lacks the scope") as refused:  # the door's refusal, as over HTTP
                await client.call_tool("secret", {})
            assert refused.value.error.data == {"error": "insufficient_scope", "scope": "secret:read"}
        async with Client(params(env, token=wide), mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            assert await tool_names(client) == {"whoami", "secret"}
            assert await text(client, "secret") == "the secret"
