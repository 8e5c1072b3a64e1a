"""ASGI entry point: the MCP endpoint at /mcp/ (plus legacy SSE at /mcp/sse/) in front of Django.

Serve it with ``daphne example_project.asgi:application`` (what ``make demo`` does)
or ``python manage.py runserver`` (daphne is in INSTALLED_APPS).
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application as django_asgi  # noqa: E402
from django.urls import re_path  # noqa: E402

from django_mcp.asgi import get_asgi_application  # noqa: E402

# Plain daphne does not serve static files; in development let Django serve the admin's CSS.
extra = [re_path(r"^static/", ASGIStaticFilesHandler(django_asgi()))] if settings.DEBUG else []

application = get_asgi_application(extra_patterns=extra)
