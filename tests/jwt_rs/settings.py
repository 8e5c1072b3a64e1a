"""The OAuth test project as the resource server of an external identity provider (``JWT_ISSUER``).

The provider is a real ``oidc-provider`` process (``tests/idp/provider.mjs``) started by the test;
its issuer URL and the other ``JWT_*`` values come from the environment.
"""

import os

from tests.oauth.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.jwt_rs"]  # noqa: F405  # its mcp.py: per-user objects
DJANGO_MCP = {
    **DJANGO_MCP,  # noqa: F405
    "JWT_ISSUER": os.environ["MCP_JWT_ISSUER"],
    # Users are found by email, the way most company providers are mapped (compared without regard to case).
    "JWT_USER_CLAIM": "email",
    "JWT_USER_FIELD": "email",
    "JWT_ROLE_SCOPES": {"library-staff": ["secret:read"]},
    "JWT_KEYS_MIN_REFRESH": float(os.environ.get("MCP_JWT_KEYS_MIN_REFRESH", "60")),
    "JWT_ALGORITHMS": os.environ.get("MCP_JWT_ALGORITHMS", "RS256 PS256 ES256 EdDSA").split(),
}
if os.environ.get("MCP_JWT_WSGI"):
    # WSGI mode (gunicorn tests.oauth.wsgi): the same project and database schema, the endpoint as a view.
    ROOT_URLCONF = "tests.oauth.urls_wsgi"
    WSGI_APPLICATION = "tests.oauth.wsgi.application"
