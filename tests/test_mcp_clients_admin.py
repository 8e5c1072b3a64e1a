"""The MCP clients admin on real models: listing, detail, disable / enable / revoke actions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
    set_token_value,
)

from django_mcp.auth.clients import is_client_disabled, sync_clients
from django_mcp.models import MCPClient
from tests.support.factories import make_app, make_token

pytestmark = pytest.mark.django_db

Application = get_application_model()
AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()
CHANGELIST = "admin:django_mcp_mcpclient_changelist"


@pytest.fixture
def reader() -> Any:
    return get_user_model().objects.create_user("reader", password="pw-reader-123")


def test_every_application_gets_a_client_row() -> None:
    app = make_app()
    assert MCPClient.objects.filter(client_id=app.client_id, disabled=False).exists()
    app.delete()
    assert not MCPClient.objects.filter(client_id=app.client_id).exists()


def test_sync_adds_rows_for_applications_created_before() -> None:
    app = make_app()
    MCPClient.objects.all().delete()
    sync_clients()
    assert MCPClient.objects.filter(client_id=app.client_id).exists()


def test_changelist_shows_registration_and_tokens(admin_client: Client, reader: Any) -> None:
    dcr = make_app("Claude", "dcr")
    manual = make_app("Hand made", "manual", "https://example.com/cb")
    make_token(dcr, reader, "tok-1")
    make_token(dcr, reader, "tok-2")
    expired = make_token(manual, reader, "tok-3")
    expired.expires = timezone.now() - timedelta(minutes=1)
    expired.save()
    r = admin_client.get(reverse(CHANGELIST))
    assert r.status_code == 200
    rows = {row.client_id: row for row in r.context["cl"].result_list}
    assert rows[dcr.client_id]._name == "Claude"
    html = r.content.decode()
    assert "dynamic (RFC 7591)" in html and "by hand" in html
    assert rows[dcr.client_id]._tokens == 2
    assert not rows[manual.client_id]._tokens, "an expired token is not active"
    assert rows[manual.client_id]._last_token is not None


def test_changelist_does_not_query_per_row(admin_client: Client, reader: Any) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for i in range(3):
        make_token(make_app(f"c{i}"), reader, f"tok-{i}")
    with CaptureQueriesContext(connection) as few:
        admin_client.get(reverse(CHANGELIST))
    for i in range(3, 9):
        make_token(make_app(f"c{i}"), reader, f"tok-{i}")
    with CaptureQueriesContext(connection) as many:
        admin_client.get(reverse(CHANGELIST))
    assert len(many.captured_queries) == len(few.captured_queries)


def test_detail_page_lists_redirect_uris_and_tokens(admin_client: Client, reader: Any) -> None:
    app = make_app(redirect="http://127.0.0.1:1/cb http://localhost:2/cb")
    make_token(app, reader, "tok-detail")
    client = MCPClient.objects.get(client_id=app.client_id)
    r = admin_client.get(reverse("admin:django_mcp_mcpclient_change", args=[client.pk]))
    assert r.status_code == 200
    html = r.content.decode()
    assert "http://127.0.0.1:1/cb" in html and "http://localhost:2/cb" in html
    assert "reader" in html and "books:read" in html
    assert "tok-detail" not in html, "the admin never shows a token's secret"


def test_no_add_button(admin_client: Client) -> None:
    assert admin_client.get(reverse("admin:django_mcp_mcpclient_add")).status_code == 403


def act(admin_client: Client, action: str, *clients: MCPClient) -> Any:
    return admin_client.post(
        reverse(CHANGELIST),
        {"action": action, "_selected_action": [c.pk for c in clients]},
        follow=True,
    )


def test_disable_revokes_everything_and_enable_restores_the_switch(admin_client: Client, reader: Any) -> None:
    app = make_app()
    other = make_app("Other")
    make_token(app, reader, "tok-a", refresh="ref-a")
    kept = make_token(other, reader, "tok-b")
    get_grant_model().objects.create(
        user=reader,
        application=app,
        code="code-a",
        expires=timezone.now() + timedelta(minutes=1),
        redirect_uri="http://127.0.0.1:33418/callback",
        code_challenge="x" * 43,
        code_challenge_method="S256",
    )
    client = MCPClient.objects.get(client_id=app.client_id)
    r = act(admin_client, "disable_selected", client)
    assert r.status_code == 200 and "Disabled 1 client." in r.content.decode()
    client.refresh_from_db()
    assert client.disabled and client.disabled_at is not None
    assert is_client_disabled(app)
    assert not AccessToken.objects.filter(application=app).exists()
    assert RefreshToken.objects.get(application=app).revoked is not None
    assert not get_grant_model().objects.filter(application=app).exists()
    assert AccessToken.objects.filter(pk=kept.pk).exists(), "other clients keep their tokens"
    assert not is_client_disabled(other)

    r = act(admin_client, "enable_selected", client)
    assert "Enabled 1 client." in r.content.decode()
    assert not is_client_disabled(app)


def test_revoke_tokens_keeps_the_client_enabled(admin_client: Client, reader: Any) -> None:
    app = make_app()
    make_token(app, reader, "tok-1")
    make_token(app, reader, "tok-2")
    client = MCPClient.objects.get(client_id=app.client_id)
    r = act(admin_client, "revoke_selected_tokens", client)
    assert "Revoked 2 access tokens." in r.content.decode()
    assert not AccessToken.objects.filter(application=app).exists()
    assert not is_client_disabled(app)


def test_actions_need_change_permission(reader: Any) -> None:
    from django.contrib.auth.models import Permission

    reader.is_staff = True
    reader.save()
    reader.user_permissions.add(Permission.objects.get(codename="view_mcpclient"))
    app = make_app()
    web = Client()
    web.force_login(reader)
    client = MCPClient.objects.get(client_id=app.client_id)
    web.post(reverse(CHANGELIST), {"action": "disable_selected", "_selected_action": [client.pk]})
    assert not is_client_disabled(app)


def test_is_client_disabled_without_application() -> None:
    assert is_client_disabled(None) is False


def test_staff_edit_allowed_scopes_and_service_user(admin_client: Client, reader: Any) -> None:
    """The per-client scope list and service user are edited in the admin; the rest stays read-only."""
    app = make_app("Nightly", "manual", "https://example.com/cb")
    client = MCPClient.objects.get(client_id=app.client_id)
    url = reverse("admin:django_mcp_mcpclient_change", args=[client.pk])
    page = admin_client.get(url)
    assert page.status_code == 200
    assert b'name="allowed_scopes"' in page.content and b'name="service_user"' in page.content
    assert b'name="client_id"' not in page.content and b'name="disabled"' not in page.content
    r = admin_client.post(url, {"allowed_scopes": "mcp books:read", "service_user": str(reader.pk)})
    assert r.status_code == 302, r.content[:500]
    client.refresh_from_db()
    assert client.allowed_scopes == "mcp books:read" and client.service_user == reader
    assert client.disabled is False and client.client_id == app.client_id


def test_initial_access_tokens_are_listed_not_added(admin_client: Client, reader: Any) -> None:
    from django_mcp.auth import initial_tokens

    raw = initial_tokens.issue(scopes=["mcp"], service_user=reader, description="ci registration")
    r = admin_client.get(reverse("admin:django_mcp_initialaccesstoken_changelist"))
    assert r.status_code == 200 and b"ci registration" in r.content
    assert raw.encode() not in r.content  # only the checksum is stored
    assert admin_client.get(reverse("admin:django_mcp_initialaccesstoken_add")).status_code == 403
    assert initial_tokens.find(raw) is not None and initial_tokens.find(raw + "x") is None


def test_admin_pages_with_tokens_hashed_at_rest(admin_client: Client, reader: Any, settings: Any) -> None:
    """With tokens stored as checksums only, DOT's token admin and the MCP client page still render."""
    from django_mcp.auth import oauth2_provider_settings

    settings.OAUTH2_PROVIDER = oauth2_provider_settings()
    app = make_app()
    token = make_token(app, reader, "raw-bearer-value", refresh="raw-refresh-value")
    token.refresh_from_db()
    assert token.token == "" and token.token_checksum
    assert AccessToken.objects.filter(token="raw-bearer-value").count() == 0
    for url in (
        reverse("admin:oauth2_provider_accesstoken_changelist"),
        reverse("admin:oauth2_provider_accesstoken_change", args=[token.pk]),
        reverse("admin:django_mcp_mcpclient_change", args=[MCPClient.objects.get(client_id=app.client_id).pk]),
    ):
        r = admin_client.get(url)
        assert r.status_code == 200, url
        assert b"raw-bearer-value" not in r.content


def test_a_registration_access_token_is_no_active_token(admin_client: Client, reader: Any) -> None:
    """DCR gives a client a registration access token (RFC 7592, expiring in 9999): it manages the
    registration and opens no MCP request, so the changelist counts it out and the detail page names it."""
    from oauth2_provider.settings import oauth2_settings

    app = make_app("Claude", "dcr")
    registration = AccessToken(
        application=app, scope=oauth2_settings.DCR_REGISTRATION_SCOPE, expires=timezone.now() + timedelta(days=3650)
    )
    set_token_value(registration, "reg-token")
    registration.save()
    make_token(app, reader, "tok-access")
    rows = {row.client_id: row for row in admin_client.get(reverse(CHANGELIST)).context["cl"].result_list}
    assert rows[app.client_id]._tokens == 1  # the access token only
    client = MCPClient.objects.get(client_id=app.client_id)
    html = admin_client.get(reverse("admin:django_mcp_mcpclient_change", args=[client.pk])).content.decode()
    assert "registration access token (RFC 7592)" in html and "expires never" in html
