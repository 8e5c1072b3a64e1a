"""Settings for the MCP conformance fixture server (``make conformance-server``).

The test settings, minus the test app, serving the dedicated fixture server of
``tests.conformance.fixtures`` from ``tests.conformance.asgi``.
"""

import os

from tests.settings import *  # noqa: F403
from tests.settings import BASE_DIR, DATABASES, INSTALLED_APPS, SILENCED_SYSTEM_CHECKS
from tests.settings import DJANGO_MCP as TESTS_MCP

DEBUG = False
TEST_APPS = ("tests.testapp", "tests.drfapp", "tests.promptapp", "tests.modelapp", "tests.uiapp")
INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in TEST_APPS]
ROOT_URLCONF = "tests.conformance.urls"
ASGI_APPLICATION = "tests.conformance.asgi.application"
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]

if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"]["NAME"] = os.environ.get("MCP_SQLITE", os.path.join(BASE_DIR, "..", ".conformance-db.sqlite3"))

DJANGO_MCP = {
    "SERVER_NAME": "django-mcp-conformance",
    "AUTH": "none",
    "VALIDATE_RESULTS": True,
    "SSE_KEEPALIVE": 15,
    "SSE_RETRY_MS": 500,
    # The suite and `make bench-tasks` send hundreds of requests a minute from loopback: rates off, as in the tests.
    "RATE_LIMITS": TESTS_MCP["RATE_LIMITS"],
}
SILENCED_SYSTEM_CHECKS = [*SILENCED_SYSTEM_CHECKS, "django_mcp.W004"]  # the suite names the fixtures; no titles
