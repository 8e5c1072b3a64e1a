import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.projectapp.settings")
os.environ.setdefault("MCP_PROJECT_WSGI", "1")

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
