"""Settings for the example library project (development: DEBUG on, SQLite, in-memory channel layer).

``DJANGO_PG_NAME`` (with ``DJANGO_PG_HOST``, ``_PORT``, ``_USER``, ``_PASSWORD``) switches to PostgreSQL
with the database settings of docs/deployment.md.
"""

import importlib.util
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-project-insecure-key-change-me-0123456789abcdefghij")
DEBUG = True
ALLOWED_HOSTS = ["localhost", "127.0.0.1"]

INSTALLED_APPS = [
    "daphne",  # first: `manage.py runserver` then serves ASGI (and so the MCP endpoint) too
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "django_mcp",  # before oauth2_provider: its consent page template wins
    "oauth2_provider",
    "library",
]
# Long tool calls (export_catalogue) run as MCP tasks on Django's Tasks framework: django.tasks on Django 6.0+,
# the django-tasks backport on 5.2. The database backend keeps the queue in this project's database, and
# `manage.py db_worker` (started next to the server by `make demo`) runs them.
if importlib.util.find_spec("django.tasks") is None:
    INSTALLED_APPS.append("django_tasks")
INSTALLED_APPS.append("django_tasks_db")
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "example_project.urls"
ASGI_APPLICATION = "example_project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        # DJANGO_DB_PATH points elsewhere (the test suite serves this project from a fresh file).
        "NAME": os.environ.get("DJANGO_DB_PATH", BASE_DIR / "db.sqlite3"),
        # The server and the task worker write to one file: a writer waits up to 20 s for the lock.
        "OPTIONS": {"timeout": 20},
    }
}
if os.environ.get("DJANGO_PG_NAME"):
    # PostgreSQL as docs/deployment.md sets it up: one connection pool per worker process serves the
    # project's own views and the MCP tools alike (`pip install "psycopg[binary,pool]"`).
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ["DJANGO_PG_NAME"],
            "USER": os.environ.get("DJANGO_PG_USER", "postgres"),
            "PASSWORD": os.environ.get("DJANGO_PG_PASSWORD", ""),
            "HOST": os.environ.get("DJANGO_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get("DJANGO_PG_PORT", "5432"),
            "CONN_MAX_AGE": 0,  # the pool keeps the connections; each request and tool call borrows one
            "CONN_HEALTH_CHECKS": True,  # the pool checks a connection before lending it
            "OPTIONS": {
                "connect_timeout": 5,
                # processes x max_size must stay under PostgreSQL's max_connections
                "pool": {"min_size": 2, "max_size": 20, "timeout": 2, "reconnect_timeout": 1},
            },
        }
    }

# One process, so the in-memory layer is enough. With several workers use Redis:
# {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": ["redis://127.0.0.1:6379"]}}}
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

DJANGO_MCP = {
    # OAuth 2.1 with django-oauth-toolkit: clients register themselves, the user logs in and consents.
    "AUTH": "oauth",
    "SCOPES": {"mcp": "Search the catalogue, read books and record loans as you"},
    "SERVER_NAME": "Library",
    "SERVER_TITLE": "Example library",
    "INSTRUCTIONS": (
        "This server is the catalogue and loan desk of a small lending library. "
        "Use search_books to find books (by title, author or summary words), book_details for one book, "
        "lend_book and return_book to record loans, library_stats for an overview, and export_catalogue "
        "for the whole catalogue as CSV or JSON (a long job: run it as a task when you can). "
        "Books are also readable as resources at library://books/{book_id}; library://stats holds the totals."
    ),
    # Where browsers reach this site (e.g. "https://library.example.com"): the book card's MCP App then loads the
    # ext-apps bridge from here once instead of carrying it in each ui:// page (docs/apps.md). Unset: inlined.
    "PUBLIC_URL": os.environ.get("MCP_PUBLIC_URL") or None,
}

# django-oauth-toolkit configured for MCP (PKCE S256, DCR, RFC 8707 audiences, refresh rotation).
from django_mcp.auth import oauth2_provider_settings  # noqa: E402

OAUTH2_PROVIDER = oauth2_provider_settings()
LOGIN_URL = "/accounts/login/"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django_mcp": {"handlers": ["console"], "level": "INFO"}},
}
