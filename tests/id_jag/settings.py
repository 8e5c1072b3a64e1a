"""The OAuth test project as the authorization server of a company's MCP hosts (enterprise-managed authorization).

The company identity provider is a real process (``tests/idp/enterprise.mjs``) started by the test; its issuer
comes from the environment. Users are found by email; ``secret:read`` is reserved to the librarians group.
"""

import os

from tests.oauth.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.jwt_rs"]  # noqa: F405  # its mcp.py: per-user objects (my_teams)
DJANGO_MCP = {
    **DJANGO_MCP,  # noqa: F405
    "IDJAG_ISSUERS": os.environ["MCP_IDJAG_ISSUERS"].split(),
    "JWT_USER_CLAIM": "email",
    "JWT_USER_FIELD": "email",
    "SCOPE_GROUPS": {"secret:read": ["librarians"]},
    "JWT_ALGORITHMS": ["RS256", "ES256"],
}
if os.environ.get("MCP_IDJAG_WSGI"):
    # WSGI mode (gunicorn tests.oauth.wsgi): the same project and database schema, the endpoint as a view.
    ROOT_URLCONF = "tests.oauth.urls_wsgi"
    WSGI_APPLICATION = "tests.oauth.wsgi.application"
