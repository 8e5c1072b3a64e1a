"""The OAuth test project whose MCP endpoint also takes the project's own API tokens (``AUTHENTICATION_CLASSES``)."""

from tests.oauth.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "rest_framework", "rest_framework.authtoken", "tests.tokenapp"]  # noqa: F405
ROOT_URLCONF = "tests.tokenapp.urls"
ASGI_APPLICATION = "tests.tokenapp.asgi.application"
#: The project's REST API and its MCP endpoint take the same tokens; DRF's own raises on a key it does not
#: know, so it comes last.
AUTHENTICATION_CLASSES = [
    "tests.tokenapp.auth.ApiTokenAuthentication",
    "rest_framework.authentication.TokenAuthentication",
]
REST_FRAMEWORK = {"DEFAULT_AUTHENTICATION_CLASSES": AUTHENTICATION_CLASSES}
DJANGO_MCP = {
    **DJANGO_MCP,  # noqa: F405
    "SCOPES": {**DJANGO_MCP["SCOPES"], "notes:read": "Read your notes", "notes:write": "Write notes"},  # noqa: F405
    "AUTHENTICATION_CLASSES": AUTHENTICATION_CLASSES,
    "TOKEN_SCOPES": "tests.tokenapp.auth.token_scopes",
}
