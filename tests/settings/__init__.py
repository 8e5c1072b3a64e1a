"""Settings for the test suite (a small project separate from example_project)."""

import importlib.util
import json
import os

BASE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
SECRET_KEY = "tests-only-secret-key-not-for-production-0123456789"
DEBUG = False
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]", "testserver"]
INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "channels",
    "django_mcp",  # before oauth2_provider: its consent page template wins
    "oauth2_provider",
    "rest_framework",
    "tests.testapp",
    "tests.promptapp",
    "tests.drfapp",
    "tests.drfbig",
    "tests.modelapp",
    "tests.uiapp",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
# Django's Tasks framework runs task tools: django.tasks on Django 6.0+, the django-tasks backport on 5.2,
# with the database backend (`manage.py db_worker`).
if importlib.util.find_spec("django.tasks") is None:
    INSTALLED_APPS.append("django_tasks")
INSTALLED_APPS.append("django_tasks_db")
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
ROOT_URLCONF = "tests.settings.urls"
ASGI_APPLICATION = "tests.settings.asgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DB = os.environ.get("MCP_TEST_DB", "sqlite")
if DB == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("MCP_PG_NAME", "test"),
            "USER": os.environ.get("MCP_PG_USER", "postgres"),
            "HOST": "127.0.0.1",
            "PORT": os.environ.get("MCP_PG_PORT", "5432"),
            # The PostgreSQL restart test (tests/production) runs with persistent, health-checked connections.
            "CONN_MAX_AGE": float(os.environ.get("MCP_CONN_MAX_AGE", "0")),
            "CONN_HEALTH_CHECKS": os.environ.get("MCP_CONN_HEALTH_CHECKS", "0") == "1",
            "OPTIONS": {"connect_timeout": 5},
            # MCP_PG_POOL=<max_size>: Django's connection pool, as docs/deployment.md sets it (CONN_MAX_AGE 0).
            "TEST": {"NAME": os.environ.get("MCP_PG_TEST_NAME", "test_django_mcp")},
        }
    }
    if os.environ.get("MCP_PG_POOL"):  # the guide's database options, read from docs/deployment.md
        from tests.support.guide import guide_settings

        guide = guide_settings()["DATABASES"]["default"]
        DATABASES["default"].update(CONN_MAX_AGE=guide["CONN_MAX_AGE"], CONN_HEALTH_CHECKS=guide["CONN_HEALTH_CHECKS"])
        DATABASES["default"]["OPTIONS"] = {**guide["OPTIONS"], "pool": {**guide["OPTIONS"]["pool"]}}
        DATABASES["default"]["OPTIONS"]["pool"]["max_size"] = int(os.environ["MCP_PG_POOL"])
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("MCP_SQLITE", os.path.join(BASE_DIR, "..", ".test-db.sqlite3")),
            "TEST": {"NAME": os.environ.get("MCP_SQLITE_TEST")},
            # Task workers and web workers write to one file: a writer waits up to 20 s for the lock.
            # A test's own setup (LiveServer.manage("shell", ...)) takes the lock at BEGIN, so that its
            # read-then-write transactions wait for the live server's writes instead of failing at once.
            "OPTIONS": {
                "timeout": 20,
                **({"transaction_mode": "IMMEDIATE"} if os.environ.get("MCP_TEST_SETUP") else {}),
            },
        }
    }

LAYER = os.environ.get("MCP_TEST_LAYER", "memory")
#: Keys of this test run's servers on the shared Redis: pytest-xdist workers each have their own
#: (tests/support/servers.py), so one worker's broadcasts, groups and counters never reach another's servers.
REDIS_PREFIX = os.environ.get("MCP_REDIS_PREFIX", "asgi")
if LAYER == "redis":
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": os.environ.get("MCP_REDIS_URL", "redis://127.0.0.1:6379/0"),
                        # The fault tests shrink the pool and group_expiry to provoke exhaustion and expiry.
                        **(
                            {"max_connections": int(os.environ["MCP_REDIS_MAX_CONN"])}
                            if os.environ.get("MCP_REDIS_MAX_CONN")
                            else {}
                        ),
                    }
                ],
                "group_expiry": int(os.environ.get("MCP_GROUP_EXPIRY", "86400")),
                "prefix": REDIS_PREFIX,
            },
        }
    }
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ.get("MCP_REDIS_URL", "redis://127.0.0.1:6379/1"),
            "KEY_PREFIX": REDIS_PREFIX,
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 1000}}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

DJANGO_MCP = {
    "SERVER_NAME": "django-mcp-tests",
    # Development mode on loopback, with DEBUG off like production (hence E009 silenced below).
    "AUTH": "none",
    "VALIDATE_RESULTS": os.environ.get("MCP_VALIDATE_RESULTS", "1") == "1",  # off only in benchmarks
    "SSE_KEEPALIVE": float(os.environ.get("MCP_SSE_KEEPALIVE", "15")),
    # Tight limits for the expiry/timeout tests, which start a server of their own.
    "SESSION_IDLE_TIMEOUT": float(os.environ.get("MCP_SESSION_IDLE_TIMEOUT", "3600")),
    "SESSION_REVALIDATE_INTERVAL": float(os.environ.get("MCP_SESSION_REVALIDATE", "30")),
    "CLIENT_REQUEST_TIMEOUT": float(os.environ.get("MCP_CLIENT_REQUEST_TIMEOUT", "300")),
    "ATOMIC_TOOL_CALLS": os.environ.get("MCP_ATOMIC_TOOL_CALLS", "1") == "1",
    # The sync pool tests and benchmark size the pool and its queue.
    "SYNC_WORKERS": int(os.environ.get("MCP_SYNC_WORKERS", "12")),
    "SYNC_QUEUE_TIMEOUT": float(os.environ.get("MCP_SYNC_QUEUE_TIMEOUT", "30")),
    # Streams and channel-layer faults (tests/production): short leases, a small stream limit.
    "WRITER_LEASE_TTL": float(os.environ.get("MCP_WRITER_LEASE_TTL", "15")),
    "MAX_STREAMS": int(os.environ.get("MCP_MAX_STREAMS", "1000")),
    "EVENT_STORE_BROADCAST_MAX_EVENTS": int(os.environ.get("MCP_BROADCAST_MAX_EVENTS", "1000")),
    # The task durability tests (tests/test_tasks_live.py) shorten the heartbeat timeout.
    "TASK_HEARTBEAT_TIMEOUT": float(os.environ.get("MCP_TASK_HEARTBEAT_TIMEOUT", "60")),
    # Kill switches reload when a change is broadcast; the shared test servers never revalidate on a timer
    # mid-run (the hot-path tests count every SQL statement). tests/test_switches*.py set their own.
    "SWITCHES_REVALIDATE_INTERVAL": float(os.environ.get("MCP_SWITCHES_REVALIDATE", "86400")),
    # tests/test_switches_live.py: a task no worker picks up says so after a second.
    "TASK_UNCLAIMED_WARNING": float(os.environ.get("MCP_TASK_UNCLAIMED_WARNING", "120")),
    # Request rates off: every live server of a run is a loopback caller, and with Redis they share one count.
    # The limits tests (tests/test_rate_limits.py, tests/test_limits_live.py) set their own (JSON).
    "RATE_LIMITS": json.loads(
        os.environ.get("MCP_RATE_LIMITS", '{"user": null, "client": null, "tool": null, "anonymous": null}')
    ),
    "TASK_LIMITS": json.loads(os.environ.get("MCP_TASK_LIMITS", "{}")),
    "TOOL_TIMEOUT": float(os.environ.get("MCP_TOOL_TIMEOUT", "300")),
    # The audit log's background writer (tests/test_audit_live.py lengthens it to see the exit drain).
    "AUDIT_FLUSH_INTERVAL": float(os.environ.get("MCP_AUDIT_FLUSH_INTERVAL", "0.5")),
    # tests/test_ui_browser.py: MCP App pages load the bridge from the live server (its own URL) when set.
    "PUBLIC_URL": os.environ.get("MCP_PUBLIC_URL") or None,
}
# tests/test_middleware.py: test-only middleware after the built-in ones, in a server of its own.
if os.environ.get("MCP_TEST_MIDDLEWARE"):
    from django_mcp.conf import DEFAULT_MIDDLEWARE

    DJANGO_MCP["MIDDLEWARE"] = [*DEFAULT_MIDDLEWARE, *os.environ["MCP_TEST_MIDDLEWARE"].split(",")]
SILENCED_SYSTEM_CHECKS = ["django_mcp.E009"]
USE_TZ = True
STATIC_URL = "/static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {
        "django_mcp": {"handlers": ["stderr"], "level": "WARNING"},
        # A task's start and end in the worker's log (tool, MCP task id); the call log line when a test asks.
        "django_mcp.tasks": {"level": "INFO"},
        "django_mcp.calls": {"level": "INFO" if os.environ.get("MCP_CALL_LOG") else "WARNING"},
    },
}
