"""Plain Django ASGI (no Channels): the async view at ``/view/`` behind the default middleware."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.settings")
application = get_asgi_application()
