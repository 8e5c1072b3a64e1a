"""Settings for ``drf_tool.py``: the example project as docs/deployment.md runs it, on PostgreSQL.

The example's own settings with ``DJANGO_PG_NAME`` set (the guide's database block: Django's
psycopg pool, ``CONN_MAX_AGE = 0``, health checks), DEBUG off, logging quiet. What the benchmark
adds: its REST API accepts the same OAuth bearer tokens as the MCP endpoint (DOT's
``OAuth2Authentication``), so both sides authenticate a request the same way, and with
``MCP_BENCH_REDIS`` the channel layer is Redis, as the guide's several workers need; the rate
limits stay on at a rate no run reaches.
"""

import os

os.environ.setdefault("DJANGO_PG_NAME", "django_mcp_drf_bench")

from example_project.settings import *  # noqa: F403
from example_project.settings import DJANGO_MCP

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["oauth2_provider.contrib.rest_framework.OAuth2Authentication"],
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
if os.environ.get("MCP_BENCH_REDIS"):
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [os.environ["MCP_BENCH_REDIS"]]},
        }
    }
# The default per-user limit (600/minute) would refuse a load test within seconds: the limiter still
# counts every request, at a rate no run reaches.
DJANGO_MCP = {**DJANGO_MCP, "RATE_LIMITS": {"user": "10000000/minute", "anonymous": "10000000/minute"}}
