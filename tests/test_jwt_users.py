"""Which Django user a verified JWT acts as (``JWT_USER_CLAIM`` / ``JWT_USER_FIELD`` / ``JWT_CREATE_USERS``).

The live tests (tests/test_jwt_resource_server.py) cover the refusals through a real identity provider;
these cover creating a user on first use, on the test database.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from django_mcp.auth.jwt_tokens import TokenRefused, find_user, granted_scopes, token_scopes

pytestmark = pytest.mark.django_db

CREATE = {"AUTH": "oauth", "JWT_ISSUER": "https://login.example.com", "JWT_CREATE_USERS": True}


def test_a_missing_user_is_created_only_when_the_setting_says_so() -> None:
    with override_settings(DJANGO_MCP={**CREATE, "JWT_CREATE_USERS": False}):
        with pytest.raises(TokenRefused, match="matches no user"):
            find_user({"sub": "00u1a2b3c"})
    assert not User.objects.filter(username="00u1a2b3c").exists()
    with override_settings(DJANGO_MCP=CREATE):
        user = find_user({"sub": "00u1a2b3c"})
        assert find_user({"sub": "00u1a2b3c"}) == user  # found, not created twice
    assert (user.username, user.has_usable_password(), user.is_staff) == ("00u1a2b3c", False, False)


def test_created_by_email_the_username_is_the_address() -> None:
    with override_settings(DJANGO_MCP={**CREATE, "JWT_USER_CLAIM": "email", "JWT_USER_FIELD": "email"}):
        user = find_user({"email": "New.Person@example.com"})
        assert (user.username, user.email) == ("New.Person@example.com", "New.Person@example.com")
        assert find_user({"email": "new.person@EXAMPLE.com"}) == user


def test_a_created_user_can_still_be_disabled() -> None:
    with override_settings(DJANGO_MCP=CREATE):
        user = find_user({"sub": "someone"})
        User.objects.filter(pk=user.pk).update(is_active=False)
        with pytest.raises(TokenRefused, match="inactive"):
            find_user({"sub": "someone"})


@pytest.mark.parametrize("value", [None, "", 5, ["a"], "x" * 300])
def test_an_unusable_claim_names_no_user(value: object) -> None:
    with override_settings(DJANGO_MCP=CREATE), pytest.raises(TokenRefused, match="names no user"):
        find_user({"sub": value})


def test_scopes_from_scope_scp_and_mapped_groups() -> None:
    mcp = {**CREATE, "JWT_ROLE_SCOPES": {"staff": ["books:write"], "Admins": ["admin"]}}
    with override_settings(DJANGO_MCP=mcp):
        assert token_scopes({"scope": "mcp books:read"}) == {"mcp", "books:read"}
        assert token_scopes({"scp": ["mcp"], "groups": ["staff", "other"]}) == {"mcp", "books:write"}
        assert token_scopes({"scp": "mcp", "roles": "Admins"}) == {"mcp", "admin"}
        assert token_scopes({"groups": "staff", "scope": 5}) == {"books:write"}


def test_scope_groups_narrow_a_jwt_as_they_narrow_the_sites_own_tokens() -> None:
    """A scope reserved to a Django group (SCOPE_GROUPS) is not granted by the provider's token alone."""
    from django.contrib.auth.models import Group

    member, other = User.objects.create_user("member"), User.objects.create_user("other")
    member.groups.add(Group.objects.create(name="vault-readers"))
    mcp = {**CREATE, "SCOPE_GROUPS": {"secret:read": ["vault-readers"]}}
    claims = {"scope": "mcp secret:read"}
    with override_settings(DJANGO_MCP=mcp):
        assert granted_scopes(member, claims) == {"mcp", "secret:read"}
        assert granted_scopes(other, claims) == {"mcp"}
