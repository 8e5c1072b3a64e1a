"""The test project with ``AUTH = "oauth"``: django-oauth-toolkit configured by django_mcp."""

import os

from django_mcp.auth import oauth2_provider_settings
from tests.settings import *  # noqa: F403

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "channels",
    "django_mcp",  # before oauth2_provider: its templates (the consent page) win
    "oauth2_provider",
    "tests.testapp",
    "tests.oauth",  # its mcp.py adds scoped and permissioned declarations
]
ROOT_URLCONF = "tests.oauth.urls"
ASGI_APPLICATION = "tests.oauth.asgi.application"
TEMPLATES[0]["DIRS"] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")]  # noqa: F405
LOGIN_URL = "/accounts/login/"
DJANGO_MCP = {
    **DJANGO_MCP,  # noqa: F405
    "AUTH": "oauth",
    "SCOPES": {"mcp": "Connect to the test server", "secret:read": "Read the secret"},
}
OAUTH2_PROVIDER = oauth2_provider_settings(
    # Tests drive expiry themselves; a short code lifetime keeps replay tests honest.
    AUTHORIZATION_CODE_EXPIRE_SECONDS=60,
    # The Client ID Metadata Document is served on loopback http by the test; DOT's default
    # fetcher (rightly) insists on public https hosts.
    CIMD_METADATA_FETCHER="tests.oauth.cimd.LoopbackFetcher",
)
if os.environ.get("MCP_OAUTH_INTROSPECT"):
    # Resource-server-only mode: tokens are checked at another authorization server (RFC 7662).
    OAUTH2_PROVIDER["RESOURCE_SERVER_INTROSPECTION_URL"] = os.environ["MCP_OAUTH_INTROSPECT"]
    OAUTH2_PROVIDER["RESOURCE_SERVER_INTROSPECTION_CREDENTIALS"] = (
        os.environ["MCP_OAUTH_INTROSPECT_ID"],
        os.environ["MCP_OAUTH_INTROSPECT_SECRET"],
    )
# Every test registers from 127.0.0.1: the per-address limit is raised unless a test sets its own.
# A rate string ("4/5 minutes"), or "count,seconds" for the [count, seconds] form of earlier releases.
_registration_rate = os.environ.get("MCP_REGISTRATION_RATE", "10000/hour")
DJANGO_MCP["REGISTRATION_RATE_LIMIT"] = (
    [int(n) for n in _registration_rate.split(",")] if "," in _registration_rate else _registration_rate
)
if os.environ.get("MCP_ACCEPTED_AUDIENCES"):
    DJANGO_MCP["ACCEPTED_AUDIENCES"] = os.environ["MCP_ACCEPTED_AUDIENCES"].split()
