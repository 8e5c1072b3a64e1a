"""Rows made in process for the admin and command tests: an OAuth application and its tokens, an MCP task."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_refresh_token_model,
    set_token_value,
)

from django_mcp.models import MCPTask

Application = get_application_model()
AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()


def make_app(name: str = "Claude", source: str = "dcr", redirect: str = "http://127.0.0.1:33418/callback") -> Any:
    return Application.objects.create(
        name=name,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=redirect,
        registration_source=source,
    )


def make_token(app: Any, user: Any, raw: str, refresh: str | None = None) -> Any:
    token = AccessToken(user=user, application=app, scope="mcp books:read", expires=timezone.now() + timedelta(hours=1))
    set_token_value(token, raw)
    token.save()
    if refresh:
        rt = RefreshToken(user=user, application=app, access_token=token)
        set_token_value(rt, refresh)
        rt.save()
    return token


def make_task(status: str = MCPTask.WORKING, **fields: Any) -> MCPTask:
    now = timezone.now()
    values: dict[str, Any] = {
        "id": secrets.token_urlsafe(32),
        "tool": "slow_report",
        "arguments": {"year": 2026},
        "protocol_version": "2026-07-28",
        "oauth_client": "client-a",
        "status": status,
        "created": now - timedelta(seconds=90),
        "updated": now,
        "expires": now + timedelta(hours=1),
        "ttl_ms": 3_600_000,
    }
    values.update(fields)
    return MCPTask.objects.create(**values)
