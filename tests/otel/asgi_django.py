"""uvicorn's application: the project under Django's own ASGI handler and ``opentelemetry-instrumentation-django``.

The endpoint is the async ``mcp_view`` (``tests.settings.urls_django_asgi``); Django's instrumentation makes its
SERVER span current around it, under ASGI as under WSGI, so the MCP span becomes its child.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.otel.settings_django_asgi")

from django.core.asgi import get_asgi_application
from opentelemetry.instrumentation.django import DjangoInstrumentor

DjangoInstrumentor().instrument()
application = get_asgi_application()
