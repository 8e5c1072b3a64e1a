"""The test project in WSGI mode (``gunicorn tests.settings.wsgi``): ``django_mcp.transports.wsgi.mcp_view`` at /mcp/"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings.settings_wsgi")

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
