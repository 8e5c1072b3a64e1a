"""The OAuth test project, deliberately misconfigured, for ``manage.py check`` (tests/test_checks.py)."""

from tests.oauth.settings import *  # noqa: F403

DEBUG = True
INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "daphne"]  # noqa: F405  (W003: runserver is WSGI)
LOGIN_URL = "/nowhere/"  # E035
DJANGO_MCP = {
    **DJANGO_MCP,  # noqa: F405
    "SERVERNAME": "typo",  # E002, "Did you mean 'SERVER_NAME'?"
    "CACHE_SCOPE": "shared",  # E117
    "PAGE_SIZE": "100",  # E109
    "EXCEPTION_HANDLER": "tests.no_such_module.handler",  # E119
    "ALLOWED_ORIGINS": "https://app.example.com",  # E106: a string, not a list
}
