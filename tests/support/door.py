"""An OAuth-protected endpoint in process: the Django view (``ROOT_URLCONF`` is this module under
``_oauth_settings()``) with tools and a prompt behind scopes, a real django-oauth-toolkit token, and a raw
JSON-RPC client over Django's test client (tests/test_door.py; the middleware tests reuse it)."""

from __future__ import annotations

import json
import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import re_path
from django.utils import timezone

from django_mcp import MCPServer
from django_mcp.auth import oauth2_provider_settings
from django_mcp.transports.wsgi import mcp_view_for

server = MCPServer("door-tests")


@server.tool
def open_tool() -> str:
    return "open"


@server.tool(scopes=["vault:write"])
def vault_write(text: str) -> str:
    """Needs the vault:write scope when a token is used."""
    return f"stored {text}"


@server.tool(scopes=["vault:write"], task="optional")
def vault_task(text: str) -> str:
    """``vault_write`` as a task."""
    return f"stored {text}"


@server.prompt(scopes=["vault:read"])
def vault_prompt() -> str:
    return "the vault"


urlpatterns = [re_path(r"^mcp/?$", mcp_view_for(server, wsgi=True))]
ENDPOINT = "http://testserver/mcp/"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def _oauth_settings() -> Any:
    from django.conf import settings

    return override_settings(
        ROOT_URLCONF=__name__,
        DJANGO_MCP={**settings.DJANGO_MCP, "AUTH": "oauth"},
        OAUTH2_PROVIDER=oauth2_provider_settings(),
    )


def _token(user: User, scope: str) -> str:
    from oauth2_provider.models import AccessToken, Application

    app = Application.objects.create(
        name="door", client_type="public", authorization_grant_type="authorization-code", redirect_uris=""
    )
    value = secrets.token_urlsafe(30)
    AccessToken.objects.create(
        user=user,
        application=app,
        token=value,
        expires=timezone.now() + timedelta(hours=1),
        scope=scope,
        resource=[ENDPOINT],
    )
    return value


class HTTP:
    """Raw JSON-RPC to the endpoint over Django's test client (the WSGI view), with a bearer token."""

    def __init__(self, token: str, version: str) -> None:
        self.client, self.token, self.version, self.sid = Client(HTTP_HOST="testserver"), token, version, None

    def post(self, body: dict[str, Any]) -> Any:
        headers = {"HTTP_AUTHORIZATION": f"Bearer {self.token}", "HTTP_ACCEPT": "application/json, text/event-stream"}
        if self.version:
            headers["HTTP_MCP_PROTOCOL_VERSION"] = self.version
        if self.sid:
            headers["HTTP_MCP_SESSION_ID"] = self.sid
        if self.version == "2026-07-28":
            params = body.setdefault("params", {})
            params["_meta"] = META
            headers["HTTP_MCP_METHOD"] = body["method"]
            name = params.get("name")
            if name:
                headers["HTTP_MCP_NAME"] = name
        return self.client.post("/mcp/", json.dumps(body), content_type="application/json", **headers)

    def open(self) -> None:
        if self.version == "2026-07-28":
            return
        init = {"protocolVersion": self.version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        self.version, version = "", self.version  # no version header on initialize
        r = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        assert r.status_code == 200, r.content
        self.sid, self.version = r["Mcp-Session-Id"], version
