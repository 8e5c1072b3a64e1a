"""The system checks of a package mounted under a prefix (E231-E234), on URLconfs built as a project would."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from django.conf import settings
from django.test import override_settings
from django.urls import include, path

from django_mcp.auth import oauth2_provider_settings
from django_mcp.checks import check_url_prefix
from django_mcp.urls import discovery_patterns, oauth_patterns
from django_mcp.urls_wsgi import endpoint_patterns


def urlconf(patterns: list[Any]) -> ModuleType:
    """A URLconf module (hashable, as Django's resolver cache needs) holding ``patterns``."""
    module = ModuleType("urlconf")
    module.urlpatterns = patterns  # type: ignore[attr-defined]
    return module


def project(at: str | None = "", wsgi_at: str | None = None, oauth: bool = True) -> ModuleType:
    """A URLconf including django_mcp.urls at ``at`` and django_mcp.urls_wsgi at ``wsgi_at`` (None: not at all)."""
    patterns: list[Any] = []
    if at is not None:
        patterns.append(path(at, include(discovery_patterns())))
        if oauth:
            patterns.append(path(at, include((oauth_patterns(), "oauth2_provider"))))
    if wsgi_at is not None:
        patterns.append(path(wsgi_at, include(endpoint_patterns())))
    return urlconf(patterns)


def found(urlconf: Any = None, **mcp: Any) -> list[Any]:
    """The errors of ``check_url_prefix`` with ``DJANGO_MCP`` updated by ``mcp``; ``urlconf`` built under them."""
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, **mcp}):
        conf = urlconf() if callable(urlconf) else urlconf
        with override_settings(ROOT_URLCONF=conf) if conf is not None else override_settings():
            return list(check_url_prefix())


def ids(urlconf: Any = None, **mcp: Any) -> list[str]:
    return [e.id for e in found(urlconf, **mcp)]


PREFIXED = {"URL_PREFIX": "/plugins/mcp/", "ENDPOINT": "/plugins/mcp/", "AUTH": "oauth"}


def test_root_and_prefixed_projects_pass() -> None:
    assert ids() == []  # the test project: django_mcp.urls at the root
    assert ids("tests.settings.urls_wsgi") == []
    assert ids(lambda: project(wsgi_at=""), AUTH="oauth") == []
    assert ids(lambda: project("plugins/mcp/", wsgi_at="plugins/mcp/"), **PREFIXED) == []
    assert ids(lambda: project("plugins/mcp/"), **PREFIXED) == []  # ASGI mode: channels routes the endpoint
    # The endpoint deeper than the prefix: /plugins/mcp/ holds the OAuth side, /plugins/mcp/rpc/ the endpoint.
    deeper = {**PREFIXED, "ENDPOINT": "/plugins/mcp/rpc/"}
    assert ids(lambda: project("plugins/mcp/", wsgi_at="plugins/mcp/"), **deeper) == []


def test_endpoint_outside_the_prefix() -> None:
    errors = found(lambda: project("plugins/mcp/"), **{**PREFIXED, "ENDPOINT": "/mcp/"})
    assert [e.id for e in errors] == ["django_mcp.E231"]
    assert "'/mcp/' is not under URL_PREFIX '/plugins/mcp/'" in errors[0].msg


def test_wsgi_view_not_at_endpoint() -> None:
    """urls_wsgi included under the prefix while URL_PREFIX still says the root: the view lands one prefix deeper."""
    errors = found(lambda: project(None, wsgi_at="plugins/mcp/"), ENDPOINT="/plugins/mcp/")
    assert [e.id for e in errors] == ["django_mcp.E232"]
    assert "'/plugins/mcp/plugins/mcp" in errors[0].msg and "ENDPOINT '/plugins/mcp/'" in errors[0].msg
    # Included at the root with ENDPOINT elsewhere than where it puts the view.
    assert ids(lambda: project(None, wsgi_at="api/"), ENDPOINT="/mcp/") == ["django_mcp.E232"]


def test_discovery_and_oauth_under_another_prefix() -> None:
    errors = found(lambda: project("plugins/mcp/"), ENDPOINT="/plugins/mcp/", AUTH="oauth")
    # ...and, URL_PREFIX saying the root, no <prefix>.well-known/openid-configuration: a client cannot find the AS.
    assert [e.id for e in errors] == ["django_mcp.E233", "django_mcp.E233", "django_mcp.E234"]
    assert "django_mcp.urls (discovery) is mounted under '/plugins/mcp/', but URL_PREFIX is '/'" in errors[0].msg
    assert "the OAuth side is mounted under '/plugins/mcp/'" in errors[1].msg
    assert "URL_PREFIX = '/plugins/mcp/'" in errors[1].hint


def test_authorization_server_metadata_unreachable_from_the_issuer() -> None:
    """DOT's own URLconf under a prefix: its issuer /o has RFC 8414 metadata only at /o/.well-known/..., where no
    client following the MCP spec looks (and no OpenID discovery without OIDC)."""

    def dot_urls() -> ModuleType:
        return urlconf([path("o/", include("oauth2_provider.urls"))])

    errors = found(dot_urls, URL_PREFIX="/o/", ENDPOINT="/o/mcp/", AUTH="oauth")
    assert [e.id for e in errors] == ["django_mcp.E234"]
    assert "'/o'" in errors[0].msg and "/.well-known/oauth-authorization-server/o" in errors[0].msg
    assert "/o/.well-known/openid-configuration" in errors[0].msg
    # django_mcp.urls at the same prefix serves it at /o/.well-known/openid-configuration.
    assert ids(lambda: project("o/"), URL_PREFIX="/o/", ENDPOINT="/o/mcp/", AUTH="oauth") == []
    # Without OAuth, nothing to find.
    assert ids(dot_urls, URL_PREFIX="/o/", ENDPOINT="/o/mcp/", AUTH="none") == []


def test_invalid_settings_are_left_to_their_own_checks() -> None:
    assert ids(URL_PREFIX="plugins") == []  # E230, from check_settings
    assert ids(ENDPOINT=5) == []  # E105


def test_openid_discovery_under_the_prefix_is_dots_own() -> None:
    """With OIDC on, ``<prefix>.well-known/openid-configuration`` is DOT's OpenID discovery, issuer the prefixed URL
    the PRM names (in process: the live tests serve the RFC 8414 form, OIDC off)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from django.test import Client

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    oidc = oauth2_provider_settings(OIDC_ENABLED=True, OIDC_RSA_PRIVATE_KEY=key.decode())
    with override_settings(OAUTH2_PROVIDER=oidc, DJANGO_MCP={**settings.DJANGO_MCP, **PREFIXED}):
        with override_settings(ROOT_URLCONF=project("plugins/mcp/")):
            assert list(check_url_prefix()) == []
            client = Client()
            prm = client.get("/plugins/mcp/.well-known/oauth-protected-resource").json()
            assert prm["authorization_servers"] == ["http://testserver/plugins/mcp"]
            assert prm["resource"] == "http://testserver/plugins/mcp/"
            discovery = client.get("/plugins/mcp/.well-known/openid-configuration").json()
            assert discovery["issuer"] == "http://testserver/plugins/mcp"
            assert discovery["jwks_uri"] == "http://testserver/plugins/mcp/.well-known/jwks.json"
            assert client.get("/.well-known/openid-configuration").status_code == 404
