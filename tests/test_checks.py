"""One test per system check id."""

from __future__ import annotations

from typing import Any

from django.test import override_settings

from django_mcp.checks import check_settings


def ids(**overrides: Any) -> set[str]:
    with override_settings(**overrides):
        return {e.id for e in check_settings()}


def test_clean_settings_pass() -> None:
    assert ids() == set()


def test_e001_not_a_dict() -> None:
    assert "django_mcp.E001" in ids(DJANGO_MCP=["nope"])


def test_e002_unknown_key() -> None:
    assert "django_mcp.E002" in ids(DJANGO_MCP={"SERVER_NAM": "typo"})


def test_e003_channels_missing() -> None:
    from django.conf import settings

    apps = [a for a in settings.INSTALLED_APPS if a != "channels"]
    assert "django_mcp.E003" in ids(INSTALLED_APPS=apps)


def test_w002_no_asgi_application() -> None:
    assert "django_mcp.W002" in ids(ASGI_APPLICATION=None)


def test_e005_asgi_not_routing_endpoint() -> None:
    assert "django_mcp.E005" in ids(ASGI_APPLICATION="tests.asgi_without_mcp.application")
    assert "django_mcp.E005" in ids(ASGI_APPLICATION="tests.no_such_module.application")


def test_e006_bad_auth() -> None:
    assert "django_mcp.E006" in ids(DJANGO_MCP={"AUTH": "maybe"})


def test_e007_bad_body_size() -> None:
    assert "django_mcp.E007" in ids(DJANGO_MCP={"MAX_BODY_SIZE": 0})
    assert "django_mcp.E007" in ids(DJANGO_MCP={"MAX_BATCH_SIZE": 0})
    assert "django_mcp.E007" in ids(DJANGO_MCP={"MAX_BATCH_SIZE": "100"})
    assert "django_mcp.E007" not in ids(DJANGO_MCP={"MAX_BATCH_SIZE": 1})


def test_e008_unknown_event_cache() -> None:
    assert "django_mcp.E008" in ids(DJANGO_MCP={"EVENT_STORE_CACHE": "nope"})


def test_w001_no_channel_layer() -> None:
    assert "django_mcp.W001" in ids(CHANNEL_LAYERS={})
