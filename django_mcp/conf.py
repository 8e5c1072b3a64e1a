"""The ``DJANGO_MCP`` settings dict, read lazily with documented defaults.

Like DRF's ``api_settings``: nothing is read at import time, attribute access
falls back to ``DEFAULTS``, import strings are resolved on access, and the cache
is dropped on ``setting_changed`` so ``override_settings`` works in tests.
"""

from __future__ import annotations

from typing import Any

from django.core.signals import setting_changed
from django.utils.module_loading import import_string

DEFAULTS: dict[str, Any] = {
    # Identity shown to clients in initialize / server/discover.
    "SERVER_NAME": "django-mcp",
    "SERVER_TITLE": None,
    "SERVER_VERSION": None,  # None: the django-mcp-toolkit version
    "INSTRUCTIONS": None,
    # Where get_asgi_application() mounts the default site.
    "ENDPOINT": "/mcp/",
    # "none" serves without authentication (development); "oauth" arrives with the auth issue.
    "AUTH": "none",
    # Browser origins allowed besides the endpoint's own host (DNS-rebinding protection).
    "ALLOWED_ORIGINS": [],
    # Largest accepted request body, in bytes (413 above it).
    "MAX_BODY_SIZE": 4 * 1024 * 1024,
    # Handshake-era sessions.
    "SESSION_IDLE_TIMEOUT": 3600,  # seconds without a request before a session expires
    "SESSION_REVALIDATE_INTERVAL": 30,  # seconds a worker trusts its cached view of a session
    # Pagination of tools/list, resources/list, prompts/list, resources/templates/list.
    "PAGE_SIZE": 100,
    # Seconds a server->client request (elicitation, sampling, roots) waits for its answer.
    "CLIENT_REQUEST_TIMEOUT": 300,
    # SSE: keep-alive comment interval and the retry hint (ms) sent before closing a polled stream.
    "SSE_KEEPALIVE": 15,
    "SSE_RETRY_MS": 1000,
    # Event store used for SSE resumption (Last-Event-ID): a Django cache alias and bounds.
    "EVENT_STORE_CACHE": "default",
    "EVENT_STORE_MAX_EVENTS": 500,
    "EVENT_STORE_TTL": 3600,
    # Channels layer alias carrying messages between workers.
    "CHANNEL_LAYER": "default",
    # 2026-07-28 caching hints on list results and reads.
    "CACHE_TTL_MS": 0,
    "CACHE_SCOPE": "private",
    # Seconds a signed multi-round-trip requestState stays valid.
    "REQUEST_STATE_MAX_AGE": 900,
    # Maps exceptions raised by tools to results/errors; an import string.
    "EXCEPTION_HANDLER": "django_mcp.exceptions.exception_handler",
    # Validate every outgoing result against mcp-types (slower; on in tests).
    "VALIDATE_RESULTS": False,
    # -- Django models, templates and views (ModelResource, TemplatePrompt, DRF tools) --
    # Run each tools/call in a transaction savepoint: an exception rolls back its writes.
    "ATOMIC_TOOL_CALLS": True,
    # ModelResource: largest file (bytes) whose contents a read inlines as a blob; larger files are links only.
    "RESOURCE_MAX_BLOB_SIZE": 1024 * 1024,
    # -- Authentication (AUTH = "oauth", django-oauth-toolkit) --
    # Scopes this site grants, with the description shown on the consent page; scopes declared by
    # tools, resources and prompts are added automatically (described by their name unless listed here).
    "SCOPES": {"mcp": "Connect to this site's MCP server"},
    # Let MCP clients register themselves (RFC 7591) without an account; consent still needs a user.
    "ALLOW_ANONYMOUS_REGISTRATION": True,
    # Refuse tokens that name no audience (RFC 8707 ``resource``): a token must be issued for this endpoint.
    "REQUIRE_AUDIENCE": True,
    # -- Engine security (issue 9: batches) --
    # Most messages one JSON-RPC batch may hold; a larger batch gets one -32600 error and nothing in it runs.
    "MAX_BATCH_SIZE": 100,
    # -- Operations: shutdown, cleanup, health --
    # Seconds calls in flight get to finish after SIGTERM before they answer a retryable error.
    "SHUTDOWN_GRACE": 20,
    # Per-worker session cache: most entries kept, and seconds an unused entry stays (reloaded from the DB after).
    "SESSION_CACHE_SIZE": 10000,
    "SESSION_CACHE_MAX_AGE": 900,
    # Seconds mcp_cleanup keeps ended sessions (visible in the admin) before deleting them.
    "SESSION_RETENTION": 86400,
    # Seconds each backend check of the health endpoint may take before it counts as down.
    "HEALTH_TIMEOUT": 2,
    # -- Sync code and the database (issue 9 d, f: django_mcp.sync, django_mcp.unavailable) --
    # Threads running sync user code (tools, views, ModelResource reads, permission checks, templates)
    # per worker process; each holds a database connection: keep the total under max_connections.
    "SYNC_WORKERS": 12,
    # Seconds a call waits for a free sync thread before it is refused as busy (retryable).
    "SYNC_QUEUE_TIMEOUT": 30,
    # Threads for the package's own queries (sessions, bearer tokens): never queued behind a tool.
    "SYNC_BOOKKEEPING_WORKERS": 4,
    # Retry-After (seconds) sent with 503 while the database is unreachable or the pool stays full.
    "UNAVAILABLE_RETRY_AFTER": 2,
    # -- OAuth security (production issue) --
    # Resource URIs (RFC 8707) a token may name besides the endpoint's own canonical URI (RFC 9728); exact match.
    "ACCEPTED_AUDIENCES": [],
    # Dynamic client registration (RFC 7591/7592) limits: body bytes (413 above), redirect URIs per client,
    # characters per redirect URI, and bytes of JSON in metadata fields RFC 7591 does not define (400 above).
    "REGISTRATION_MAX_BODY_SIZE": 16 * 1024,
    "REGISTRATION_MAX_REDIRECT_URIS": 10,
    "REGISTRATION_MAX_URI_LENGTH": 2048,
    "REGISTRATION_MAX_EXTRA_METADATA": 4096,
    # Anonymous registrations per client address: [count, seconds] (429 with Retry-After above it); None: no limit.
    "REGISTRATION_RATE_LIMIT": [20, 3600],
    # Django cache alias counting registrations (shared by all workers when it is Redis or a database cache).
    "REGISTRATION_RATE_CACHE": "default",
    # -- Streams, event store and channel-layer faults (production issue: streams) --
    # Events kept per session for its GET stream, and broadcasts kept for replay to resumed GET streams.
    "EVENT_STORE_SESSION_MAX_EVENTS": 1000,
    "EVENT_STORE_BROADCAST_MAX_EVENTS": 1000,
    # Seconds a POST stream's writer lease lives unrenewed (renewed every third of it); a stream resumed
    # after its writer died ends with a retryable error within about this long.
    "WRITER_LEASE_TTL": 15,
    # Open GET streams per worker process; above it 503 with Retry-After.
    "MAX_STREAMS": 1000,
    # Seconds between re-adding this worker's channel-layer groups (capped at a quarter of group_expiry).
    "LAYER_REFRESH_INTERVAL": 60,
    # Retry-After (seconds) on a 503 when the channel layer or the event store is unavailable or saturated.
}

IMPORT_STRINGS = frozenset({"EXCEPTION_HANDLER"})


class MCPSettings:
    def __init__(self) -> None:
        self._cached: dict[str, Any] = {}
        self._user: dict[str, Any] | None = None

    @property
    def user_settings(self) -> dict[str, Any]:
        if self._user is None:
            from django.conf import settings

            self._user = dict(getattr(settings, "DJANGO_MCP", None) or {})
        return self._user

    def __getattr__(self, name: str) -> Any:
        """Only reached on a first access: the value is then stored as a plain attribute (hot-path reads)."""
        if name not in DEFAULTS:
            raise AttributeError(f"Invalid DJANGO_MCP setting: {name!r}")
        value = self.user_settings.get(name, DEFAULTS[name])
        if name in IMPORT_STRINGS and isinstance(value, str):
            value = import_string(value)
        self._cached[name] = value
        setattr(self, name, value)
        return value

    def reload(self) -> None:
        for name in self._cached:
            self.__dict__.pop(name, None)
        self._cached.clear()
        self._user = None


mcp_settings = MCPSettings()


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == "DJANGO_MCP":
        mcp_settings.reload()


setting_changed.connect(_reload)
