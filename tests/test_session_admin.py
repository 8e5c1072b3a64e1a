"""The session admin never prints a whole ``Mcp-Session-Id``.

Django's test client drives the real admin views (login, changelist, search, detail,
history, delete pages, actions). Two users' sessions from two OAuth clients: every
page's HTML is searched for either full id.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from django_mcp.models import MCPClient, MCPSession

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:django_mcp_mcpsession_changelist")


@pytest.fixture
def sessions() -> list[MCPSession]:
    User = get_user_model()
    made = []
    for name, client in (("alice", "client-a"), ("bob", "client-b")):
        user = User.objects.create_user(name)
        MCPClient.objects.create(client_id=client)
        made.append(
            MCPSession.objects.create(
                id=secrets.token_urlsafe(32),
                protocol_version="2025-11-25",
                client_info={"name": f"{name}-app", "version": "1"},
                user=user,
                oauth_client=client,
                last_seen=timezone.now(),
                subscriptions=["test://static/hello"],
            )
        )
    return made


@pytest.fixture
def staff() -> Client:
    boss = get_user_model().objects.create_superuser("boss", "boss@example.com", "pw-boss-123")
    client = Client()
    client.force_login(boss)
    return client


def page(staff: Client, url: str, ids: list[str], **kwargs: Any) -> str:
    r = staff.post(url, kwargs, follow=True) if kwargs else staff.get(url, follow=True)
    assert r.status_code == 200, (url, r.status_code)
    html = r.content.decode()
    for full in ids:
        assert full not in html, url
        assert full[:17] not in html, url  # nothing longer than the 16-character admin key either
    return html


def detail_links(html: str) -> list[str]:
    return re.findall(r'href="(/admin/django_mcp/mcpsession/[^/"]+/change/)[^"]*"', html)


def test_no_page_prints_a_full_session_id(staff: Client, sessions: list[MCPSession]) -> None:
    ids = [s.id for s in sessions]
    listing = page(staff, CHANGELIST, ids)
    for s in sessions:
        assert s.id[:8] + "…" in listing
    links = detail_links(listing)
    assert len(links) == 2
    for link in links:
        detail = page(staff, link, ids)
        assert "…" in detail
        page(staff, link.replace("/change/", "/history/"), ids)
        page(staff, link.replace("/change/", "/delete/"), ids)
    keys = re.findall(rf'name="{ACTION_CHECKBOX_NAME}" value="([^"]+)"', listing)
    assert sorted(keys) == sorted(s.id[:16] for s in sessions)
    # The delete-selected confirmation page lists the objects and echoes their keys.
    page(staff, CHANGELIST, ids, action="delete_selected", **{ACTION_CHECKBOX_NAME: keys})
    client = MCPClient.objects.get(client_id="client-a")
    page(staff, reverse("admin:django_mcp_mcpclient_change", args=[client.pk]), ids)
    for s in sessions:
        assert s.id not in str(s)


def test_search_by_prefix(staff: Client, sessions: list[MCPSession]) -> None:
    ids = [s.id for s in sessions]
    alice, bob = sessions
    for prefix in (alice.id[:8], alice.id[:16]):
        html = page(staff, f"{CHANGELIST}?q={prefix}", ids)
        assert alice.id[:8] + "…" in html and bob.id[:8] + "…" not in html
        assert len(detail_links(html)) == 1


def test_actions_reach_the_chosen_session_only(staff: Client, sessions: list[MCPSession]) -> None:
    alice, bob = sessions
    html = page(staff, CHANGELIST, [alice.id, bob.id])
    key = next(k for k in re.findall(r'value="([^"]+)"', html) if alice.id.startswith(k) and len(k) == 16)
    page(staff, CHANGELIST, [alice.id, bob.id], action="end_sessions", **{ACTION_CHECKBOX_NAME: [key]})
    alice.refresh_from_db()
    bob.refresh_from_db()
    assert alice.ended is not None and bob.ended is None
    # Deleting through the detail page deletes that row, by its real id.
    r = staff.post(reverse("admin:django_mcp_mcpsession_delete", args=[bob.id[:16]]), {"post": "yes"})
    assert r.status_code == 302
    assert list(MCPSession.objects.values_list("id", flat=True)) == [alice.id]


def test_short_or_unknown_keys_find_nothing(staff: Client, sessions: list[MCPSession]) -> None:
    alice = sessions[0]
    for key in (alice.id[:8], "x" * 16):
        r = staff.get(reverse("admin:django_mcp_mcpsession_change", args=[key]))
        assert r.status_code == 302  # Django's "doesn't exist" redirect to the admin index
