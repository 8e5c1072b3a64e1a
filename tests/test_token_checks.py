"""System checks of the project-token settings (``AUTHENTICATION_CLASSES``, ``TOKEN_SCOPES``): E220-E222, W220."""

from __future__ import annotations

from typing import Any

from django.test import override_settings

from django_mcp.auth.checks import check_authentication_classes
from django_mcp.checks import check_settings

DRF_TOKEN = "rest_framework.authentication.TokenAuthentication"


def found(**mcp: Any) -> list[Any]:
    with override_settings(DJANGO_MCP=mcp):
        return [*check_settings(), *check_authentication_classes()]


def by_id(errors: list[Any], check_id: str) -> list[Any]:
    return [e for e in errors if e.id == f"django_mcp.{check_id}"]


def not_a_class(request: Any) -> None:
    """A function where a class belongs."""


class NoAuthenticate:
    """A class without ``authenticate``."""


def test_configured_classes_and_hook_pass() -> None:
    assert found(AUTH="oauth", AUTHENTICATION_CLASSES=[DRF_TOKEN], TOKEN_SCOPES=lambda user, auth: ["mcp"]) == []


def test_e210_an_entry_that_cannot_be_imported() -> None:
    (error,) = by_id(found(AUTH="oauth", AUTHENTICATION_CLASSES=[DRF_TOKEN, "myproject.nope.Auth"]), "E220")
    assert "'myproject.nope.Auth', which cannot be imported" in error.msg
    assert by_id(found(AUTH="oauth", AUTHENTICATION_CLASSES=DRF_TOKEN), "E220")  # a string, not a list


def test_e211_an_entry_without_authenticate() -> None:
    errors = found(
        AUTH="oauth",
        AUTHENTICATION_CLASSES=[DRF_TOKEN, "tests.test_token_checks.not_a_class", NoAuthenticate],
    )
    e211 = by_id(errors, "E221")
    assert len(e211) == 2 and all(e.level == 40 for e in e211), errors
    assert "not_a_class" in e211[0].msg and "NoAuthenticate" in e211[1].msg
    assert not by_id(errors, "E220")


def test_e212_scope_hook_not_callable() -> None:
    (error,) = by_id(found(AUTH="oauth", TOKEN_SCOPES="django_mcp.conf.DEFAULTS"), "E222")
    assert "not callable" in error.msg
    (error,) = by_id(found(AUTH="oauth", TOKEN_SCOPES="myproject.nope.scopes"), "E222")
    assert "cannot be imported" in error.msg
    assert by_id(found(AUTH="oauth", TOKEN_SCOPES={"mcp"}), "E222")


def test_w210_classes_without_oauth() -> None:
    (warning,) = by_id(found(AUTH="none", AUTHENTICATION_CLASSES=[DRF_TOKEN]), "W220")
    assert warning.level == 30
    assert not by_id(found(AUTH="oauth", AUTHENTICATION_CLASSES=[DRF_TOKEN]), "W220")
    assert not by_id(found(AUTH="none"), "W220")
