"""The OIDC login project in WSGI mode (``gunicorn tests.oidc.wsgi``)."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.oidc.settings_wsgi")

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
