"""The OAuth test project signing its users in through the company IdP (docs/auth.md's OIDC recipe).

MCP hosts still register with django-oauth-toolkit; the login DOT's ``/oauth/authorize/`` sends an
anonymous user to is mozilla-django-oidc's, at the IdP whose URL ``MCP_OIDC_ISSUER`` gives.
"""

import os

from tests.oauth.settings import *  # noqa: F403

ROOT_URLCONF = "tests.oidc.urls"
AUTHENTICATION_BACKENDS = ["tests.oidc.backend.CompanyIdP"]
LOGIN_URL = "oidc_authentication_init"
OIDC_CALLBACK_CLASS = "tests.oidc.backend.CompanyIdPCallback"

_IDP = os.environ.get("MCP_OIDC_ISSUER", "http://127.0.0.1:9")
OIDC_RP_CLIENT_ID = "books"
OIDC_RP_CLIENT_SECRET = os.environ.get("MCP_OIDC_SECRET", "not-a-secret")
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_RP_SCOPES = "openid email profile groups"
OIDC_OP_AUTHORIZATION_ENDPOINT = f"{_IDP}/auth"
OIDC_OP_TOKEN_ENDPOINT = f"{_IDP}/token"
OIDC_OP_USER_ENDPOINT = f"{_IDP}/me"
OIDC_OP_JWKS_ENDPOINT = f"{_IDP}/jwks"
OIDC_USE_PKCE = True
OIDC_TIMEOUT = 10

DJANGO_MCP = {
    **DJANGO_MCP,  # noqa: F405
    # The IdP's "vault-readers" group (copied onto the Django group at sign-in) may hold secret:read.
    "SCOPE_GROUPS": {"secret:read": ["vault-readers"]},
}
