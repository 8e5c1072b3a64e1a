"""Where the issuer's keys are fetched from: only the configured issuer's origin, never where its metadata points.

Real HTTP servers on loopback play a provider whose metadata was tampered with (another issuer, a key set on
another host, a redirect) and a bystander host that records every request it gets: it must get none.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import override_settings
from jwcrypto import jwk

from django_mcp.auth import jwks

KEY = jwk.JWK.generate(kty="EC", crv="P-256", kid="k1", use="sig")


@dataclass
class Host:
    """A loopback HTTP server answering ``routes`` (path -> (status, headers, JSON body)), recording each path."""

    routes: dict[str, tuple[int, dict[str, str], Any]] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def origin(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> Host:
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                host.hits.append(self.path)
                status, headers, body = host.routes.get(self.path, (404, {}, {"error": "not_found"}))
                data = json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def hosts() -> Iterator[tuple[Host, Host]]:
    """(the configured issuer, a bystander) on two loopback ports; the key cache is empty before and after."""
    issuer, bystander = Host().start(), Host().start()
    bystander.routes["/jwks"] = (200, {}, {"keys": [json.loads(KEY.export_public())]})
    jwks.forget()
    yield issuer, bystander
    jwks.forget()
    issuer.stop()
    bystander.stop()


def settings_for(issuer: Host, **extra: Any) -> Any:
    return override_settings(DJANGO_MCP={"AUTH": "oauth", "JWT_ISSUER": issuer.origin, **extra})


def metadata(issuer: str, jwks_uri: str) -> tuple[int, dict[str, str], Any]:
    return 200, {}, {"issuer": issuer, "jwks_uri": jwks_uri}


def test_keys_come_from_the_issuers_own_metadata(hosts: tuple[Host, Host]) -> None:
    issuer, bystander = hosts
    issuer.routes["/.well-known/openid-configuration"] = metadata(issuer.origin, issuer.origin + "/jwks")
    issuer.routes["/jwks"] = (200, {}, {"keys": [json.loads(KEY.export_public())]})
    with settings_for(issuer):
        assert jwks.signing_key(issuer.origin, "k1") is not None
    # RFC 8414's URL first, then OpenID Connect discovery; then the key set.
    assert issuer.hits == ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", "/jwks"]
    assert bystander.hits == []


def test_a_key_set_on_another_host_is_never_fetched(hosts: tuple[Host, Host]) -> None:
    issuer, bystander = hosts
    issuer.routes["/.well-known/oauth-authorization-server"] = metadata(issuer.origin, bystander.origin + "/jwks")
    with settings_for(issuer), pytest.raises(jwks.KeysUnavailable):
        jwks.signing_key(issuer.origin, "k1")
    assert bystander.hits == []


def test_metadata_naming_another_issuer_is_ignored(hosts: tuple[Host, Host]) -> None:
    issuer, bystander = hosts
    issuer.routes["/.well-known/oauth-authorization-server"] = metadata(bystander.origin, issuer.origin + "/jwks")
    issuer.routes["/jwks"] = (200, {}, {"keys": [json.loads(KEY.export_public())]})
    with settings_for(issuer), pytest.raises(jwks.KeysUnavailable):
        jwks.signing_key(issuer.origin, "k1")
    assert "/jwks" not in issuer.hits


def test_a_redirect_is_not_followed(hosts: tuple[Host, Host]) -> None:
    issuer, bystander = hosts
    moved = (302, {"Location": bystander.origin + "/meta"}, {})
    issuer.routes["/.well-known/oauth-authorization-server"] = moved
    issuer.routes["/.well-known/openid-configuration"] = moved
    bystander.routes["/meta"] = metadata(issuer.origin, bystander.origin + "/jwks")
    with settings_for(issuer), pytest.raises(jwks.KeysUnavailable):
        jwks.signing_key(issuer.origin, "k1")
    assert bystander.hits == []


def test_jwks_uri_setting_names_the_key_set_host(hosts: tuple[Host, Host]) -> None:
    """Google's keys live on another host than its issuer: JWT_JWKS_URI says so, and no metadata is read."""
    issuer, bystander = hosts
    with settings_for(issuer, JWT_JWKS_URI=bystander.origin + "/jwks"):
        assert jwks.signing_key(issuer.origin, "k1") is not None
    assert (issuer.hits, bystander.hits) == ([], ["/jwks"])


def test_an_unreachable_issuer_is_retried_at_a_bounded_rate(hosts: tuple[Host, Host]) -> None:
    """No keys yet and the issuer down: 503 with Retry-After; the next requests do not hammer it."""
    issuer, _ = hosts
    with settings_for(issuer, JWT_KEYS_MIN_REFRESH=60):
        with pytest.raises(jwks.KeysUnavailable):
            jwks.signing_key(issuer.origin, "k1")
        first = len(issuer.hits)
        for _ in range(20):
            with pytest.raises(jwks.KeysUnavailable) as refused:
                jwks.signing_key(issuer.origin, "k1")
        assert len(issuer.hits) == first
        assert 0 < refused.value.retry_after <= 60
        assert refused.value.headers() == [(b"retry-after", str(refused.value.retry_after).encode())]


def test_private_and_symmetric_keys_in_the_set_are_not_used(hosts: tuple[Host, Host]) -> None:
    issuer, _ = hosts
    secret = jwk.JWK.generate(kty="oct", size=256, kid="shared")
    encryption = jwk.JWK.generate(kty="EC", crv="P-256", kid="enc", use="enc")
    keys = [json.loads(secret.export()), json.loads(encryption.export_public()), json.loads(KEY.export_private())]
    with settings_for(issuer, JWT_JWKS_URI=issuer.origin + "/jwks"):
        issuer.routes["/jwks"] = (200, {}, {"keys": keys})
        assert jwks.signing_key(issuer.origin, "shared") is None
        assert jwks.signing_key(issuer.origin, "enc") is None
        kept = jwks.signing_key(issuer.origin, "k1")
    assert kept is not None and not kept.has_private
