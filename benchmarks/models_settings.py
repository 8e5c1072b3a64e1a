"""Settings for ``models_vs_drf.py``: one server serving the MCP endpoint and the DRF views.

The test suite's project without its test apps, plus ``benchmarks.modelbench``. DEBUG
off, ``AUTH = "none"``, result validation off, in-memory channel layer. The database is
SQLite in ``MCP_SQLITE`` or, with ``MCP_TEST_DB=postgres``, PostgreSQL database
``MCP_PG_NAME``, with Django's default ``CONN_MAX_AGE = 0``: under ASGI each sync view
runs in a thread of its own, so persistent connections would leak one per request.
``BENCH_MIDDLEWARE=none`` drops the ``startproject`` middleware (it only wraps the DRF
views: the MCP endpoint is routed before Django's handler).
"""

import os
import tempfile

from tests.settings import *  # noqa: F403
from tests.settings import DJANGO_MCP, INSTALLED_APPS

DEBUG = False
INSTALLED_APPS = [app for app in INSTALLED_APPS if not app.startswith("tests.")] + ["benchmarks.modelbench"]
ROOT_URLCONF = "benchmarks.models_urls"
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
if os.environ.get("BENCH_MIDDLEWARE") == "none":
    MIDDLEWARE = []
    SILENCED_SYSTEM_CHECKS = ["django_mcp.E009", "admin.E408", "admin.E409", "admin.E410"]
if os.environ.get("MCP_TEST_DB") == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("MCP_PG_NAME", "django_mcp_bench"),
            "USER": "postgres",
            "HOST": "127.0.0.1",
            "PORT": "5432",
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get(
                "MCP_SQLITE", os.path.join(tempfile.gettempdir(), "django-mcp-models-bench.sqlite3")
            ),
        }
    }
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 1000}}}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
DJANGO_MCP = {**DJANGO_MCP, "AUTH": "none", "VALIDATE_RESULTS": False, "PAGE_SIZE": 100, "SERVER_NAME": "models-bench"}
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "UNAUTHENTICATED_USER": None,
}
