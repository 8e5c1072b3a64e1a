"""tests.settings plus the operations settings (shutdown grace, session cache bounds) from the environment.

The slow sync tool the shutdown test needs is tests.testapp's ``sync_sleep``.
"""

import os

from tests.settings import *  # noqa: F403
from tests.settings import DJANGO_MCP

DJANGO_MCP = {
    **DJANGO_MCP,
    "SHUTDOWN_GRACE": float(os.environ.get("MCP_SHUTDOWN_GRACE", "20")),
    "SESSION_CACHE_SIZE": int(os.environ.get("MCP_SESSION_CACHE_SIZE", "10000")),
    "SESSION_CACHE_MAX_AGE": float(os.environ.get("MCP_SESSION_CACHE_MAX_AGE", "900")),
}
if "MCP_PG_PORT" in os.environ:  # a PostgreSQL cluster of the test's own
    DATABASES["default"]["PORT"] = os.environ["MCP_PG_PORT"]  # noqa: F405
if os.environ.get("MCP_EVENT_CACHE") == "db":  # the event store on Django's database cache
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "mcp_test_cache"}}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"t": {"format": "%(asctime)s %(name)s %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "t"}},
    "loggers": {"django_mcp": {"handlers": ["stderr"], "level": "INFO", "propagate": False}},
}
