"""WSGI entry point (WSGI mode): the MCP endpoint at /mcp/ without Channels.

Serve it with ``gunicorn -w 2 example_project.wsgi`` (what ``make demo-wsgi`` does).
``django_mcp.wsgi.get_wsgi_application()`` is Django's WSGI application, except that the endpoint's
requests go straight to its view's code, without Django's request cycle around them (as the ASGI
entry serves them through Channels); every other URL is Django's. JSON responses and sessions in the
database; what needs a held stream (GET streams, ``subscriptions/listen``, sampling and elicitation
in the handshake era, the legacy SSE transport) is not offered: see docs/transports.md.
``make demo`` serves everything.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")

from django_mcp.wsgi import get_wsgi_application

application = get_wsgi_application()
