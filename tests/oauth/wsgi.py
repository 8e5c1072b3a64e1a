"""The OAuth test project in WSGI mode (``gunicorn tests.oauth.wsgi``)."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.oauth.settings_wsgi")

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
