"""The app side of the MCP Apps bridge served once, instead of inlined into every ``ui://`` page.

Every MCP App page needs the ext-apps ``App`` (about 240 KB minified). A page is rendered with no
request (hosts cache it), so it can only reference the bridge at an absolute URL when the site says
where it is reached: ``PUBLIC_URL``. With it set, ``django_mcp.ui`` writes
``<script type="module" src="<PUBLIC_URL><ENDPOINT>apps/bridge.<digest>.js" integrity=...>`` and
declares the origin in the resource's ``_meta.ui.csp.resourceDomains``, from which the host builds
the frame's Content-Security-Policy (ext-apps specification, "Host Behavior"). Without it, pages
inline the bridge as before.

The file is served here, beside the endpoint (``mcp_urlpatterns`` under ASGI, ``urls_wsgi`` under
WSGI), not from ``STATIC_URL``: the app's frame has an opaque origin, so a module script is fetched
with CORS and needs ``Access-Control-Allow-Origin`` (public code: ``*``), which a project's static
server may not send, and daphne or uvicorn serve no static files at all. The name carries the
digest of the content, so it is cached for a year (``immutable``); the page pins the same content
with Subresource Integrity, so a cache or CDN in front cannot swap it.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse

from .conf import mcp_settings

#: The vendored ext-apps ``App`` bundle (scripts/vendor_ext_apps.py writes it).
BRIDGE_FILE = Path(__file__).resolve().parent / "static" / "django_mcp" / "mcp-apps" / "ext-apps-app.js"
#: Where the bridge is served, below ``ENDPOINT``: ``/mcp/apps/bridge.<digest>.js``.
ROUTE = "apps/"
#: A year: the name changes whenever the content does.
CACHE_CONTROL = "public, max-age=31536000, immutable"


@functools.lru_cache(maxsize=1)
def _bridge() -> tuple[bytes, bytes, str, str]:
    """The bundle, gzipped, its file name (with a digest of it) and its Subresource Integrity value."""
    body = BRIDGE_FILE.read_bytes()
    name = f"bridge.{hashlib.sha256(body).hexdigest()[:16]}.js"
    integrity = "sha384-" + base64.b64encode(hashlib.sha384(body).digest()).decode()
    return body, gzip.compress(body, compresslevel=9, mtime=0), name, integrity


def file_name() -> str:
    """``bridge.<digest>.js``: the served file's name, which changes with its content."""
    return _bridge()[2]


def integrity() -> str:
    """The ``integrity`` attribute of the page's ``<script>`` (``sha384-...``)."""
    return _bridge()[3]


def url() -> str | None:
    """The bridge's absolute URL, or ``None`` when ``PUBLIC_URL`` is not set (pages then inline it)."""
    public = mcp_settings.PUBLIC_URL
    if not public:
        return None
    endpoint = mcp_settings.ENDPOINT.strip("/")
    return f"{public.rstrip('/')}/{endpoint + '/' if endpoint else ''}{ROUTE}{file_name()}"


def origin() -> str | None:
    """``PUBLIC_URL``'s origin (``https://books.example.com``): what a page declares in ``resourceDomains``."""
    public = mcp_settings.PUBLIC_URL
    if not public:
        return None
    parts = urlsplit(public)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def answer(method: str, name: str, accept_encoding: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """The response to ``method`` on ``<ENDPOINT>apps/<name>``: status, headers and body (GET and HEAD only)."""
    if method not in ("GET", "HEAD"):
        return 405, [("Allow", "GET, HEAD"), ("Content-Type", "text/plain")], b"method not allowed"
    body, zipped, served, _ = _bridge()
    if name != served:  # another version's name: it is not here, and must not be cached as this one
        return 404, [("Content-Type", "text/plain"), ("Cache-Control", "no-store")], b"not found"
    headers = [
        ("Content-Type", "text/javascript; charset=utf-8"),
        ("Cache-Control", CACHE_CONTROL),
        ("Access-Control-Allow-Origin", "*"),  # the app's frame has an opaque origin ("null")
        ("Cross-Origin-Resource-Policy", "cross-origin"),
        ("X-Content-Type-Options", "nosniff"),
        ("ETag", f'"{served}"'),
        ("Vary", "Accept-Encoding"),
    ]
    if "gzip" in accept_encoding.lower():
        body = zipped
        headers.append(("Content-Encoding", "gzip"))
    headers.append(("Content-Length", str(len(body))))
    return 200, headers, b"" if method == "HEAD" else body


class BridgeFile:
    """The ASGI application serving the bridge (routed by ``django_mcp.asgi.mcp_urlpatterns``)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        name = str(scope.get("path", "")).rsplit("/", 1)[-1]
        encoding = dict(scope.get("headers") or []).get(b"accept-encoding", b"").decode("latin-1")
        status, headers, body = answer(scope.get("method", "GET"), name, encoding)
        raw = [(k.lower().encode(), v.encode("latin-1")) for k, v in headers]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})


def bridge_view(request: HttpRequest, name: str) -> HttpResponse:
    """The same as a Django view (``django_mcp.urls_wsgi``, WSGI mode)."""
    status, headers, body = answer(request.method or "GET", name, request.headers.get("Accept-Encoding", ""))
    response = HttpResponse(body, status=status)
    for key, value in headers:
        response[key] = value
    return response


__all__ = ["BRIDGE_FILE", "BridgeFile", "answer", "bridge_view", "file_name", "integrity", "origin", "url"]
