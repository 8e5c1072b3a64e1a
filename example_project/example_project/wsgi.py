"""WSGI entry point (WSGI mode): the MCP endpoint at /mcp/ as a Django view, no Channels.

Serve it with ``gunicorn -w 2 example_project.wsgi`` (what ``make demo-wsgi`` does).
JSON responses and sessions in the database; what needs a held stream (GET streams,
``subscriptions/listen``, sampling and elicitation in the handshake era, the legacy SSE
transport) is not offered: see docs/transports.md. ``make demo`` serves everything.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
