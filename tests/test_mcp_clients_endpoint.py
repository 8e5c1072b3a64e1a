"""Disabling a client in the admin, through the live server: its very next MCP request gets 401."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.oauth.kit import INIT, PASSWORD, OAuthServer, mcp_post, start_oauth_server, stop_oauth_server
from tests.support.servers import ROOT


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    srv = start_oauth_server(tmp_path_factory.mktemp("clients"))
    srv.shell(f"from django.contrib.auth.models import User; User.objects.create_superuser('root', '', {PASSWORD!r})")
    yield srv
    stop_oauth_server(srv)


def admin_session(server: OAuthServer) -> httpx.Client:
    web = httpx.Client(base_url=server.base, timeout=30)
    web.get("/admin/login/")
    r = web.post(
        "/admin/login/?next=/admin/",
        data={"username": "root", "password": PASSWORD, "csrfmiddlewaretoken": web.cookies["csrftoken"]},
    )
    assert r.status_code == 302, r.text[:300]
    return web


def test_disable_in_admin_then_401(server: OAuthServer) -> None:
    mint = ["mcp_token", "--user", "alice", "--scope", "mcp", "--resource", server.url, "--application"]
    server.shell(
        "from oauth2_provider.models import Application as A; "
        "A.objects.create(name='desk', client_type='confidential', authorization_grant_type='client-credentials')"
    )
    token = server.live.manage(*mint, "desk").strip()
    assert mcp_post(server, token, INIT).status_code == 200

    web = admin_session(server)
    page = web.get("/admin/django_mcp/mcpclient/")
    assert page.status_code == 200 and "desk" in page.text
    pk = server.shell(
        "from django_mcp.models import MCPClient; from oauth2_provider.models import Application as A; "
        "print(MCPClient.objects.get(client_id=A.objects.get(name='desk').client_id).pk)"
    )
    r = web.post(
        "/admin/django_mcp/mcpclient/",
        data={
            "action": "disable_selected",
            "_selected_action": pk,
            "csrfmiddlewaretoken": re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1),  # type: ignore[union-attr]
        },
        follow_redirects=True,
    )
    assert "Disabled 1 client." in r.text

    refused = mcp_post(server, token, INIT)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Bearer ")
    assert "result" not in refused.json()
    # The switch itself, not only the revocation: a token written straight into the database for the
    # disabled client is refused by the bearer check, and mcp_token refuses to mint one.
    raw = server.shell(
        "from datetime import timedelta; from django.utils import timezone; "
        "from django.contrib.auth.models import User; "
        "from oauth2_provider.models import AccessToken, Application, set_token_value; "
        "t = AccessToken(user=User.objects.get(username='alice'), application=Application.objects.get(name='desk'), "
        f"scope='mcp', resource=[{server.url!r}], expires=timezone.now() + timedelta(hours=1)); "
        "set_token_value(t, 'straight-into-the-db-token'); t.save(); print('straight-into-the-db-token')"
    )
    again = mcp_post(server, raw, INIT)
    assert again.status_code == 401 and "disabled" in again.headers["www-authenticate"]
    out = subprocess.run(
        [sys.executable, "-m", "django", *mint, "desk"],
        env=server.live.env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and "disabled" in out.stderr
