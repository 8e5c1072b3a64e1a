"""``django_mcp.wsgi``: the endpoint's requests served by its view code without Django's request cycle,
everything else by Django's handler; the URLconf still decides which view the endpoint is.

In process: Django's real ``WSGIHandler`` wrapped by ``EndpointWSGI``, called with the environs a WSGI
server passes. Under gunicorn, ``tests/test_wsgi.py`` runs every WSGI test through both entries.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_started
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory, override_settings
from django.urls import include, path

from django_mcp.transports.wsgi import mcp_wsgi_view
from django_mcp.wsgi import EndpointWSGI
from tests.support.raw import META

pytestmark = pytest.mark.django_db(transaction=True)  # the kill switches are read on a process's first call

STAMP = "tests.test_wsgi_wiring.Stamp"
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
MODERN = {
    "HTTP_ACCEPT": "application/json, text/event-stream",
    "HTTP_MCP_PROTOCOL_VERSION": "2026-07-28",
    "HTTP_MCP_METHOD": "tools/list",
}
LOOPBACK = {"SERVER_NAME": "127.0.0.1", "HTTP_HOST": "127.0.0.1", "REMOTE_ADDR": "127.0.0.1"}


class Stamp:
    """A project middleware: marks every response Django's request cycle produced."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response["X-Through-Django"] = "yes"
        return response  # type: ignore[no-any-return]


def not_mcp(request: HttpRequest) -> HttpResponse:
    return HttpResponse("the project's own view", status=299)


#: A project that put a view of its own at the endpoint's path (before the package's).
urlpatterns = [path("mcp/", not_mcp), path("", include("django_mcp.urls_wsgi"))]


class Reply:
    def __init__(self, app: Any, environ: dict[str, Any]) -> None:
        self.status = ""
        self.headers: dict[str, str] = {}

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
            self.status = status
            self.headers = {k.lower(): v for k, v in headers}

        self.body = b"".join(app(environ, start_response))
        self.code = int(self.status.split()[0])


def environ(url: str, method: str = "post", body: Any = LIST, **extra: str) -> dict[str, Any]:
    factory = RequestFactory()
    if method == "post":
        request = factory.post(url, json.dumps(body), content_type="application/json", **{**LOOPBACK, **extra})
    else:
        request = factory.get(url, **{**LOOPBACK, **extra})
    return request.environ


@pytest.fixture
def started() -> Iterator[list[Any]]:
    seen: list[Any] = []

    def count(**kwargs: Any) -> None:
        seen.append(kwargs)

    request_started.connect(count)
    yield seen
    request_started.disconnect(count)


def test_the_endpoint_is_served_without_django_s_request_cycle_and_the_rest_with_it(started: list[Any]) -> None:
    with override_settings(ROOT_URLCONF="tests.settings.urls_wsgi", MIDDLEWARE=[STAMP]):
        app = EndpointWSGI(WSGIHandler())
        for url in ("/mcp/", "/mcp"):
            r = Reply(app, environ(url, **MODERN))
            assert r.code == 200, r.body
            assert "tools" in json.loads(r.body)["result"]
            assert "x-through-django" not in r.headers  # no MIDDLEWARE around the endpoint
        assert started == []  # nor the request signals
        # The same view through Django's own handler: the whole cycle.
        r = Reply(app.inner, environ("/mcp/", **MODERN))
        assert (r.code, r.headers["x-through-django"]) == (200, "yes") and len(started) == 1
        # The project's other URLs, and a browser's visit to the endpoint (its page), are Django's.
        other = Reply(app, environ("/no-such-page/", method="get"))
        assert (other.code, other.headers["x-through-django"]) == (404, "yes")
        page = Reply(app, environ("/mcp/", method="get", HTTP_ACCEPT="text/html"))
        assert page.headers["x-through-django"] == "yes"
        assert len(started) == 3
        # Refusals are the view's own, the same either way: a foreign Host (DNS rebinding), a wrong type.
        for extra in ({"HTTP_HOST": "evil.example"}, {"CONTENT_TYPE": "text/plain"}):
            direct = Reply(app, {**environ("/mcp/", **MODERN), **extra})
            viewed = Reply(app.inner, {**environ("/mcp/", **MODERN), **extra})
            assert direct.code == viewed.code and direct.code in (403, 415), (extra, direct.body)
            assert json.loads(direct.body)["error"] == json.loads(viewed.body)["error"]


def test_a_direct_reply_is_what_django_s_handler_sends_for_the_same_request() -> None:
    """The direct path writes the view's answer without making a Django response: the same status line,
    headers and body as the view inside Django's cycle, for each kind of answer."""
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    requests: list[Callable[[], dict[str, Any]]] = [
        lambda: environ("/mcp/", **MODERN),  # 200, JSON
        lambda: environ("/mcp/", body=notification, **MODERN),  # 202, no body
        lambda: environ("/mcp/", method="get", HTTP_ACCEPT="text/event-stream"),  # 405 with Allow
        lambda: {**environ("/mcp/", **MODERN), "REQUEST_METHOD": "OPTIONS"},  # 204 with Allow
        lambda: {**environ("/mcp/", **MODERN), "REQUEST_METHOD": "PUT"},  # 405
        lambda: {**environ("/mcp/", **MODERN), "HTTP_ACCEPT": "text/plain"},  # 406
        lambda: environ("/mcp/", body={"jsonrpc": "2.0", "id": 1}, **MODERN),  # a JSON-RPC error
    ]
    with override_settings(ROOT_URLCONF="tests.settings.urls_wsgi", MIDDLEWARE=[STAMP]):
        app = EndpointWSGI(WSGIHandler())
        seen = set()
        for made in requests:
            direct, viewed = Reply(app, made()), Reply(app.inner, made())
            assert viewed.headers.pop("x-through-django") == "yes" and "x-through-django" not in direct.headers
            assert (direct.status, direct.headers, direct.body) == (viewed.status, viewed.headers, viewed.body)
            seen.add(direct.code)
        assert seen >= {200, 202, 204, 405, 406}, seen


def test_the_urlconf_decides_what_the_endpoint_is() -> None:
    """A project's own view at the endpoint's path keeps it: only the package's WSGI views are served directly."""
    with override_settings(ROOT_URLCONF=__name__, MIDDLEWARE=[STAMP]):
        app = EndpointWSGI(WSGIHandler())
        r = Reply(app, environ("/mcp/", **MODERN))
        assert (r.code, r.body, r.headers["x-through-django"]) == (299, b"the project's own view", "yes")
        # Without the slash, the URLconf routes to the package's view: served directly.
        r = Reply(app, environ("/mcp", **MODERN))
        assert r.code == 200 and "x-through-django" not in r.headers


def test_only_the_endpoint_s_paths_are_remembered() -> None:
    """Clients choose paths: what is looked up and kept is the endpoint's two paths, nothing a client invents."""
    with override_settings(ROOT_URLCONF="tests.settings.urls_wsgi", MIDDLEWARE=[]):
        app = EndpointWSGI(WSGIHandler())
        for i in range(50):
            Reply(app, environ(f"/made-up-{i}/", method="get"))
        Reply(app, environ("/mcp/", **MODERN))
        assert set(app._servers) == {"/mcp/"}
    assert mcp_wsgi_view.mcp_wsgi_server is None  # type: ignore[attr-defined]  # the default site's view
