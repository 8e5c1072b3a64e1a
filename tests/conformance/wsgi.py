"""WSGI application serving the conformance fixture server at ``/mcp/`` without Channels.

``gunicorn -w 2 tests.conformance.wsgi`` (sync workers); ``tests/test_conformance_wsgi.py``
runs the official suite against it. It is the package's WSGI wiring (``django_mcp.wsgi``), which
serves the endpoint's view code without Django's request cycle: what the deployment guide runs.
``tests/test_wsgi.py`` runs the view through Django's own handler too.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.conformance.settings_wsgi")

from django_mcp.wsgi import get_wsgi_application

application = get_wsgi_application()
