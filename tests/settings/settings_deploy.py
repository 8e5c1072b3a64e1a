"""The test project as a deployment sets it, for ``manage.py check --deploy`` (tests/test_deploy_checks.py).

``MCP_DEPLOY=guide``: what docs/deployment.md recommends: OAuth, DEBUG off, PostgreSQL with Django's
connection pool (never connected to by ``check`` without ``--database``; ``MCP_DEPLOY_DB=sqlite`` keeps
the test project's SQLite file), Redis for the channel layer and the event store, the database task backend.
``MCP_DEPLOY=development``: the development defaults carried into production: ``AUTH = "none"``, SQLite,
the in-memory layer, the local-memory cache and ``ImmediateBackend``.
"""

import importlib.util
import os

from tests.oauth.settings import *  # noqa: F403
from tests.support.guide import guide_settings

TASKS_PACKAGE = "django.tasks" if importlib.util.find_spec("django.tasks") else "django_tasks"
INSTALLED_APPS = [*INSTALLED_APPS, "django_tasks_db"]  # noqa: F405  (the database task backend's queue)
if TASKS_PACKAGE == "django_tasks":
    INSTALLED_APPS.append("django_tasks")

DEBUG = False
ALLOWED_HOSTS = ["mcp.example.com"]
if os.environ.get("MCP_DEPLOY") == "development":
    DJANGO_MCP = {**DJANGO_MCP, "AUTH": "none"}  # noqa: F405
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    TASKS = {"default": {"BACKEND": f"{TASKS_PACKAGE}.backends.immediate.ImmediateBackend"}}
    SILENCED_SYSTEM_CHECKS = ["django_mcp.E009"]  # AUTH "none" with DEBUG off: the error; W023 is the deploy check
else:  # what docs/deployment.md gives, read from the page
    GUIDE = guide_settings()
    CHANNEL_LAYERS = GUIDE["CHANNEL_LAYERS"]
    CACHES = GUIDE["CACHES"]
    DJANGO_MCP = {**DJANGO_MCP, **GUIDE["DJANGO_MCP"]}
    if os.environ.get("MCP_DEPLOY_DB") != "sqlite":
        DATABASES = {"default": {**GUIDE["DATABASES"]["default"], "NAME": "library", "HOST": "127.0.0.1"}}
        if os.environ.get("MCP_DEPLOY_NO_POOL"):  # W022: a connection per sync tool call
            del DATABASES["default"]["OPTIONS"]["pool"]
