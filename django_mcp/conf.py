"""The ``DJANGO_MCP`` settings dict, read lazily with documented defaults.

Like DRF's ``api_settings``: nothing is read at import time, attribute access
falls back to ``DEFAULTS``, import strings are resolved on access, and the cache
is dropped on ``setting_changed`` so ``override_settings`` works in tests.

Typed: ``DjangoMCPSettings`` (a ``TypedDict``) is the type of the ``DJANGO_MCP`` dict and
``mcp_settings``' attributes carry each key's type for mypy. ``SETTINGS`` holds the same
rules for run time: the check id, types and legal values that ``django_mcp.checks``
validates every key against (docs/checks.md, docs/settings.md). Access itself never
validates: a wrong value is reported by ``manage.py check``, not on the hot path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict
from urllib.parse import urlsplit

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
    # -- Tasks (tools declared with task=..., run on Django's Tasks framework) --
    # The TASKS backend alias and queue a task-augmented tools/call is enqueued on.
    "TASK_BACKEND": "default",
    "TASK_QUEUE": "default",
    # Time to live (ms) of a task whose client asks for none, and the most a client may ask for; None: no limit.
    "TASK_DEFAULT_TTL_MS": 3_600_000,
    "TASK_MAX_TTL_MS": 86_400_000,
    # Polling interval (ms) suggested to clients.
    "TASK_POLL_INTERVAL_MS": 1000,
    # Seconds a running task's heartbeat may be silent before its worker counts as lost; the task then runs
    # again (up to TASK_MAX_ATTEMPTS runs) or fails.
    "TASK_HEARTBEAT_TIMEOUT": 60,
    "TASK_MAX_ATTEMPTS": 2,
}

IMPORT_STRINGS = frozenset({"EXCEPTION_HANDLER"})

#: ``handler(exc, *, tool) -> dict | None`` (the ``EXCEPTION_HANDLER`` setting, once imported).
ExceptionHandler = Callable[..., Any]


class DjangoMCPSettings(TypedDict, total=False):
    """The type of the ``DJANGO_MCP`` dict: ``DJANGO_MCP: DjangoMCPSettings = {...}`` lets mypy check it.

    The system checks (``SETTINGS`` below) hold the same rules at run time, with the legal values.
    """

    SERVER_NAME: str
    SERVER_TITLE: str | None
    SERVER_VERSION: str | None
    INSTRUCTIONS: str | None
    ENDPOINT: str
    AUTH: Literal["none", "oauth"]
    ALLOWED_ORIGINS: Sequence[str]
    MAX_BODY_SIZE: int
    SESSION_IDLE_TIMEOUT: float
    SESSION_REVALIDATE_INTERVAL: float
    PAGE_SIZE: int
    CLIENT_REQUEST_TIMEOUT: float
    SSE_KEEPALIVE: float
    SSE_RETRY_MS: int
    EVENT_STORE_CACHE: str
    EVENT_STORE_MAX_EVENTS: int
    EVENT_STORE_TTL: float
    CHANNEL_LAYER: str
    CACHE_TTL_MS: int
    CACHE_SCOPE: Literal["private", "public"]
    REQUEST_STATE_MAX_AGE: int
    EXCEPTION_HANDLER: str | ExceptionHandler
    VALIDATE_RESULTS: bool
    ATOMIC_TOOL_CALLS: bool
    RESOURCE_MAX_BLOB_SIZE: int
    SCOPES: Mapping[str, str]
    ALLOW_ANONYMOUS_REGISTRATION: bool
    REQUIRE_AUDIENCE: bool
    MAX_BATCH_SIZE: int
    SHUTDOWN_GRACE: float
    SESSION_CACHE_SIZE: int
    SESSION_CACHE_MAX_AGE: float
    SESSION_RETENTION: float
    HEALTH_TIMEOUT: float
    SYNC_WORKERS: int
    SYNC_QUEUE_TIMEOUT: float
    SYNC_BOOKKEEPING_WORKERS: int
    UNAVAILABLE_RETRY_AFTER: int
    ACCEPTED_AUDIENCES: Sequence[str]
    REGISTRATION_MAX_BODY_SIZE: int
    REGISTRATION_MAX_REDIRECT_URIS: int
    REGISTRATION_MAX_URI_LENGTH: int
    REGISTRATION_MAX_EXTRA_METADATA: int
    REGISTRATION_RATE_LIMIT: Sequence[int] | None
    REGISTRATION_RATE_CACHE: str
    EVENT_STORE_SESSION_MAX_EVENTS: int
    EVENT_STORE_BROADCAST_MAX_EVENTS: int
    WRITER_LEASE_TTL: float
    MAX_STREAMS: int
    LAYER_REFRESH_INTERVAL: float
    TASK_BACKEND: str
    TASK_QUEUE: str
    TASK_DEFAULT_TTL_MS: int
    TASK_MAX_TTL_MS: int | None
    TASK_POLL_INTERVAL_MS: int
    TASK_HEARTBEAT_TIMEOUT: float
    TASK_MAX_ATTEMPTS: int


# -- What each key accepts: the table the system checks validate DJANGO_MCP against ---------------

_NUMBER = (int, float)
_SEQUENCE = (list, tuple)


@dataclass(frozen=True)
class Setting:
    """How one ``DJANGO_MCP`` key is checked: its check id, the types it accepts, and a test of the value.

    ``expected`` reads after "must be" in the error and its hint ("a positive int").
    A ``bool`` is never accepted where ``int`` or ``float`` is (``True`` is an int in Python).
    """

    id: str
    expected: str
    types: tuple[type, ...]
    valid: Callable[[Any], bool] | None = None

    def problem(self, value: Any) -> str | None:
        """``None`` when ``value`` is acceptable, else what is wrong ("must be ..., not ...")."""
        if not isinstance(value, self.types) or (isinstance(value, bool) and bool not in self.types):
            return f"must be {self.expected}, not {type(value).__name__} {value!r}"
        if self.valid is not None and not self.valid(value):
            return f"is {value!r}; it must be {self.expected}"
        return None


def _int(id: str, minimum: int = 1) -> Setting:
    expected = "a positive int" if minimum == 1 else f"an int >= {minimum}"
    return Setting(id, expected, (int,), lambda v: v >= minimum)


def _seconds(id: str, zero: bool = False) -> Setting:
    if zero:
        return Setting(id, "a number of seconds (int or float) >= 0", _NUMBER, lambda v: v >= 0)
    return Setting(id, "a positive number of seconds (int or float)", _NUMBER, lambda v: v > 0)


def _bool(id: str) -> Setting:
    return Setting(id, "True or False", (bool,))


def _optional_str(id: str) -> Setting:
    return Setting(id, "a string or None", (str, type(None)))


def _alias(id: str, of: str) -> Setting:
    return Setting(id, f"the name of an alias in {of} (a non-empty string)", (str,), bool)


def _origin(value: Any) -> bool:
    if value == "*":
        return True
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return bool(parts.scheme and parts.netloc) and not (parts.path or parts.query or parts.fragment)


def _absolute_uri(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return bool(parts.scheme and parts.netloc) and not parts.fragment


def _endpoint(value: str) -> bool:
    return value.startswith("/") and bool(value.strip("/")) and not any(c in value for c in "?#: \t")


def _scopes(value: Mapping[Any, Any]) -> bool:
    return all(isinstance(k, str) and k and " " not in k and isinstance(v, str) for k, v in value.items())


def _rate_limit(value: Any) -> bool:
    return value is None or (
        len(value) == 2 and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in value)
    )


#: Every ``DEFAULTS`` key -> how the system checks validate it. The ids are stable: ``E006``-``E008``
#: and ``E033`` predate this table; the other keys have one id each, ``E101`` onwards (docs/checks.md).
SETTINGS: dict[str, Setting] = {
    "SERVER_NAME": Setting("django_mcp.E101", "a non-empty string", (str,), bool),
    "SERVER_TITLE": _optional_str("django_mcp.E102"),
    "SERVER_VERSION": _optional_str("django_mcp.E103"),
    "INSTRUCTIONS": _optional_str("django_mcp.E104"),
    "ENDPOINT": Setting(
        "django_mcp.E105", 'a URL path such as "/mcp/" (starts with "/", not only "/", no query)', (str,), _endpoint
    ),
    "AUTH": Setting("django_mcp.E006", "'none' or 'oauth'", (str,), lambda v: v in ("none", "oauth")),
    "ALLOWED_ORIGINS": Setting(
        "django_mcp.E106",
        'a list of origins such as "https://app.example.com" (scheme and host, no path or trailing slash) or "*"',
        _SEQUENCE,
        lambda v: all(_origin(o) for o in v),
    ),
    "MAX_BODY_SIZE": _int("django_mcp.E007"),
    "SESSION_IDLE_TIMEOUT": _seconds("django_mcp.E107"),
    "SESSION_REVALIDATE_INTERVAL": _seconds("django_mcp.E108", zero=True),
    "PAGE_SIZE": _int("django_mcp.E109"),
    "CLIENT_REQUEST_TIMEOUT": _seconds("django_mcp.E110"),
    "SSE_KEEPALIVE": _seconds("django_mcp.E111"),
    "SSE_RETRY_MS": _int("django_mcp.E112", minimum=0),
    "EVENT_STORE_CACHE": _alias("django_mcp.E008", "CACHES"),
    "EVENT_STORE_MAX_EVENTS": _int("django_mcp.E113"),
    "EVENT_STORE_TTL": _seconds("django_mcp.E114"),
    "CHANNEL_LAYER": _alias("django_mcp.E115", "CHANNEL_LAYERS"),
    "CACHE_TTL_MS": _int("django_mcp.E116", minimum=0),
    "CACHE_SCOPE": Setting("django_mcp.E117", "'private' or 'public'", (str,), lambda v: v in ("private", "public")),
    "REQUEST_STATE_MAX_AGE": Setting("django_mcp.E118", "a positive int (seconds)", (int,), lambda v: v > 0),
    "EXCEPTION_HANDLER": Setting(
        "django_mcp.E119",
        "the dotted path of a callable handler(exc, *, tool), or the callable",
        (str, Callable),  # type: ignore[arg-type]  # isinstance(x, Callable) is fine at run time
    ),
    "VALIDATE_RESULTS": _bool("django_mcp.E120"),
    "ATOMIC_TOOL_CALLS": _bool("django_mcp.E121"),
    "RESOURCE_MAX_BLOB_SIZE": _int("django_mcp.E122", minimum=0),
    "SCOPES": Setting(
        "django_mcp.E033",
        "a dict of scope names (non-empty, no spaces) to descriptions (strings)",
        (dict,),
        _scopes,
    ),
    "ALLOW_ANONYMOUS_REGISTRATION": _bool("django_mcp.E123"),
    "REQUIRE_AUDIENCE": _bool("django_mcp.E124"),
    "MAX_BATCH_SIZE": _int("django_mcp.E007"),
    "SHUTDOWN_GRACE": _seconds("django_mcp.E125", zero=True),
    "SESSION_CACHE_SIZE": _int("django_mcp.E126"),
    "SESSION_CACHE_MAX_AGE": _seconds("django_mcp.E127"),
    "SESSION_RETENTION": _seconds("django_mcp.E128", zero=True),
    "HEALTH_TIMEOUT": _seconds("django_mcp.E129"),
    "SYNC_WORKERS": _int("django_mcp.E130"),
    "SYNC_QUEUE_TIMEOUT": _seconds("django_mcp.E131", zero=True),
    "SYNC_BOOKKEEPING_WORKERS": _int("django_mcp.E132"),
    "UNAVAILABLE_RETRY_AFTER": _int("django_mcp.E133", minimum=0),
    "ACCEPTED_AUDIENCES": Setting(
        "django_mcp.E134",
        'a list of absolute URIs such as "https://mcp.example.com/mcp/" (no fragment)',
        _SEQUENCE,
        lambda v: all(_absolute_uri(u) for u in v),
    ),
    "REGISTRATION_MAX_BODY_SIZE": _int("django_mcp.E135"),
    "REGISTRATION_MAX_REDIRECT_URIS": _int("django_mcp.E136"),
    "REGISTRATION_MAX_URI_LENGTH": _int("django_mcp.E137"),
    "REGISTRATION_MAX_EXTRA_METADATA": _int("django_mcp.E138", minimum=0),
    "REGISTRATION_RATE_LIMIT": Setting(
        "django_mcp.E139",
        "[count, seconds] (two positive ints) or None",
        (*_SEQUENCE, type(None)),
        _rate_limit,
    ),
    "REGISTRATION_RATE_CACHE": _alias("django_mcp.E140", "CACHES"),
    "EVENT_STORE_SESSION_MAX_EVENTS": _int("django_mcp.E141"),
    "EVENT_STORE_BROADCAST_MAX_EVENTS": _int("django_mcp.E142"),
    "WRITER_LEASE_TTL": _seconds("django_mcp.E143"),
    "MAX_STREAMS": _int("django_mcp.E144"),
    "LAYER_REFRESH_INTERVAL": _seconds("django_mcp.E145"),
    "TASK_BACKEND": Setting("django_mcp.E146", "an alias of TASKS (a string)", (str,), lambda v: bool(v)),
    "TASK_QUEUE": Setting("django_mcp.E147", "a queue name (a non-empty string)", (str,), lambda v: bool(v)),
    "TASK_DEFAULT_TTL_MS": _int("django_mcp.E148"),
    "TASK_MAX_TTL_MS": Setting(
        "django_mcp.E149", "a positive int (ms) or None", (int, type(None)), lambda v: v is None or v > 0
    ),
    "TASK_POLL_INTERVAL_MS": _int("django_mcp.E150"),
    "TASK_HEARTBEAT_TIMEOUT": _seconds("django_mcp.E151"),
    "TASK_MAX_ATTEMPTS": _int("django_mcp.E152"),
}


class MCPSettings:
    """``mcp_settings.PAGE_SIZE`` and so on: the user's value, else the default (typed for mypy below)."""

    # Annotations only (no class attributes), so ``__getattr__`` still resolves each on first access.
    SERVER_NAME: str
    SERVER_TITLE: str | None
    SERVER_VERSION: str | None
    INSTRUCTIONS: str | None
    ENDPOINT: str
    AUTH: Literal["none", "oauth"]
    ALLOWED_ORIGINS: Sequence[str]
    MAX_BODY_SIZE: int
    SESSION_IDLE_TIMEOUT: float
    SESSION_REVALIDATE_INTERVAL: float
    PAGE_SIZE: int
    CLIENT_REQUEST_TIMEOUT: float
    SSE_KEEPALIVE: float
    SSE_RETRY_MS: int
    EVENT_STORE_CACHE: str
    EVENT_STORE_MAX_EVENTS: int
    EVENT_STORE_TTL: float
    CHANNEL_LAYER: str
    CACHE_TTL_MS: int
    CACHE_SCOPE: Literal["private", "public"]
    REQUEST_STATE_MAX_AGE: int
    EXCEPTION_HANDLER: ExceptionHandler  # imported on first access
    VALIDATE_RESULTS: bool
    ATOMIC_TOOL_CALLS: bool
    RESOURCE_MAX_BLOB_SIZE: int
    SCOPES: Mapping[str, str]
    ALLOW_ANONYMOUS_REGISTRATION: bool
    REQUIRE_AUDIENCE: bool
    MAX_BATCH_SIZE: int
    SHUTDOWN_GRACE: float
    SESSION_CACHE_SIZE: int
    SESSION_CACHE_MAX_AGE: float
    SESSION_RETENTION: float
    HEALTH_TIMEOUT: float
    SYNC_WORKERS: int
    SYNC_QUEUE_TIMEOUT: float
    SYNC_BOOKKEEPING_WORKERS: int
    UNAVAILABLE_RETRY_AFTER: int
    ACCEPTED_AUDIENCES: Sequence[str]
    REGISTRATION_MAX_BODY_SIZE: int
    REGISTRATION_MAX_REDIRECT_URIS: int
    REGISTRATION_MAX_URI_LENGTH: int
    REGISTRATION_MAX_EXTRA_METADATA: int
    REGISTRATION_RATE_LIMIT: Sequence[int] | None
    REGISTRATION_RATE_CACHE: str
    EVENT_STORE_SESSION_MAX_EVENTS: int
    EVENT_STORE_BROADCAST_MAX_EVENTS: int
    WRITER_LEASE_TTL: float
    MAX_STREAMS: int
    LAYER_REFRESH_INTERVAL: float
    TASK_BACKEND: str
    TASK_QUEUE: str
    TASK_DEFAULT_TTL_MS: int
    TASK_MAX_TTL_MS: int | None
    TASK_POLL_INTERVAL_MS: int
    TASK_HEARTBEAT_TIMEOUT: float
    TASK_MAX_ATTEMPTS: int

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
