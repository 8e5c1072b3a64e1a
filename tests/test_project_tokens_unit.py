"""The parts of project-token authentication that need no server: messages, header schemes, task grants."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from oauth2_provider.models import AccessToken, Application
from rest_framework.authentication import BaseAuthentication, TokenAuthentication

from django_mcp.auth import authenticators
from django_mcp.auth.bearer import AuthInfo
from django_mcp.auth.grants import Grant, grant_of

SCOPE = {
    "type": "http",
    "method": "POST",
    "path": "/mcp/",
    "query_string": b"",
    "headers": [(b"host", b"testserver"), (b"authorization", b"Bearer k1")],
    "client": ("192.0.2.9", 5000),
    "server": ("testserver", 80),
}


class Seen(BaseAuthentication):  # type: ignore[misc]
    """Returns what it was shown: the header and the address."""

    def authenticate(self, request: Any) -> tuple[Any, Any]:
        return object(), (request.META.get("HTTP_AUTHORIZATION"), request.META.get("REMOTE_ADDR"))


class Keyed(Seen):
    keyword = "Api-Key"


def test_a_bearer_header_is_shown_in_the_class_keyword() -> None:
    with override_settings(DJANGO_MCP={"AUTHENTICATION_CLASSES": [Keyed]}):
        found = authenticators.run(SCOPE, "bearer", "k1")
        assert found is not None and found[1] == ("Api-Key k1", "192.0.2.9")
        assert authenticators.schemes() == {"bearer", "api-key"}
        assert authenticators.run(SCOPE, "token", "k1") is None  # not its scheme: not shown to it
    with override_settings(DJANGO_MCP={"AUTHENTICATION_CLASSES": [Seen]}):
        found = authenticators.run(SCOPE, "bearer", "k1")
        assert found is not None and found[1] == ("Bearer k1", "192.0.2.9")
        assert found[2] == "tests.test_project_tokens_unit.Seen"


def test_drf_token_authentication_reads_token_scheme() -> None:
    assert authenticators.keyword(TokenAuthentication) == "Token"


def test_safe_message() -> None:
    assert authenticators.safe_message(ValueError("ok\r\nX: 1")) == "ok X: 1"
    assert authenticators.safe_message(ValueError("")) == authenticators.DEFAULT_MESSAGE
    long = authenticators.safe_message(ValueError("\u00e9" + "y" * 500))
    assert len(long) == authenticators.MAX_MESSAGE and long.endswith("...") and long.isascii()


@pytest.mark.django_db
def test_a_project_token_is_no_oauth_grant() -> None:
    """A task started with a project token must never follow an OAuth token that shares its primary key."""
    user = User.objects.create_user("ann")
    app = Application.objects.create(name="a", client_type="public", authorization_grant_type="authorization-code")
    oauth = AccessToken.objects.create(user=user, application=app, token="t", expires="2100-01-01T00:00Z", scope="mcp")
    project_token = type("ApiToken", (), {"pk": oauth.pk})()
    own = AuthInfo(user=user, client_id="", scopes=frozenset({"mcp"}), token=project_token, authenticator="x.Auth")
    assert grant_of(own) == Grant()
    assert grant_of(AuthInfo(user=user, client_id=app.client_id, scopes=frozenset(), token=oauth)) == Grant(
        str(oauth.pk), ""
    )
