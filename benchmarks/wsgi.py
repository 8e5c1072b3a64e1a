"""The benchmark project under gunicorn (``benchmarks/wsgi_peers.py``): WSGI mode.

``application`` is the package's WSGI wiring (``django_mcp.wsgi``: the endpoint served directly, the rest by
Django); ``view_application`` is Django's own handler, running the endpoint as a view in the full request cycle.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.settings_wsgi")

from django_mcp.wsgi import get_wsgi_application

application = get_wsgi_application()
view_application = application.inner
