"""The token project in WSGI mode (``gunicorn tests.tokenapp.wsgi``)."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.tokenapp.settings_wsgi")

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
