"""The OAuth system checks (django_mcp.E030-E036, W030-W031, E260, W260-W261), one test per id."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from django_mcp.auth import REQUIRED, oauth2_provider_settings
from django_mcp.auth.checks import check_login, check_oauth, check_scope_groups
from django_mcp.auth.group_scopes import permitted_scopes
from django_mcp.checks import check_settings
from tests.oauth import settings as oauth_settings

OAUTH = {"AUTH": "oauth"}


def ids(**overrides: Any) -> list[str]:
    dot = overrides.pop("dot", {})
    base: dict[str, Any] = {
        "INSTALLED_APPS": oauth_settings.INSTALLED_APPS,
        "ROOT_URLCONF": "tests.oauth.urls",
        "DJANGO_MCP": OAUTH,
        "OAUTH2_PROVIDER": oauth2_provider_settings(**dot),
    }
    with override_settings(**{**base, **overrides}):
        return [e.id for e in check_oauth()]


def test_clean_configuration() -> None:
    assert ids() == []


def test_no_checks_without_oauth() -> None:
    assert ids(DJANGO_MCP={"AUTH": "none"}, OAUTH2_PROVIDER={"PKCE_REQUIRED": False}) == []


def test_e030_oauth2_provider_not_installed() -> None:
    apps = [a for a in oauth_settings.INSTALLED_APPS if a not in ("oauth2_provider", "tests.oauth")]
    assert ids(INSTALLED_APPS=apps) == ["django_mcp.E030"]


@pytest.mark.parametrize("key", sorted(REQUIRED))
def test_e031_contradicting_dot_setting(key: str) -> None:
    assert ids(dot={key: not REQUIRED[key]}) == ["django_mcp.E031"]


def test_e031_callable_pkce_policy_is_accepted() -> None:
    assert ids(dot={"PKCE_REQUIRED": lambda client_id: True}) == []


def test_e032_private_use_redirect_schemes() -> None:
    assert ids(dot={"ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https", "myapp"]}) == ["django_mcp.E032"]


def test_e033_malformed_scopes_setting() -> None:
    """Checked with every other setting (django_mcp.checks.check_settings), once, not by check_oauth."""
    for scopes in ({"two words": "bad"}, ["mcp"]):
        assert ids(DJANGO_MCP={**OAUTH, "SCOPES": scopes}) == []
        with override_settings(DJANGO_MCP={**OAUTH, "SCOPES": scopes}):
            assert [e.id for e in check_settings()] == ["django_mcp.E033"]


def test_e034_urls_not_included() -> None:
    assert ids(ROOT_URLCONF="tests.settings.urls_without_mcp") == ["django_mcp.E034"]


def test_w030_foreign_scopes_backend() -> None:
    assert ids(dot={"SCOPES_BACKEND_CLASS": "oauth2_provider.scopes.SettingsScopes"}) == ["django_mcp.W030"]


def test_w031_foreign_validator() -> None:
    validator = "oauth2_provider.oauth2_validators.OAuth2Validator"
    assert ids(dot={"OAUTH2_VALIDATOR_CLASS": validator}) == ["django_mcp.W031"]


# -- The login page the consent step sends signed-out users to (E035, E036; tag "urls") ---------------

#: No tests/oauth/templates/registration/login.html (found both as a DIRS entry and as tests.oauth's app directory).
NO_DIRS = [{**oauth_settings.TEMPLATES[0], "DIRS": [], "APP_DIRS": False}]


def login_ids(**overrides: Any) -> list[str]:
    base: dict[str, Any] = {
        "INSTALLED_APPS": oauth_settings.INSTALLED_APPS,
        "ROOT_URLCONF": "tests.oauth.urls",
        "DJANGO_MCP": OAUTH,
        "LOGIN_URL": "/accounts/login/",
        "TEMPLATES": oauth_settings.TEMPLATES,
    }
    with override_settings(**{**base, **overrides}):
        return [e.id for e in check_login()]


def test_login_check_is_a_urls_check() -> None:
    from django.core.checks import registry

    assert check_login in registry.registry.get_checks() and "urls" in check_login.tags  # type: ignore[attr-defined]


def test_login_page_found() -> None:
    assert login_ids() == []
    assert login_ids(LOGIN_URL="login") == [], "a URL name is reversed"
    assert login_ids(LOGIN_URL="/accounts/login/?next=/") == []
    assert login_ids(LOGIN_URL="https://sso.example.com/login") == [], "a login page on another site is not checked"
    assert login_ids(DJANGO_MCP={"AUTH": "none"}, LOGIN_URL="/nowhere/") == [], "only with OAuth"


def test_e035_login_url_does_not_resolve() -> None:
    assert login_ids(LOGIN_URL="/nowhere/") == ["django_mcp.E035"]
    assert login_ids(LOGIN_URL="no-such-url-name") == ["django_mcp.E035"]
    assert login_ids(LOGIN_URL="accounts/login/") == ["django_mcp.E035"], "a relative URL"
    # Django's default LOGIN_URL ("/accounts/login/") in a project that routes no login page.
    assert login_ids(ROOT_URLCONF="tests.settings.urls_oauth_login_missing") == ["django_mcp.E035"]


def test_e035_hint_shows_the_route() -> None:
    with override_settings(DJANGO_MCP=OAUTH, ROOT_URLCONF="tests.oauth.urls", LOGIN_URL="/nowhere/"):
        (error,) = check_login()
    assert "'/nowhere/'" in error.msg and "LoginView.as_view()" in error.hint


def test_e036_login_template_missing() -> None:
    with override_settings(
        INSTALLED_APPS=oauth_settings.INSTALLED_APPS,
        DJANGO_MCP=OAUTH,
        ROOT_URLCONF="tests.oauth.urls",
        LOGIN_URL="/accounts/login/",
        TEMPLATES=NO_DIRS,
    ):
        (error,) = check_login()
    assert error.id == "django_mcp.E036"
    assert "TemplateDoesNotExist: registration/login.html" in error.msg and "templates/registration" in error.hint
    assert login_ids(LOGIN_URL="login", TEMPLATES=NO_DIRS) == ["django_mcp.E036"]


# -- JWT access tokens from an external authorization server (E291, E292, W280, W281) ----------------

ISSUER = {"JWT_ISSUER": "https://login.example.com/realms/staff"}


def jwt_ids(**mcp: Any) -> list[str]:
    from django_mcp.auth.checks import check_jwt

    with override_settings(DJANGO_MCP=mcp):
        return [e.id for e in check_jwt()]


def test_jwt_clean_configuration() -> None:
    assert jwt_ids(**OAUTH, **ISSUER) == []
    assert jwt_ids(**OAUTH, **ISSUER, JWT_USER_FIELD="email", JWT_ROLE_SCOPES={"staff": ["mcp"]}) == []
    assert jwt_ids(**OAUTH) == []


def test_e271_issuer_without_oauth() -> None:
    assert jwt_ids(AUTH="none", **ISSUER) == ["django_mcp.E291"]


def test_e272_user_field_not_on_the_user_model() -> None:
    assert jwt_ids(**OAUTH, **ISSUER, JWT_USER_FIELD="mail") == ["django_mcp.E292"]
    assert jwt_ids(**OAUTH, **ISSUER, JWT_USER_FIELD="groups") == ["django_mcp.E292"], "a relation is no field"


def test_w270_role_mapped_to_a_scope_the_site_lacks() -> None:
    assert jwt_ids(**OAUTH, **ISSUER, JWT_ROLE_SCOPES={"staff": ["mcp", "boks:write"]}) == ["django_mcp.W280"]


def test_w271_jwt_keys_without_issuer() -> None:
    assert jwt_ids(**OAUTH, JWT_JWKS_URI="https://keys.example.com/jwks") == ["django_mcp.W281"]
    assert jwt_ids(**OAUTH, JWT_ROLE_SCOPES={"staff": ["mcp"]}) == ["django_mcp.W281"]


def test_jwt_settings_values_are_checked() -> None:
    """Each JWT_* value has its own id (check_settings): an http issuer off loopback, HMAC, a large leeway."""
    bad = {"JWT_ISSUER": "http://login.example.com", "JWT_ALGORITHMS": ["HS256"], "JWT_LEEWAY": 3600}
    with override_settings(DJANGO_MCP={**OAUTH, **bad}):
        assert sorted(e.id for e in check_settings()) == ["django_mcp.E280", "django_mcp.E282", "django_mcp.E283"]


# -- Identity assertions from company IdPs (E293, E294) -------------------------------------------------

IDJAG = {"IDJAG_ISSUERS": ["https://login.example.com"]}


def test_idjag_clean_configuration() -> None:
    assert jwt_ids(**OAUTH, **IDJAG) == []
    with override_settings(DJANGO_MCP={**OAUTH, **IDJAG}):
        assert [e.id for e in check_settings()] == []


def test_e294_idjag_without_oauth() -> None:
    assert jwt_ids(AUTH="none", **IDJAG) == ["django_mcp.E294"]


def test_idjag_user_field_is_checked_without_jwt_issuer() -> None:
    assert jwt_ids(**OAUTH, **IDJAG, JWT_USER_FIELD="mail") == ["django_mcp.E292"]


def test_e293_idjag_issuers_value() -> None:
    for bad in (["http://login.example.com"], "https://login.example.com", ["https://login.example.com/#x"]):
        with override_settings(DJANGO_MCP={**OAUTH, "IDJAG_ISSUERS": bad}):
            assert [e.id for e in check_settings()] == ["django_mcp.E293"], bad


# -- SCOPE_GROUPS: W260-W261, and the narrowing itself ---------------------------------------------------


def scope_group_ids(**mcp: Any) -> list[str]:
    with override_settings(DJANGO_MCP={**OAUTH, "SCOPES": {"mcp": "Connect", "secret:read": "Read"}, **mcp}):
        return [e.id for e in check_scope_groups()]


def test_scope_groups_naming_site_scopes_are_clean() -> None:
    assert scope_group_ids(SCOPE_GROUPS={"secret:read": ["vault-readers"]}) == []
    assert scope_group_ids() == []


def test_w260_scope_groups_names_an_unknown_scope() -> None:
    assert scope_group_ids(SCOPE_GROUPS={"secret:raed": ["vault-readers"]}) == ["django_mcp.W260"]


def test_w261_scope_groups_without_oauth() -> None:
    assert scope_group_ids(AUTH="none", SCOPE_GROUPS={"secret:read": ["vault-readers"]}) == ["django_mcp.W261"]


def test_e260_malformed_scope_groups() -> None:
    with override_settings(DJANGO_MCP={**OAUTH, "SCOPE_GROUPS": {"secret:read": "vault-readers"}}):
        assert "django_mcp.E260" in [e.id for e in check_settings()]


@pytest.mark.django_db
def test_permitted_scopes_follow_group_membership() -> None:
    from django.contrib.auth.models import AnonymousUser, Group, User

    readers = Group.objects.create(name="vault-readers")
    Group.objects.create(name="auditors")
    member, other = User.objects.create_user("member"), User.objects.create_user("other")
    member.groups.add(readers)
    asked = ["mcp", "secret:read", "audit:read"]
    rules = {"secret:read": ["vault-readers", "auditors"], "audit:read": ["auditors"]}
    with override_settings(DJANGO_MCP={**OAUTH, "SCOPE_GROUPS": rules}):
        assert permitted_scopes(member, asked) == ["mcp", "secret:read"]
        assert permitted_scopes(other, asked) == ["mcp"]
        assert permitted_scopes(AnonymousUser(), asked) == ["mcp"]
        assert permitted_scopes(None, asked) == ["mcp"]
    with override_settings(DJANGO_MCP=OAUTH):  # no rule: every scope stays open
        assert permitted_scopes(other, asked) == asked
