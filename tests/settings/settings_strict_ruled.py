"""Strict mode on a site whose declarations all name an access rule (tests/strictapp): it starts."""

from tests.settings import *  # noqa: F403

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "channels",
    "django_mcp",
    "oauth2_provider",
    "tests.strictapp",
]
ROOT_URLCONF = "tests.settings.urls_strict"
DJANGO_MCP = {**DJANGO_MCP, "REQUIRE_ACCESS_RULES": True}  # noqa: F405
