import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django_mcp.asgi import get_asgi_application  # noqa: E402

application = get_asgi_application()
