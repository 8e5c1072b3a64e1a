"""An ASGI application that forgot the MCP endpoint (for check E005)."""

from django.core.asgi import get_asgi_application

application = get_asgi_application()
