"""The large project's settings: its own, then the package's, only as docs/existing-projects.md gives them."""

import copy
import os

from django_mcp.auth import oauth2_provider_settings
from tests.settings import BASE_DIR, CACHES, CHANNEL_LAYERS, DATABASES, SECRET_KEY  # noqa: F401  # settings
from tests.settings import MIDDLEWARE as BASE_MIDDLEWARE
from tests.settings import TEMPLATES as BASE_TEMPLATES

DEBUG = False
ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
AUTH_USER_MODEL = "largeproject.Person"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "guardian",
    "tests.largeproject",
    "tests.drfbig",
    "tests.objpermapp",
    "tests.tokenapp",
    "tests.projectapp",
    # django-mcp-toolkit, as the guide adds it (Channels only for ASGI).
    "channels",
    "django_mcp",
    "oauth2_provider",
]
MIDDLEWARE = [
    *BASE_MIDDLEWARE,  # the startproject middleware, less the clickjacking and security ones
    "tests.projectapp.middleware.ChangeLoggingMiddleware",
    "tests.projectapp.middleware.TenancyMiddleware",
]
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
ROOT_URLCONF = "tests.largeproject.urls"
STATIC_URL = "/static/"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tests.tokenapp.auth.ApiTokenAuthentication"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
LOGIN_URL = "/accounts/login/"
TEMPLATES = copy.deepcopy(BASE_TEMPLATES)
TEMPLATES[0]["DIRS"] = [os.path.join(BASE_DIR, "oauth", "templates")]  # the project's login page

# -- django-mcp-toolkit ----------------------------------------------------------------------------------
ASGI_APPLICATION = "django_mcp.asgi.application"
DJANGO_MCP = {
    "SERVER_NAME": "Large project",
    "AUTH": "oauth",
    "ENDPOINT": "/plugins/mcp/",
    "URL_PREFIX": "/plugins/mcp/",
    "SCOPES": {"mcp": "Use the API", "notes:read": "Read your notes", "notes:write": "Write notes"},
    "AUTHENTICATION_CLASSES": ["tests.tokenapp.auth.ApiTokenAuthentication"],
    "TOKEN_SCOPES": "tests.tokenapp.auth.token_scopes",
}
OAUTH2_PROVIDER = oauth2_provider_settings()
if os.environ.get("MCP_LARGE_WSGI"):  # WSGI mode: the endpoint is a Django view, no Channels
    ROOT_URLCONF = "tests.largeproject.urls_wsgi"
    INSTALLED_APPS.remove("channels")
