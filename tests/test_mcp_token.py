"""``manage.py mcp_token`` on real DOT models; the token it prints verifies with DOT's own validator."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_application_model, get_refresh_token_model
from oauth2_provider.settings import oauth2_settings
from oauthlib.common import Request

from django_mcp.auth.clients import disable_clients
from django_mcp.management.commands.mcp_token import parse_duration

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice() -> Any:
    return get_user_model().objects.create_user("alice", password="pw-alice-123")


def mint(*args: str) -> str:
    out = StringIO()
    call_command("mcp_token", *args, stdout=out)
    return out.getvalue().strip()


def verify(raw: str, uri: str = "http://127.0.0.1:8000/mcp/") -> Any:
    request = Request(uri)
    assert oauth2_settings.OAUTH2_VALIDATOR_CLASS().validate_bearer_token(raw, [], request)
    return request.access_token


def test_mints_a_token_dot_accepts(alice: Any) -> None:
    raw = mint("--user", "alice", "--scope", "read write", "--resource", "http://127.0.0.1:8000/mcp/")
    token = verify(raw)
    assert token.user == alice
    assert token.scope == "read write"
    assert token.resource == ["http://127.0.0.1:8000/mcp/"]
    assert not oauth2_settings.OAUTH2_VALIDATOR_CLASS().validate_bearer_token(
        raw, [], Request("https://elsewhere/mcp/")
    )
    assert token.application.name == "mcp_token"
    assert token.application.redirect_uris == "", "the default application can send nobody through consent"
    # A second token reuses the application.
    assert verify(mint("--user", "alice", "--scope", "read")).application == token.application
    assert get_application_model().objects.filter(name="mcp_token").count() == 1


def test_expires_and_refresh(alice: Any) -> None:
    out = json.loads(mint("--user", "alice", "--scope", "read", "--expires", "30m", "--refresh", "--json"))
    assert out["token_type"] == "Bearer" and out["expires_in"] == 1800
    token = verify(out["access_token"])
    assert 1790 < (token.expires - timezone.now()).total_seconds() <= 1800
    refresh = get_refresh_token_model().objects.get(access_token=token)
    assert refresh.user == alice and out["refresh_token"]
    # A family, as DOT gives its own: reuse protection revokes by it, and MCP tasks follow a refresh by it.
    assert refresh.token_family is not None


def test_named_application(alice: Any) -> None:
    app = get_application_model().objects.create(
        name="ci", client_type="confidential", authorization_grant_type="client-credentials"
    )
    assert verify(mint("--user", "alice", "--scope", "read", "--application", "ci")).application == app
    assert verify(mint("--user", "alice", "--scope", "read", "--application", app.client_id)).application == app


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user", "nobody"], "No user named 'nobody'"),
        (["--user", "alice", "--scope", "read nope"], "Unknown scope(s) nope"),
        (["--user", "alice", "--expires", "-5"], "--expires"),
        (["--user", "alice", "--expires", "10y"], "--expires"),
        (["--user", "alice", "--application", "missing"], "No OAuth application"),
    ],
)
def test_refusals(alice: Any, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mint(*args)
    assert not get_access_token_model().objects.exists()


def test_inactive_user_and_disabled_application(alice: Any) -> None:
    verify(mint("--user", "alice", "--scope", "read"))
    app = get_application_model().objects.get(name="mcp_token")
    disable_clients([app.client_id])
    with pytest.raises(CommandError, match="disabled"):
        mint("--user", "alice", "--scope", "read")
    alice.is_active = False
    alice.save()
    with pytest.raises(CommandError, match="inactive"):
        mint("--user", "alice", "--scope", "read", "--application", "other")


def test_audience_required_when_the_setting_says_so(alice: Any) -> None:
    with override_settings(DJANGO_MCP={"AUTH": "oauth", "REQUIRE_AUDIENCE": True}):
        with pytest.raises(CommandError, match="--resource"):
            mint("--user", "alice", "--scope", "read")
        assert verify(
            mint("--user", "alice", "--scope", "read", "--resource", "https://x.example/mcp/"), "https://x.example/mcp/"
        )


def test_parse_duration() -> None:
    assert [parse_duration(t) for t in ("90", "90s", "2m", "3h", "1d")] == [90, 90, 120, 10800, 86400]
