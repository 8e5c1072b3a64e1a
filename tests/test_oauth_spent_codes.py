"""Spent authorization codes: a replay revokes exactly what the first exchange issued; old rows are pruned."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_application_model, get_refresh_token_model

from django_mcp.auth.validators import _checksum, prune_spent_codes, revoke_spent_code
from django_mcp.models import SpentAuthorizationCode

pytestmark = pytest.mark.django_db


def issue(app: Any, user: Any, raw: str) -> tuple[Any, Any]:
    import uuid

    access = get_access_token_model().objects.create(
        user=user, application=app, token=raw, expires=timezone.now() + timedelta(hours=1), scope="mcp"
    )
    refresh = get_refresh_token_model().objects.create(
        user=user, application=app, token="r-" + raw, access_token=access, token_family=uuid.uuid4()
    )
    return access, refresh


def test_revoke_touches_only_the_replayed_codes_tokens() -> None:
    users = [get_user_model().objects.create_user(n) for n in ("alice", "bob")]
    apps = [
        get_application_model().objects.create(
            name=n, client_type="public", authorization_grant_type="authorization-code", redirect_uris="https://x/cb"
        )
        for n in ("one", "two")
    ]
    mine = issue(apps[0], users[0], "alice-token")
    theirs = issue(apps[1], users[1], "bob-token")
    for (access, refresh), app, code in ((mine, apps[0], "code-a"), (theirs, apps[1], "code-b")):
        SpentAuthorizationCode.objects.create(
            code_checksum=_checksum(code),
            client_id=app.client_id,
            access_token_checksum=access.token_checksum,
            refresh_token_checksum=refresh.token_checksum,
        )
    # Another client presenting alice's code revokes nothing.
    assert revoke_spent_code("code-a", apps[1].client_id) == 0
    assert get_access_token_model().objects.filter(pk=mine[0].pk).exists()
    assert revoke_spent_code("code-a", apps[0].client_id) == 1
    assert not get_access_token_model().objects.filter(pk=mine[0].pk).exists()
    assert get_refresh_token_model().objects.get(pk=mine[1].pk).revoked is not None
    # bob's grant is untouched; a second replay has nothing left to revoke.
    assert get_access_token_model().objects.filter(pk=theirs[0].pk).exists()
    assert get_refresh_token_model().objects.get(pk=theirs[1].pk).revoked is None
    assert revoke_spent_code("code-a", apps[0].client_id) == 0


def test_prune_spent_codes() -> None:
    old = SpentAuthorizationCode.objects.create(code_checksum="a" * 64, client_id="c")
    SpentAuthorizationCode.objects.filter(pk=old.pk).update(created=timezone.now() - timedelta(days=40))
    SpentAuthorizationCode.objects.create(code_checksum="b" * 64, client_id="c")
    assert prune_spent_codes(30 * 24 * 3600) == 1
    assert list(SpentAuthorizationCode.objects.values_list("code_checksum", flat=True)) == ["b" * 64]


def test_mcp_cleanup_prunes_spent_codes() -> None:
    from io import StringIO

    from django.core.management import call_command

    old = SpentAuthorizationCode.objects.create(code_checksum="c" * 64, client_id="c")
    SpentAuthorizationCode.objects.filter(pk=old.pk).update(created=timezone.now() - timedelta(days=400))
    SpentAuthorizationCode.objects.create(code_checksum="d" * 64, client_id="c")
    out = StringIO()
    call_command("mcp_cleanup", "--dry-run", stdout=out)
    assert "spent authorization codes would be deleted: 1" in out.getvalue()
    assert SpentAuthorizationCode.objects.count() == 2
    out = StringIO()
    call_command("mcp_cleanup", stdout=out)
    assert "spent authorization codes deleted: 1" in out.getvalue()
    assert list(SpentAuthorizationCode.objects.values_list("code_checksum", flat=True)) == ["d" * 64]
