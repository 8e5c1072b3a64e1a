"""The benchmark project under gunicorn (``benchmarks/wsgi_peers.py``): WSGI mode."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.settings_wsgi")

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
