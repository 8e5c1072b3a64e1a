"""WSGI wiring: the MCP endpoint served straight from the WSGI application, everything else by Django.

``application = django_mcp.wsgi.get_wsgi_application()`` in the project's ``wsgi.py`` (or
``gunicorn django_mcp.wsgi:application``), with the endpoint's view in the URLconf as ever
(``path("", include("django_mcp.urls_wsgi"))``). A request for ``ENDPOINT`` that the URLconf routes to
that view is handed to the view's own code (``transports.wsgi.run``) without Django's request cycle
around it: no URL resolving per request, no ``MIDDLEWARE``, no ``ATOMIC_REQUESTS`` transaction, no
``request_started``/``request_finished`` receivers. That is how the ASGI wiring serves the endpoint
(Channels, ``django_mcp.asgi``), and it is most of what a WSGI request costs beyond the call
(docs/performance.md). The project's
middleware still runs around each call (``PROJECT_MIDDLEWARE``); the endpoint's own guards (Host,
Origin, OAuth, sizes) are the view's. Everything else goes to Django's ``WSGIHandler``: the
project's pages, the OAuth views, the endpoint under another path, and a browser's visit to the
endpoint (its HTML page).

The worker's own database connection is used only to read a handshake-era session
(``sessions.prefetch``); it is recycled after such a request as the package's threads recycle
theirs (``runtime.sync_pool.recycle_connections``: ``CONN_MAX_AGE`` and broken connections honoured).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.core.handlers.exception import response_for_exception
from django.core.handlers.wsgi import WSGIRequest, get_script_name
from django.core.signals import setting_changed
from django.core.wsgi import get_wsgi_application as django_wsgi
from django.urls import Resolver404, get_resolver, set_script_prefix

from .conf import mcp_settings

StartResponse = Callable[..., Any]
#: A path's view, not yet looked up.
_UNKNOWN = object()
#: ``mcp_wsgi_view``'s server: ``django_mcp.site``, asked for when served (the package attribute is lazy).
_DEFAULT = object()


class EndpointWSGI:
    """Django's WSGI application, with the endpoint's requests served by the endpoint's view code directly.

    Which view serves ``ENDPOINT`` (with and without its slash) is read from the URLconf once: only a
    WSGI view of this package (``mcp_wsgi_view``, ``mcp_view_for(server, wsgi=True)``) is served
    directly; anything else the URLconf put there is Django's to run, as before.
    """

    def __init__(self, django_app: Any) -> None:
        from .runtime.sync_pool import recycle_connections  # reason: needs the app registry (models), ready by now
        from .transports import wsgi as view  # reason: as above

        #: ``inner``, as middleware name what they wrap.
        self.inner = django_app
        self._servers: dict[str, Any] = {}
        #: The endpoint's view code, and how the worker's connection is recycled: imported once here, not per
        #: request (an import statement in ``_serve`` cost a call about 3 µs).
        self._view = view
        self._recycle = recycle_connections

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        server = self._servers.get(path, _UNKNOWN)
        if server is _UNKNOWN:
            server = self._learn(path)
        if server is None or "text/html" in environ.get("HTTP_ACCEPT", ""):  # not ours, or a browser (its page)
            return self.inner(environ, start_response)  # type: ignore[no-any-return]
        return self._serve(server, environ, start_response)

    def _learn(self, path: str) -> Any:
        """The server ``path``'s view serves directly, or None; remembered for the endpoint's paths only."""
        endpoint = mcp_settings.ENDPOINT.rstrip("/")
        if path not in (endpoint + "/", endpoint or "/"):
            return None  # clients choose paths: only the endpoint's are looked up and kept
        try:
            view = get_resolver().resolve(path).func
        except Resolver404:
            view = None
        found = getattr(view, "mcp_wsgi_server", _UNKNOWN)
        server = None if found is _UNKNOWN else (found or _DEFAULT)
        self._servers[path] = server
        return server

    def _serve(self, server: Any, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        view = self._view
        set_script_prefix(get_script_name(environ))  # reverse() in a tool, as under Django's handler
        request = WSGIRequest(environ)
        reads_here = view.reads_session_here(environ)
        response: Any
        try:
            response = view.answer_now(request, None if server is _DEFAULT else server)
        except Exception as exc:  # noqa: BLE001 - what the view could not answer: Django's 500, logged as Django does
            response = response_for_exception(request, exc)
        finally:
            if reads_here:  # the session was read on this thread's connection (sessions.prefetch)
                self._recycle()
        if isinstance(response, view.Answer):  # the endpoint's own reply: written as it is, no HttpResponse made
            start_response(view.status_line(response.status), view.wsgi_headers(response))
            return [response.body]
        headers = [*response.items(), *(("Set-Cookie", c.output(header="")) for c in response.cookies.values())]
        start_response(f"{response.status_code} {response.reason_phrase}", headers)
        return [response.content]


def _forget(*, setting: str, **kwargs: Any) -> None:
    if setting in ("ROOT_URLCONF", "DJANGO_MCP"):
        for app in _apps:
            app._servers.clear()


_apps: list[EndpointWSGI] = []
setting_changed.connect(_forget)


def get_wsgi_application() -> EndpointWSGI:
    """The project's WSGI application (Django's) with the MCP endpoint served directly (see the module)."""
    app = EndpointWSGI(django_wsgi())  # django.setup(): the URLconf and the views need the app registry
    _apps.append(app)
    return app


def __getattr__(name: str) -> Any:
    """``gunicorn django_mcp.wsgi:application`` for a project that ships no ``wsgi.py`` of its own.

    Built on first access (PEP 562), so importing this module never sets Django up; the project is the
    one ``DJANGO_SETTINGS_MODULE`` names.
    """
    if name == "application":
        app = get_wsgi_application()
        globals()["application"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["EndpointWSGI", "get_wsgi_application"]
