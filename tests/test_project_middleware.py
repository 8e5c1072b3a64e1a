"""A project's own middleware sees the MCP caller as the request's user, under Channels and in WSGI mode.

``tests.projectapp`` is an existing project's app: change logging keeps the request in a thread-local that a
``post_save`` handler reads (and, as in real projects, assigning an anonymous user there raises), a tenancy
middleware sets a context variable from ``request.user``, another answers 403 for a blocked user. Served with
OAuth by daphne and by gunicorn (the endpoint as a Django view), two users with their own bearer tokens call a
sync tool, an async tool, a resource and the project's DRF viewset through the official SDK client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from django.core.checks import Error
from django.test import override_settings
from mcp import Client

from django_mcp.runtime import project_middleware
from tests.oauth.kit import PASSWORD, SETUP
from tests.support.callers import bearer_client, text, unique
from tests.support.servers import LiveServer, server_env, start_server
from tests.support.wsgi_server import start_wsgi_server

CALLERS = ("alice", "bob", "mallory")


@pytest.fixture(scope="module", params=["daphne", "gunicorn"])
def project(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp(f"project-{request.param}")
    if request.param == "daphne":
        env = server_env(tmp, settings="tests.projectapp.settings")
        server = start_server(env, tmp / "server.log", app="tests.projectapp.asgi:application")
    else:
        env = server_env(tmp, settings="tests.projectapp.settings", MCP_PROJECT_WSGI="1")
        server = start_wsgi_server(env, tmp / "server.log", "tests.projectapp.wsgi:application")
    try:
        server.manage(
            "shell", "-c", SETUP.format(password=PASSWORD) + "User.objects.create_user('mallory', password='x')\n"
        )
        tokens = {
            name: server.manage("mcp_token", "--user", name, "--scope", "mcp", "--resource", server.url)
            .strip()
            .splitlines()[-1]
            for name in CALLERS
        }
        yield server, tokens
    finally:
        server.stop()
    log = server.log.read_text(errors="replace")
    assert "Traceback" not in log and " 500 " not in log, log


@asynccontextmanager
async def connect(project: tuple[LiveServer, dict[str, str]], who: str) -> AsyncIterator[Client]:
    server, tokens = project
    async with bearer_client(server.url, tokens[who]) as c:
        yield c


def changes(server: LiveServer, name: str) -> list[dict[str, Any]]:
    """The project's change records of the gadget called ``name``, read from the server's database."""
    out = server.manage(
        "shell",
        "-c",
        "import json\nfrom tests.projectapp.models import ChangeRecord\n"
        f"print(json.dumps(list(ChangeRecord.objects.filter(object_repr={name!r})"
        ".values('user__username', 'tenant', 'via'))))",
    )
    return list(json.loads(out.strip().splitlines()[-1]))


async def test_sync_tool_writes_are_logged_as_the_caller(project: tuple[LiveServer, dict[str, str]]) -> None:
    server, _ = project
    names = {who: unique(f"gadget-{who}") for who in ("alice", "bob")}
    for who, name in names.items():
        async with connect(project, who) as c:
            result = await c.call_tool("add_gadget", {"name": name})
            assert not result.is_error, text(result)
    for who, name in names.items():
        assert changes(server, name) == [{"user__username": who, "tenant": who, "via": "POST"}]


async def test_drf_writes_run_in_the_project_middleware(project: tuple[LiveServer, dict[str, str]]) -> None:
    server, _ = project
    name = unique("drf-gadget")
    async with connect(project, "bob") as c:
        created = await c.call_tool("gadget_create", {"name": name})
        assert not created.is_error, text(created)
        assert created.structured_content is not None and created.structured_content["tenant"] == "bob"
        listed = await c.call_tool("gadget_list", {})
        assert name in text(listed)
    async with connect(project, "alice") as c:  # the project's tenancy keeps bob's gadget from alice
        listed = await c.call_tool("gadget_list", {})
        assert not listed.is_error and name not in text(listed)
    assert changes(server, name) == [{"user__username": "bob", "tenant": "bob", "via": "POST"}]


async def test_async_tools_and_resources_see_the_caller(project: tuple[LiveServer, dict[str, str]]) -> None:
    name = unique("mine")
    for who in ("alice", "bob"):
        async with connect(project, who) as c:
            assert text(await c.call_tool("current_tenant", {})) == who
            if who == "alice":
                assert not (await c.call_tool("add_gadget", {"name": name})).is_error
            read = await c.read_resource("gadgets://mine")
            assert (name in read.contents[0].text) is (who == "alice")  # type: ignore[union-attr]


async def test_a_refusal_of_the_project_middleware_refuses_the_call(
    project: tuple[LiveServer, dict[str, str]],
) -> None:
    server, _ = project
    name = unique("blocked")
    async with connect(project, "mallory") as c:
        result = await c.call_tool("add_gadget", {"name": name})
        assert result.is_error and text(result) == "The project's middleware refused the call: Blocked by the project"
        result = await c.call_tool("gadget_create", {"name": name})
        assert result.is_error, text(result)
    assert changes(server, name) == []
    count = server.manage(
        "shell",
        "-c",
        f"from tests.projectapp.models import Gadget; print(Gadget.objects.filter(name={name!r}).count())",
    )
    assert count.strip().splitlines()[-1] == "0"


# -- which middleware a call runs in --------------------------------------------------------------------------
PROJECT = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "tests.projectapp.middleware.ChangeLoggingMiddleware",
    "tests.projectapp.middleware.TenancyMiddleware",
]


def test_the_default_is_the_project_middleware_less_http_only_ones() -> None:
    with override_settings(MIDDLEWARE=PROJECT, DJANGO_MCP={}):
        assert project_middleware.middleware_paths() == PROJECT[-2:]
        assert project_middleware.active()
    with override_settings(MIDDLEWARE=PROJECT, DJANGO_MCP={"PROJECT_MIDDLEWARE_EXCLUDE": [PROJECT[-1]]}):
        assert project_middleware.middleware_paths() == [PROJECT[-2]]
    with override_settings(MIDDLEWARE=PROJECT, DJANGO_MCP={"PROJECT_MIDDLEWARE": []}):
        assert project_middleware.middleware_paths() == []
        assert not project_middleware.active()
    with override_settings(MIDDLEWARE=PROJECT[:3], DJANGO_MCP={}):
        assert not project_middleware.active()


def test_checks_name_an_unimportable_middleware() -> None:
    from django_mcp.checks import check_project_middleware

    with override_settings(DJANGO_MCP={"PROJECT_MIDDLEWARE": ["tests.projectapp.middleware.Missing"]}):
        errors = check_project_middleware(None)
    assert [e.id for e in errors] == ["django_mcp.E212"] and isinstance(errors[0], Error)
    assert "tests.projectapp.middleware.Missing" in errors[0].msg
    with override_settings(
        DJANGO_MCP={"PROJECT_MIDDLEWARE": ["django.contrib.auth.middleware.AuthenticationMiddleware"]}
    ):
        warnings = check_project_middleware(None)
    assert [w.id for w in warnings] == ["django_mcp.W050"]


def test_project_middleware_setting_is_validated(tmp_path: Path) -> None:
    from django_mcp.checks import check_settings

    with override_settings(DJANGO_MCP={"PROJECT_MIDDLEWARE": "tests.projectapp.middleware.TenancyMiddleware"}):
        assert "django_mcp.E210" in [e.id for e in check_settings(None)]
