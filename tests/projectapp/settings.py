"""An existing project with its own per-request middleware, served with OAuth (``tests.projectapp``)."""

import os

from tests.oauth.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "rest_framework", "tests.projectapp"]  # noqa: F405
MIDDLEWARE = [
    *MIDDLEWARE,  # noqa: F405
    "tests.projectapp.middleware.ChangeLoggingMiddleware",
    "tests.projectapp.middleware.TenancyMiddleware",
    "tests.projectapp.middleware.BlockedUserMiddleware",
]
ROOT_URLCONF = "tests.projectapp.urls"
ASGI_APPLICATION = "tests.projectapp.asgi.application"
WSGI_APPLICATION = "tests.projectapp.wsgi.application"
if os.environ.get("MCP_PROJECT_WSGI"):
    ROOT_URLCONF = "tests.projectapp.urls_wsgi"
