"""gunicorn's application: the WSGI project under ``opentelemetry-instrumentation-django``.

``DjangoInstrumentor`` adds its middleware to ``settings.MIDDLEWARE`` before Django loads it: each
HTTP request gets its SERVER span, current while the view runs, so the MCP span becomes its child.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.otel.settings_wsgi")

from django.core.wsgi import get_wsgi_application
from opentelemetry.instrumentation.django import DjangoInstrumentor

DjangoInstrumentor().instrument()
application = get_wsgi_application()
