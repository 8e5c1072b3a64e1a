"""The test project under Django's own ASGI handler, without Channels: the endpoint is ``mcp_view``."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings.settings_django_asgi")

from django.core.asgi import get_asgi_application

application = get_asgi_application()
