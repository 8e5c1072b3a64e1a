"""The deployment guide's stack for ``benchmarks/deploy_stack.py``: the benchmark tools on the settings
docs/deployment.md gives (read from the page), with one part swapped out at a time by environment variables.

``MCP_STACK_DB``: ``pool`` (the guide: PostgreSQL with Django's pool), ``no-pool`` (``CONN_MAX_AGE = 0``
and no pool, Django's default), ``sqlite``. ``MCP_STACK_LAYER``: ``redis`` (the guide's channel layer and
cache, at ``MCP_STACK_REDIS``, a Redis the benchmark started) or ``memory``. ``MCP_STACK_AUDIT=0``: no audit
log. ``MCP_STACK_TOKEN_CACHE=0``: no token cache (``TOKEN_CACHE_MAX_AGE = 0``). ``MCP_PG_NAME``: the
database. The endpoint takes bearer tokens (``AUTH = "oauth"``), as the guide says.
"""

import os

from benchmarks.settings import *  # noqa: F403
from benchmarks.settings import DJANGO_MCP, TEMPLATES
from django_mcp.auth import oauth2_provider_settings
from tests.support.guide import guide_settings

GUIDE = guide_settings()
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "benchmarks.urls_deploy"
OAUTH2_PROVIDER = oauth2_provider_settings()
LOGIN_URL = "/accounts/login/"
TEMPLATES[0]["DIRS"] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "oauth", "templates")]
SILENCED_SYSTEM_CHECKS = ["django_mcp.W004"]  # the benchmark tools carry no hints
_db = os.environ.get("MCP_STACK_DB", "pool")
if _db != "sqlite":
    DATABASES = {
        "default": {
            **GUIDE["DATABASES"]["default"],
            "NAME": os.environ["MCP_PG_NAME"],
            "USER": "postgres",
            "HOST": "127.0.0.1",
        }
    }
    if _db == "no-pool":
        DATABASES["default"]["OPTIONS"] = {k: v for k, v in DATABASES["default"]["OPTIONS"].items() if k != "pool"}
if os.environ.get("MCP_STACK_LAYER", "redis") == "redis":
    _redis = os.environ["MCP_STACK_REDIS"]
    CHANNEL_LAYERS = GUIDE["CHANNEL_LAYERS"]
    CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]["address"] = f"{_redis}/0"
    CACHES = {"default": {**GUIDE["CACHES"]["default"], "LOCATION": f"{_redis}/1"}}
DJANGO_MCP = {
    **DJANGO_MCP,
    **GUIDE["DJANGO_MCP"],
    "SERVER_NAME": "django-mcp-bench",
    "VALIDATE_RESULTS": False,
    "AUDIT_LOG": os.environ.get("MCP_STACK_AUDIT", "1") == "1",
}
if os.environ.get("MCP_STACK_TOKEN_CACHE", "1") == "0":
    DJANGO_MCP["TOKEN_CACHE_MAX_AGE"] = 0
