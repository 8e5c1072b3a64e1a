"""Discovery before connecting: the MCP Server Card and the AI Catalog that points at it.

Per the experimental server-card extension (``io.modelcontextprotocol/server-card``, SEP-2127,
draft; modelcontextprotocol/experimental-ext-server-card at 8924e08, 2026-07-24):

* ``GET <endpoint>/server-card`` (``/mcp/server-card``): the card, ``application/mcp-server-card+json``:
  identity (``name``, ``title``, ``version``, ``description``, ``icons``, ``websiteUrl``,
  ``repository``), how to connect (``remotes``: Streamable HTTP at the endpoint with every revision,
  the 2024-11-05 HTTP+SSE transport where served) and, under ``_meta``, what the draft's card
  does not describe: the OAuth protected-resource metadata and the extensions served. No tools,
  resources or prompts: the draft leaves those to the runtime lists (they depend on the caller).
* ``GET /.well-known/ai-catalog.json``: the domain's catalog, ``application/ai-catalog+json``,
  whose one entry is the card's URL.

Both are public (no credentials, nothing per caller), cacheable (``Cache-Control``, ``ETag``,
``304``) and readable from a browser (CORS ``*``, as the draft requires). ``SERVER_CARD = False``
answers 404 instead; a dict sets what cannot be derived (``name``, ``description``...).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.utils.cache import patch_vary_headers
from django.utils.text import slugify
from django.views.decorators.csrf import csrf_exempt

from .auth.locations import protected_resource_metadata_path
from .conf import mcp_settings
from .protocol.versions import ALL_REVISIONS
from .server import MCPServer, site

#: The card's media type and JSON Schema (the draft's ``$schema`` value), the catalog's media type.
CARD_TYPE = "application/mcp-server-card+json"
CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
CATALOG_TYPE = "application/ai-catalog+json"
CATALOG_SPEC_VERSION = "1.0"
#: The ``_meta`` keys of what the draft's card has no member for (reverse-DNS, ours).
META_PREFIX = "io.github.django-mcp-toolkit"
#: Seconds a client may keep the card (the draft's advice).
MAX_AGE = 3600
_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET",
    "Access-Control-Allow-Headers": "Content-Type, If-None-Match",
    "Access-Control-Expose-Headers": "ETag",
}


def card_settings() -> dict[str, Any] | None:
    """``SERVER_CARD`` as a dict of overrides ({} when True), None when the card is off."""
    value = mcp_settings.SERVER_CARD
    if value is False:
        return None
    return dict(value) if isinstance(value, dict) else {}


def endpoint_url(request: HttpRequest) -> str:
    return str(request.build_absolute_uri(mcp_settings.ENDPOINT))


def card(request: HttpRequest, server: MCPServer | None = None) -> dict[str, Any]:
    """The Server Card of ``server`` (the default site) as this request reaches it."""
    server = server or site
    options = card_settings() or {}
    info = server.server_info()
    endpoint = endpoint_url(request)
    description = options.get("description") or server.instructions or f"{info['name']}: a Django project over MCP."
    found: dict[str, Any] = {
        "$schema": CARD_SCHEMA,
        "name": options.get("name") or default_name(request, server),
        "version": str(options.get("version") or info["version"])[:255],
        "description": _short(description, 100),
    }
    title = options.get("title") or info.get("title")
    if title:
        found["title"] = _short(str(title), 100)
    if options.get("website_url"):
        found["websiteUrl"] = options["website_url"]
    if options.get("repository"):
        found["repository"] = dict(options["repository"])
    if options.get("icons"):
        found["icons"] = [dict(icon) for icon in options["icons"]]
    remotes: list[dict[str, Any]] = [
        {"type": "streamable-http", "url": endpoint, "supportedProtocolVersions": list(ALL_REVISIONS)}
    ]
    if legacy_sse_served():
        remotes.append({"type": "sse", "url": endpoint + "sse/", "supportedProtocolVersions": ["2024-11-05"]})
    found["remotes"] = remotes
    meta: dict[str, Any] = {}
    if mcp_settings.AUTH == "oauth":
        resource = protected_resource_metadata_path(mcp_settings.ENDPOINT)
        meta[f"{META_PREFIX}/authorization"] = {
            "type": "oauth2",
            "protectedResourceMetadata": request.build_absolute_uri(resource),
        }
    served = server.extensions()
    if served:
        meta[f"{META_PREFIX}/extensions"] = served
    if meta:
        found["_meta"] = meta
    return found


def default_name(request: HttpRequest, server: MCPServer) -> str:
    """``<reversed host>/<server>``: the draft's reverse-DNS ``namespace/name`` (``com.example/library``)."""
    host = request.get_host().rsplit(":", 1)[0].strip("[]") or "localhost"
    labels = [label for label in host.split(".") if label]
    namespace = ".".join(reversed(labels)) if not host.replace(".", "").isdigit() else host
    namespace = "".join(c if c.isalnum() or c in ".-" else "-" for c in namespace) or "localhost"
    return f"{namespace}/{slugify(server.name) or 'mcp'}"[:200]


def legacy_sse_served() -> bool:
    """Whether the 2024-11-05 HTTP+SSE pair is served: ASGI mode (``django_mcp.asgi`` mounts it), not WSGI."""
    return bool(getattr(settings, "ASGI_APPLICATION", None))


def catalog(request: HttpRequest) -> dict[str, Any]:
    """The AI Catalog of this site: one entry, the default site's card."""
    publisher = request.get_host().rsplit(":", 1)[0] or "localhost"
    return {
        "specVersion": CATALOG_SPEC_VERSION,
        "entries": [
            {
                "identifier": f"urn:air:{publisher}:mcp:{slugify(site.name) or 'mcp'}",
                "type": CARD_TYPE,
                "url": endpoint_url(request) + "server-card",
            }
        ],
    }


def _short(text: str, length: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= length else text[: length - 1].rstrip() + "…"


def _document(request: HttpRequest, build: Any, content_type: str) -> HttpResponse:
    """A public JSON document: 404 when the card is off, CORS, caching, ``ETag`` and ``304``."""
    if request.method == "OPTIONS":
        response = HttpResponse(status=204)
    elif request.method not in ("GET", "HEAD"):
        response = HttpResponseNotAllowed(["GET", "HEAD", "OPTIONS"])
    elif card_settings() is None:
        response = HttpResponse("Not found", status=404, content_type="text/plain")
    else:
        body = json.dumps(build(request), ensure_ascii=False, sort_keys=True, indent=2).encode()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        if etag in [t.strip() for t in request.headers.get("If-None-Match", "").split(",")]:
            response = HttpResponse(status=304)
        else:
            response = HttpResponse(body if request.method == "GET" else b"", content_type=content_type)
        response["ETag"] = etag
        response["Cache-Control"] = f"public, max-age={MAX_AGE}"
        # The documents name this site's URLs as the request's Host gives them: a shared cache must keep
        # one copy per host (and per scheme, which a proxy's forwarded header sets).
        patch_vary_headers(response, ("Host", "X-Forwarded-Proto"))
    for key, value in _CORS.items():
        response[key] = value
    return response


@csrf_exempt
def server_card_view(request: HttpRequest) -> HttpResponse:
    """``GET <endpoint>/server-card``."""
    return _document(request, card, CARD_TYPE)


@csrf_exempt
def ai_catalog_view(request: HttpRequest) -> HttpResponse:
    """``GET /.well-known/ai-catalog.json``."""
    return _document(request, catalog, CATALOG_TYPE)


__all__ = ["CARD_TYPE", "CATALOG_TYPE", "ai_catalog_view", "card", "catalog", "server_card_view"]
