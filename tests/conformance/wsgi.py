"""WSGI application serving the conformance fixture server at ``/mcp/`` without Channels.

``gunicorn -w 2 tests.conformance.wsgi`` (sync workers); ``tests/test_conformance_wsgi.py``
runs the official suite against it.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.conformance.settings_wsgi")

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
