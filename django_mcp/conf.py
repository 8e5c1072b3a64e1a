"""The ``DJANGO_MCP`` settings dict, read lazily with documented defaults.

Like DRF's ``api_settings``: nothing is read at import time, attribute access
falls back to the default, import strings are resolved on access, and the cache
is dropped on ``setting_changed`` so ``override_settings`` works in tests.

Each key is declared once in ``SETTINGS``: its default (``DEFAULTS`` is derived) and
the check id, types and legal values that ``django_mcp.checks`` validates it against
(docs/checks.md, docs/settings.md). Its static type is written where mypy needs it:
``DjangoMCPSettings`` (a ``TypedDict``, the type of the ``DJANGO_MCP`` dict) and the
annotations of ``mcp_settings``; a test checks that they agree with ``SETTINGS``. Access
itself never validates: a wrong value is reported by ``manage.py check``, not on the hot path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict
from urllib.parse import urlsplit

from django.conf import settings
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from .limits import rates

#: ``handler(exc, *, tool) -> dict | None`` (the ``EXCEPTION_HANDLER`` setting, once imported).
ExceptionHandler = Callable[..., Any]
#: ``scopes(user, auth) -> Iterable[str] | None`` (the ``TOKEN_SCOPES`` setting, once imported).
TokenScopes = Callable[[Any, Any], Any]


class DjangoMCPSettings(TypedDict, total=False):
    """The type of the ``DJANGO_MCP`` dict: ``DJANGO_MCP: DjangoMCPSettings = {...}`` lets mypy check it.

    The system checks (``SETTINGS`` below) hold the same rules at run time, with the legal values.
    """

    SERVER_NAME: str
    SERVER_TITLE: str | None
    SERVER_VERSION: str | None
    INSTRUCTIONS: str | None
    ENDPOINT: str
    URL_PREFIX: str
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
    DRF_FILTER_LOOKUPS: bool
    RESOURCE_MAX_BLOB_SIZE: int
    SCOPES: Mapping[str, str]
    ALLOW_ANONYMOUS_REGISTRATION: bool
    REQUIRE_AUDIENCE: bool
    TOKEN_CACHE_MAX_AGE: float
    TOKEN_CACHE_SIZE: int
    AUTHENTICATION_CLASSES: Sequence[str | type]
    TOKEN_SCOPES: str | TokenScopes | None
    SCOPE_GROUPS: Mapping[str, Sequence[str]]
    MAX_BATCH_SIZE: int
    SHUTDOWN_GRACE: float
    SHUTDOWN_QUIET: float
    SESSION_CACHE_SIZE: int
    SESSION_CACHE_MAX_AGE: float
    SESSION_RETENTION: float
    HEALTH_TIMEOUT: float
    SYNC_WORKERS: int
    SYNC_QUEUE_TIMEOUT: float
    SYNC_BOOKKEEPING_WORKERS: int
    GC_FREEZE: bool
    UNAVAILABLE_RETRY_AFTER: int
    ACCEPTED_AUDIENCES: Sequence[str]
    JWT_ISSUER: str | None
    JWT_JWKS_URI: str | None
    JWT_ALGORITHMS: Sequence[str]
    JWT_LEEWAY: float
    JWT_USER_CLAIM: str
    JWT_USER_FIELD: str | None
    JWT_CREATE_USERS: bool
    JWT_ROLES_CLAIMS: Sequence[str]
    JWT_ROLE_SCOPES: Mapping[str, Sequence[str]]
    JWT_KEYS_MIN_REFRESH: float
    JWT_KEYS_MAX_AGE: float
    IDJAG_ISSUERS: Sequence[str]
    REGISTRATION_MAX_BODY_SIZE: int
    REGISTRATION_MAX_REDIRECT_URIS: int
    REGISTRATION_MAX_URI_LENGTH: int
    REGISTRATION_MAX_EXTRA_METADATA: int
    REGISTRATION_RATE_LIMIT: str | Sequence[int] | None
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
    MIDDLEWARE: Sequence[str | Callable[..., Any]]
    PROJECT_MIDDLEWARE: Sequence[str] | None
    PROJECT_MIDDLEWARE_EXCLUDE: Sequence[str]
    TELEMETRY: bool
    TELEMETRY_RESOURCE_SPAN_NAMES: bool
    TELEMETRY_TOOL_CONTENT: bool
    TELEMETRY_CLIENT_BAGGAGE: bool
    SWITCHES_REVALIDATE_INTERVAL: float
    REQUIRE_ACCESS_RULES: bool
    TASK_UNCLAIMED_WARNING: float
    RATE_LIMITS: Mapping[str, str | None]
    RATE_LIMIT_CACHE: str
    TASK_LIMITS: Mapping[str, int | str | None]
    TOOL_TIMEOUT: float | None
    TASK_TIMEOUT: float | None
    MAX_RESULT_BYTES: int | None
    AUDIT_LOG: bool
    AUDIT_RETENTION: float
    AUDIT_FLUSH_INTERVAL: float
    AUDIT_BATCH_SIZE: int
    AUDIT_BUFFER_SIZE: int
    AUDIT_SENSITIVE_KEYS: str
    AUDIT_MAX_PAYLOAD_BYTES: int | None
    SERVER_CARD: bool | Mapping[str, Any]
    BROWSABLE_ENDPOINT: Literal["staff", "superuser", False]
    SKILL_DIRS: Sequence[str | os.PathLike[str]]
    PUBLIC_URL: str | None


# -- What each key accepts: the table the system checks validate DJANGO_MCP against ---------------

_NUMBER = (int, float)
_SEQUENCE = (list, tuple)


@dataclass(frozen=True)
class Setting:
    """One ``DJANGO_MCP`` key: its default, and how the system checks validate it (check id, types, test).

    ``expected`` reads after "must be" in the error and its hint ("a positive int").
    A ``bool`` is never accepted where ``int`` or ``float`` is (``True`` is an int in Python).
    """

    id: str
    expected: str
    types: tuple[type, ...]
    valid: Callable[[Any], bool] | None = None
    default: Any = None

    def problem(self, value: Any) -> str | None:
        """``None`` when ``value`` is acceptable, else what is wrong ("must be ..., not ...")."""
        if not isinstance(value, self.types) or (isinstance(value, bool) and bool not in self.types):
            return f"must be {self.expected}, not {type(value).__name__} {value!r}"
        if self.valid is not None and not self.valid(value):
            return f"is {value!r}; it must be {self.expected}"
        return None


#: What ``SERVER_CARD`` may set (``django_mcp.discovery`` derives the rest from the server and the request).
_CARD_KEYS = frozenset({"name", "title", "description", "version", "website_url", "repository", "icons"})


def _int(id: str, minimum: int = 1, *, default: int) -> Setting:
    expected = "a positive int" if minimum == 1 else f"an int >= {minimum}"
    return Setting(id, expected, (int,), lambda v: v >= minimum, default)


def _seconds(id: str, zero: bool = False, *, default: float) -> Setting:
    if zero:
        return Setting(id, "a number of seconds (int or float) >= 0", _NUMBER, lambda v: v >= 0, default)
    return Setting(id, "a positive number of seconds (int or float)", _NUMBER, lambda v: v > 0, default)


def _bool(id: str, *, default: bool) -> Setting:
    return Setting(id, "True or False", (bool,), None, default)


def _optional_str(id: str, *, default: str | None) -> Setting:
    return Setting(id, "a string or None", (str, type(None)), None, default)


def _alias(id: str, of: str, *, default: str) -> Setting:
    return Setting(id, f"the name of an alias in {of} (a non-empty string)", (str,), bool, default)


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


def _public_url(value: Any) -> bool:
    """An http(s) URL with a host, no query or fragment: where browsers reach the site's root."""
    if value is None:
        return True
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and not (parts.query or parts.fragment)


def _endpoint(value: str) -> bool:
    return value.startswith("/") and bool(value.strip("/")) and not any(c in value for c in "?#: \t")


def _url_prefix(value: str) -> bool:
    return value.startswith("/") and value.endswith("/") and "//" not in value and not any(c in value for c in "?#: \t")


def _scopes(value: Mapping[Any, Any]) -> bool:
    return all(isinstance(k, str) and k and " " not in k and isinstance(v, str) for k, v in value.items())


#: JWS algorithms ``JWT_ALGORITHMS`` may list: public-key signatures only (RFC 8725 §3.1, §3.2).
JWT_ASYMMETRIC_ALGORITHMS = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)  # fmt: skip


def _issuer_url(value: str) -> bool:
    """An https URL without query or fragment; http only on a loopback host (a test or a local IdP)."""
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    if not parts.hostname or parts.query or parts.fragment or parts.username is not None:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1"))


def _role_scopes(value: Mapping[Any, Any]) -> bool:
    return all(
        isinstance(k, str) and k and isinstance(v, (list, tuple)) and all(isinstance(s, str) and s for s in v)
        for k, v in value.items()
    )


def _scope_groups(value: Mapping[Any, Any]) -> bool:
    return all(
        isinstance(k, str)
        and k
        and " " not in k
        and isinstance(v, _SEQUENCE)
        and v
        and all(isinstance(g, str) and g for g in v)
        for k, v in value.items()
    )


def _regex(value: str) -> bool:
    try:
        re.compile(value)
    except re.error:
        return False
    return bool(value)


def _rate_limit(value: Any) -> bool:
    if isinstance(value, str):
        return rates.valid(value)
    return value is None or (
        len(value) == 2 and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in value)
    )


def _rate_table(value: Mapping[Any, Any]) -> bool:
    return all(k in RATE_LIMIT_KEYS and rates.valid(v) for k, v in value.items())


def _task_limits(value: Mapping[Any, Any]) -> bool:
    for key, limit in value.items():
        if key not in TASK_LIMIT_KEYS:
            return False
        if key.startswith("active_"):
            if limit is not None and (type(limit) is not int or limit < 1):
                return False
        elif not rates.valid(limit):
            return False
    return True


def _optional_seconds(id: str, *, default: float | None) -> Setting:
    return Setting(
        id,
        "a positive number of seconds (int or float) or None",
        (*_NUMBER, type(None)),
        lambda v: v is None or v > 0,
        default,
    )


#: ``RATE_LIMITS`` keys: whose requests each rate counts (docs/operations.md).
RATE_LIMIT_KEYS = ("user", "client", "tool", "anonymous")
#: ``TASK_LIMITS`` keys: tasks at once (an int) and tasks created per period (a rate), per user and per client.
TASK_LIMIT_KEYS = ("active_per_user", "active_per_client", "created_per_user", "created_per_client")

#: Django's ``SafeExceptionReporterFilter.hidden_settings`` words, and those of one-time codes, sessions and
#: credentials (``pwd``, ``otp``, ``sessionid``, ``credentials``): searched in each key, case-insensitive.
DEFAULT_SENSITIVE_KEYS = "API|AUTH|TOKEN|KEY|SECRET|PASS|PWD|SIGNATURE|COOKIE|CREDENTIAL|OTP|SESSION"

#: The built-in middleware, in its default order (``MIDDLEWARE``): each is a feature of docs/operations.md.
DEFAULT_MIDDLEWARE: tuple[str, ...] = (
    "django_mcp.telemetry.middleware.Telemetry",
    "django_mcp.audit.middleware.AuditMiddleware",
    "django_mcp.switches.KillSwitches",
    "django_mcp.limits.middleware.Limits",
    "django_mcp.limits.timeouts.Timeouts",
)


#: Every ``DJANGO_MCP`` key, declared once: its default and its check. The ids are stable: ``E006``-``E008``
#: and ``E033`` predate this table; the other keys have one id each, ``E101`` onwards (docs/checks.md).
#: The types are the annotations of ``DjangoMCPSettings`` and ``MCPSettings`` (for mypy; tests/test_checks.py
#: checks that the three agree).
SETTINGS: dict[str, Setting] = {
    # Identity shown to clients in initialize / server/discover.
    "SERVER_NAME": Setting("django_mcp.E101", "a non-empty string", (str,), bool, default="django-mcp"),
    "SERVER_TITLE": _optional_str("django_mcp.E102", default=None),
    # None: the django-mcp-toolkit version.
    "SERVER_VERSION": _optional_str("django_mcp.E103", default=None),
    "INSTRUCTIONS": _optional_str("django_mcp.E104", default=None),
    # Where get_asgi_application() mounts the default site.
    "ENDPOINT": Setting(
        "django_mcp.E105",
        'a URL path such as "/mcp/" (starts with "/", not only "/", no query)',
        (str,),
        _endpoint,
        default="/mcp/",
    ),
    # Where the project includes django_mcp.urls and django_mcp.urls_wsgi: "/" (the site root), or a prefix
    # such as "/plugins/mcp/" holding ENDPOINT, its discovery and its OAuth side (docs/existing-projects.md).
    "URL_PREFIX": Setting(
        "django_mcp.E230",
        'a URL path prefix such as "/" or "/plugins/mcp/" (starts and ends with "/", no query)',
        (str,),
        _url_prefix,
        default="/",
    ),
    # "none" serves without authentication (development); "oauth" arrives with the auth issue.
    "AUTH": Setting("django_mcp.E006", "'none' or 'oauth'", (str,), lambda v: v in ("none", "oauth"), default="none"),
    # Browser origins allowed besides the endpoint's own host (DNS-rebinding protection).
    "ALLOWED_ORIGINS": Setting(
        "django_mcp.E106",
        'a list of origins such as "https://app.example.com" (scheme and host, no path or trailing slash) or "*"',
        _SEQUENCE,
        lambda v: all(_origin(o) for o in v),
        default=[],
    ),
    # Largest accepted request body, in bytes (413 above it).
    "MAX_BODY_SIZE": _int("django_mcp.E007", default=4 * 1024 * 1024),
    # Handshake-era sessions.
    # seconds without a request before a session expires
    "SESSION_IDLE_TIMEOUT": _seconds("django_mcp.E107", default=3600),
    # seconds a worker trusts its cached view of a session
    "SESSION_REVALIDATE_INTERVAL": _seconds("django_mcp.E108", zero=True, default=30),
    # Pagination of tools/list, resources/list, prompts/list, resources/templates/list.
    "PAGE_SIZE": _int("django_mcp.E109", default=100),
    # Seconds a server->client request (elicitation, sampling, roots) waits for its answer.
    "CLIENT_REQUEST_TIMEOUT": _seconds("django_mcp.E110", default=300),
    # SSE: keep-alive comment interval and the retry hint (ms) sent before closing a polled stream.
    "SSE_KEEPALIVE": _seconds("django_mcp.E111", default=15),
    "SSE_RETRY_MS": _int("django_mcp.E112", minimum=0, default=1000),
    # Event store used for SSE resumption (Last-Event-ID): a Django cache alias and bounds.
    "EVENT_STORE_CACHE": _alias("django_mcp.E008", "CACHES", default="default"),
    "EVENT_STORE_MAX_EVENTS": _int("django_mcp.E113", default=500),
    "EVENT_STORE_TTL": _seconds("django_mcp.E114", default=3600),
    # Channels layer alias carrying messages between workers.
    "CHANNEL_LAYER": _alias("django_mcp.E115", "CHANNEL_LAYERS", default="default"),
    # 2026-07-28 caching hints on list results and reads.
    "CACHE_TTL_MS": _int("django_mcp.E116", minimum=0, default=0),
    "CACHE_SCOPE": Setting(
        "django_mcp.E117", "'private' or 'public'", (str,), lambda v: v in ("private", "public"), default="private"
    ),
    # Seconds a signed multi-round-trip requestState stays valid.
    "REQUEST_STATE_MAX_AGE": Setting(
        "django_mcp.E118", "a positive int (seconds)", (int,), lambda v: v > 0, default=900
    ),
    # Maps exceptions raised by tools to results/errors; an import string.
    "EXCEPTION_HANDLER": Setting(
        "django_mcp.E119",
        "the dotted path of a callable handler(exc, *, tool), or the callable",
        (str, Callable),  # type: ignore[arg-type]  # isinstance(x, Callable) is fine at run time,
        default="django_mcp.exceptions.exception_handler",
    ),
    # Validate every outgoing result against mcp-types (slower; on in tests).
    "VALIDATE_RESULTS": _bool("django_mcp.E120", default=False),
    # -- Django models, templates and views (ModelResource, TemplatePrompt, DRF tools) --
    # Run each tools/call in a transaction savepoint: an exception rolls back its writes.
    "ATOMIC_TOOL_CALLS": _bool("django_mcp.E121", default=True),
    # DRF list tools: also the lookup variants of a filter that has a plain form (``name__ic``, ``name__n``... beside
    # ``name``); off, they are left out (a large filterset's variants make most of a catalog).
    "DRF_FILTER_LOOKUPS": _bool("django_mcp.E242", default=False),
    # ModelResource: largest file (bytes) whose contents a read inlines as a blob; larger files are links only.
    "RESOURCE_MAX_BLOB_SIZE": _int("django_mcp.E122", minimum=0, default=1024 * 1024),
    # -- Authentication (AUTH = "oauth", django-oauth-toolkit) --
    # Scopes this site grants, with the description shown on the consent page; scopes declared by
    # tools, resources and prompts are added automatically (described by their name unless listed here).
    "SCOPES": Setting(
        "django_mcp.E033",
        "a dict of scope names (non-empty, no spaces) to descriptions (strings)",
        (dict,),
        _scopes,
        default={"mcp": "Connect to this site's MCP server"},
    ),
    # Let MCP clients register themselves (RFC 7591) without an account; consent still needs a user.
    "ALLOW_ANONYMOUS_REGISTRATION": _bool("django_mcp.E123", default=True),
    # Refuse tokens that name no audience (RFC 8707 ``resource``): a token must be issued for this endpoint.
    "REQUIRE_AUDIENCE": _bool("django_mcp.E124", default=True),
    # Seconds a worker may answer a repeated OAuth access token from memory (no query, no thread) before it
    # checks it again; 0 turns the cache off. Revocation, a disabled client or user reaches every worker at once
    # over the channel layer: this bounds only a change whose broadcast was lost (docs/auth.md).
    "TOKEN_CACHE_MAX_AGE": _seconds("django_mcp.E295", zero=True, default=10),
    # Most verified tokens a worker keeps; past it the least recently used is dropped (and checked again).
    "TOKEN_CACHE_SIZE": _int("django_mcp.E296", default=10000),
    # The project's own API tokens (docs/auth.md): DRF-style authentication classes tried on a bearer (or
    # their own keyword's) Authorization header that DOT does not accept; dotted paths or the classes.
    "AUTHENTICATION_CLASSES": Setting(
        "django_mcp.E220",
        "a list of dotted paths of authentication classes (or the classes)",
        _SEQUENCE,
        lambda v: all((isinstance(c, str) and "." in c) or isinstance(c, type) for c in v),
        default=[],
    ),
    # scopes(user, auth) -> the OAuth scopes a project token grants (None: all the site's); None: all of them.
    "TOKEN_SCOPES": Setting(
        "django_mcp.E222",
        "the dotted path of a callable scopes(user, auth), the callable, or None",
        (str, Callable, type(None)),  # type: ignore[arg-type]  # isinstance(x, Callable) is fine at run time
        default=None,
    ),
    # Scopes reserved to Django groups: {scope: [group names]}. DOT shows and issues a listed scope only to a member
    # of one of its groups (the groups an OIDC login copies from the company IdP); unlisted scopes stay open to all.
    "SCOPE_GROUPS": Setting(
        "django_mcp.E260",
        "a dict of scope names to non-empty lists of group names (strings)",
        (dict,),
        _scope_groups,
        default={},
    ),
    # -- Engine security (batches) --
    # Most messages one JSON-RPC batch may hold; a larger batch gets one -32600 error and nothing in it runs.
    "MAX_BATCH_SIZE": _int("django_mcp.E007", default=100),
    # -- Operations: shutdown, cleanup, health --
    # Seconds calls in flight get to finish after SIGTERM before they answer a retryable error.
    "SHUTDOWN_GRACE": _seconds("django_mcp.E125", zero=True, default=20),
    # Seconds without a new request before a draining worker that stopped listening hands over to the
    # server: above the upstream keep-alive timeout of the proxy in front (nginx: 4 s in docs/deployment.md).
    "SHUTDOWN_QUIET": _seconds("django_mcp.E190", zero=True, default=5),
    # Per-worker session cache: most entries kept, and seconds an unused entry stays (reloaded from the DB after).
    "SESSION_CACHE_SIZE": _int("django_mcp.E126", default=10000),
    "SESSION_CACHE_MAX_AGE": _seconds("django_mcp.E127", default=900),
    # Seconds mcp_cleanup keeps ended sessions (visible in the admin) before deleting them.
    "SESSION_RETENTION": _seconds("django_mcp.E128", zero=True, default=86400),
    # Seconds each backend check of the health endpoint may take before it counts as down.
    "HEALTH_TIMEOUT": _seconds("django_mcp.E129", default=2),
    # -- Sync code and the database (django_mcp.runtime.sync_pool, django_mcp.runtime.unavailable) --
    # Threads running sync user code (tools, views, ModelResource reads, permission checks, templates)
    # per worker process; each holds a database connection: keep the total under max_connections.
    "SYNC_WORKERS": _int("django_mcp.E130", default=12),
    # Seconds a call waits for a free sync thread before it is refused as busy (retryable).
    "SYNC_QUEUE_TIMEOUT": _seconds("django_mcp.E131", zero=True, default=30),
    # Threads for the package's own queries (sessions, bearer tokens): never queued behind a tool.
    "SYNC_BOOKKEEPING_WORKERS": _int("django_mcp.E132", default=4),
    # gc.freeze() the heap loaded at startup: a full collection then walks only what was made since
    # (django_mcp.runtime.gc_freeze).
    "GC_FREEZE": _bool("django_mcp.E193", default=True),
    # Retry-After (seconds) sent with 503 while the database is unreachable or the pool stays full.
    "UNAVAILABLE_RETRY_AFTER": _int("django_mcp.E133", minimum=0, default=2),
    # -- OAuth security (production issue) --
    # Resource URIs (RFC 8707) a token may name besides the endpoint's own canonical URI (RFC 9728); exact match.
    "ACCEPTED_AUDIENCES": Setting(
        "django_mcp.E134",
        'a list of absolute URIs such as "https://mcp.example.com/mcp/" (no fragment)',
        _SEQUENCE,
        lambda v: all(_absolute_uri(u) for u in v),
        default=[],
    ),
    # -- Tokens from an external authorization server (JWT access tokens, RFC 9068; docs/auth.md) --
    # The issuer whose JWT access tokens the endpoint accepts (its RFC 8414 / OpenID metadata names the keys);
    # None: only django-oauth-toolkit's own tokens.
    "JWT_ISSUER": Setting(
        "django_mcp.E280",
        'None or the issuer URL, such as "https://login.example.com/realms/staff" (https, or http on loopback)',
        (str, type(None)),
        lambda v: v is None or _issuer_url(v),
        default=None,
    ),
    # The issuer's key set, when its metadata does not name it or names another host; None: its jwks_uri.
    "JWT_JWKS_URI": Setting(
        "django_mcp.E281",
        "None or an https URL (http on loopback)",
        (str, type(None)),
        lambda v: v is None or _issuer_url(v),
        default=None,
    ),
    # Signature algorithms accepted: asymmetric only (never "none", never an HMAC "secret").
    "JWT_ALGORITHMS": Setting(
        "django_mcp.E282",
        f"a non-empty list of {', '.join(JWT_ASYMMETRIC_ALGORITHMS)}",
        _SEQUENCE,
        lambda v: bool(v) and all(a in JWT_ASYMMETRIC_ALGORITHMS for a in v),
        default=["RS256", "PS256", "ES256", "EdDSA"],
    ),
    # Seconds of clock skew allowed on exp, nbf and iat.
    "JWT_LEEWAY": Setting(
        "django_mcp.E283", "a number of seconds from 0 to 300", _NUMBER, lambda v: 0 <= v <= 300, default=30
    ),
    # The claim naming the Django user, and the user field it matches (None: the username field).
    "JWT_USER_CLAIM": Setting("django_mcp.E284", "a claim name (a non-empty string)", (str,), bool, default="sub"),
    "JWT_USER_FIELD": _optional_str("django_mcp.E285", default=None),
    # Create the Django user on its first call when none matches (off: an unknown user is refused).
    "JWT_CREATE_USERS": _bool("django_mcp.E286", default=False),
    # Claims holding the user's roles or groups, and the site scopes each role or group grants.
    "JWT_ROLES_CLAIMS": Setting(
        "django_mcp.E287",
        "a list of claim names (strings)",
        _SEQUENCE,
        lambda v: all(isinstance(c, str) and c for c in v),
        default=["roles", "groups"],
    ),
    "JWT_ROLE_SCOPES": Setting(
        "django_mcp.E288",
        'a dict of role or group names to lists of scopes, such as {"library-staff": ["books:write"]}',
        (dict,),
        _role_scopes,
        default={},
    ),
    # Least seconds between two fetches of the issuer's keys for a token whose key ("kid") is unknown,
    # and the most seconds keys are kept before they are fetched again.
    "JWT_KEYS_MIN_REFRESH": _seconds("django_mcp.E289", default=60),
    "JWT_KEYS_MAX_AGE": _seconds("django_mcp.E290", default=3600),
    # -- Enterprise-managed authorization (identity assertion grants, ID-JAG; docs/auth.md) --
    # The company identity providers whose ID-JAGs the token endpoint exchanges for access tokens
    # (RFC 7523 jwt-bearer grant); keys from each one's metadata. Empty: the grant is not offered.
    "IDJAG_ISSUERS": Setting(
        "django_mcp.E293",
        'a list of issuer URLs, such as ["https://login.example.com"] (https, or http on loopback)',
        _SEQUENCE,
        lambda v: all(isinstance(u, str) and _issuer_url(u) for u in v),
        default=[],
    ),
    # Dynamic client registration (RFC 7591/7592) limits: body bytes (413 above), redirect URIs per client,
    # characters per redirect URI, and bytes of JSON in metadata fields RFC 7591 does not define (400 above).
    "REGISTRATION_MAX_BODY_SIZE": _int("django_mcp.E135", default=16 * 1024),
    "REGISTRATION_MAX_REDIRECT_URIS": _int("django_mcp.E136", default=10),
    "REGISTRATION_MAX_URI_LENGTH": _int("django_mcp.E137", default=2048),
    "REGISTRATION_MAX_EXTRA_METADATA": _int("django_mcp.E138", minimum=0, default=4096),
    # Anonymous registrations per client address, in the rate limits' syntax ("20/hour"; 429 with Retry-After
    # above it); [count, seconds] is read as one rate; None: no limit.
    "REGISTRATION_RATE_LIMIT": Setting(
        "django_mcp.E139",
        "a rate string such as '20/hour', [count, seconds] (two positive ints) or None",
        (str, *_SEQUENCE, type(None)),
        _rate_limit,
        default="20/hour",
    ),
    # Django cache alias counting registrations (shared by all workers when it is Redis or a database cache).
    "REGISTRATION_RATE_CACHE": _alias("django_mcp.E140", "CACHES", default="default"),
    # -- Streams, event store and channel-layer faults (production issue: streams) --
    # Events kept per session for its GET stream, and broadcasts kept for replay to resumed GET streams.
    "EVENT_STORE_SESSION_MAX_EVENTS": _int("django_mcp.E141", default=1000),
    "EVENT_STORE_BROADCAST_MAX_EVENTS": _int("django_mcp.E142", default=1000),
    # Seconds a POST stream's writer lease lives unrenewed (renewed every third of it); a stream resumed
    # after its writer died ends with a retryable error within about this long.
    "WRITER_LEASE_TTL": _seconds("django_mcp.E143", default=15),
    # Open GET streams per worker process; above it 503 with Retry-After.
    "MAX_STREAMS": _int("django_mcp.E144", default=1000),
    # Seconds between re-adding this worker's channel-layer groups (capped at a quarter of group_expiry).
    "LAYER_REFRESH_INTERVAL": _seconds("django_mcp.E145", default=60),
    # -- Tasks (tools declared with task=..., run on Django's Tasks framework) --
    # The TASKS backend alias and queue a task-augmented tools/call is enqueued on.
    "TASK_BACKEND": Setting(
        "django_mcp.E146", "an alias of TASKS (a string)", (str,), lambda v: bool(v), default="default"
    ),
    "TASK_QUEUE": Setting(
        "django_mcp.E147", "a queue name (a non-empty string)", (str,), lambda v: bool(v), default="default"
    ),
    # Time to live (ms) of a task whose client asks for none, and the most a client may ask for; None: no limit.
    "TASK_DEFAULT_TTL_MS": _int("django_mcp.E148", default=3_600_000),
    "TASK_MAX_TTL_MS": Setting(
        "django_mcp.E149",
        "a positive int (ms) or None",
        (int, type(None)),
        lambda v: v is None or v > 0,
        default=86_400_000,
    ),
    # Polling interval (ms) suggested to clients.
    "TASK_POLL_INTERVAL_MS": _int("django_mcp.E150", default=1000),
    # Seconds a running task's heartbeat may be silent before its worker counts as lost; the task then runs
    # again (up to TASK_MAX_ATTEMPTS runs) or fails.
    "TASK_HEARTBEAT_TIMEOUT": _seconds("django_mcp.E151", default=60),
    "TASK_MAX_ATTEMPTS": _int("django_mcp.E152", default=2),
    # -- Operations --
    # What wraps every request through the door (docs/middleware.md), outermost first: dotted paths or factories.
    "MIDDLEWARE": Setting(
        "django_mcp.E153",
        "a list of dotted paths of middleware factories (or the factories)",
        _SEQUENCE,
        lambda v: all((isinstance(p, str) and "." in p) or callable(p) for p in v),
        default=list(DEFAULT_MIDDLEWARE),
    ),
    # The project's own Django middleware each call runs in, on a request whose user is the caller
    # (django_mcp.runtime.project_middleware, docs/existing-projects.md): None, the project's MIDDLEWARE less Django's
    # own and other HTTP-only middleware; [] for none.
    "PROJECT_MIDDLEWARE": Setting(
        "django_mcp.E210",
        "None, or a list of dotted paths of Django middleware",
        (type(None), *_SEQUENCE),
        lambda v: v is None or all(isinstance(p, str) and "." in p for p in v),
        default=None,
    ),
    # Dotted paths left out of PROJECT_MIDDLEWARE (its default included): middleware a call must not run in.
    "PROJECT_MIDDLEWARE_EXCLUDE": Setting(
        "django_mcp.E211",
        "a list of dotted paths of Django middleware",
        _SEQUENCE,
        lambda v: all(isinstance(p, str) for p in v),
        default=[],
    ),
    # -- Telemetry (django_mcp.telemetry.middleware; the `otel` extra) --
    # OpenTelemetry spans and metrics per the MCP semantic conventions; off: nothing of OpenTelemetry is imported.
    "TELEMETRY": _bool("django_mcp.E185", default=False),
    # The resource URI as the span name's target of resources/* requests (high cardinality, so opt-in).
    "TELEMETRY_RESOURCE_SPAN_NAMES": _bool("django_mcp.E187", default=False),
    # Record tools/call arguments and results on spans (gen_ai.tool.call.arguments/result): may hold personal data.
    "TELEMETRY_TOOL_CONTENT": _bool("django_mcp.E188", default=False),
    # Take the W3C baggage a client sends (in _meta or headers) into the call's context: off, a client could set
    # entries (enduser.id=root) that the tool's own outgoing calls would carry to internal services.
    "TELEMETRY_CLIENT_BAGGAGE": _bool("django_mcp.E241", default=False),
    # -- Kill switches, strict mode, task-worker health (docs/operations.md) --
    # Seconds a worker trusts its in-memory kill switches without a change broadcast (one query to reload).
    "SWITCHES_REVALIDATE_INTERVAL": _seconds("django_mcp.E180", default=10),
    # Refuse to start (system check E182) while a tool, resource, template or prompt declares no access rule.
    "REQUIRE_ACCESS_RULES": _bool("django_mcp.E181", default=False),
    # Seconds a queued task may wait for a task worker before its statusMessage and the health endpoint say so.
    "TASK_UNCLAIMED_WARNING": _seconds("django_mcp.E183", default=120),
    # -- Operations: limits, timeouts, size caps (django_mcp.operations; docs/operations.md) --
    # Requests per caller in the ``limits`` syntax ("600/minute"), per user, per OAuth client, per tool (each
    # caller's calls of one tool) and per address for anonymous callers; None: no limit. Keys left out keep
    # their default. Over it: 429 with Retry-After.
    "RATE_LIMITS": Setting(
        "django_mcp.E170",
        'a dict of "user", "client", "tool", "anonymous" to a rate such as "600/minute" or None',
        (dict,),
        _rate_table,
        default={"user": "600/minute", "client": None, "tool": None, "anonymous": "600/minute"},
    ),
    # Django cache alias holding the counters: every worker counts together when it is shared (Redis).
    "RATE_LIMIT_CACHE": _alias("django_mcp.E171", "CACHES", default="default"),
    # MCP tasks at once (working or input_required) per user and per OAuth client (an int or None), and tasks
    # created per period (a rate or None). Keys left out keep their default.
    "TASK_LIMITS": Setting(
        "django_mcp.E172",
        'a dict of "active_per_user", "active_per_client" (a positive int or None) and "created_per_user", '
        '"created_per_client" (a rate such as "600/hour" or None)',
        (dict,),
        _task_limits,
        default={
            "active_per_user": 20,
            "active_per_client": 100,
            "created_per_user": "600/hour",
            "created_per_client": None,
        },
    ),
    # Seconds a tools/call may run before it answers a timed-out tool error (a tool's timeout= wins); None: none.
    "TOOL_TIMEOUT": _optional_seconds("django_mcp.E173", default=300),
    # Seconds a task's run may take; None: until the task expires (its TTL). A tool's timeout= wins.
    "TASK_TIMEOUT": _optional_seconds("django_mcp.E174", default=None),
    # Largest result (serialized JSON bytes) a call may answer or a task store; larger is a tool error. None: any.
    "MAX_RESULT_BYTES": Setting(
        "django_mcp.E175",
        "a positive int (bytes) or None",
        (int, type(None)),
        lambda v: v is None or v > 0,
        default=4 * 1024 * 1024,
    ),
    # -- Operations: the audit log (django_mcp.audit.middleware, docs/operations.md) --
    # Record every tools/call, resources/read, prompts/get and task run in MCPCallRecord (the admin's "MCP calls").
    "AUDIT_LOG": _bool("django_mcp.E160", default=True),
    # Seconds mcp_cleanup keeps audit records (30 days).
    "AUDIT_RETENTION": _seconds("django_mcp.E161", default=30 * 86400),
    # Seconds between two writes of the buffered records by each process's background writer.
    "AUDIT_FLUSH_INTERVAL": _seconds("django_mcp.E162", default=0.5),
    # Records per INSERT (one short transaction each); this many buffered wake the writer early.
    "AUDIT_BATCH_SIZE": _int("django_mcp.E163", default=500),
    # Records a process buffers at most (the database away): beyond it the oldest are dropped, with a warning.
    "AUDIT_BUFFER_SIZE": _int("django_mcp.E164", default=10_000),
    # Argument keys whose values are masked (a case-insensitive regular expression, searched in each key, at
    # every depth), as Django's SafeExceptionReporterFilter masks settings.
    "AUDIT_SENSITIVE_KEYS": Setting(
        "django_mcp.E165",
        "a regular expression (a non-empty string that compiles)",
        (str,),
        _regex,
        default=DEFAULT_SENSITIVE_KEYS,
    ),
    # Bytes of a record's arguments (and of a "full" record's result) kept at most, as JSON text; beyond it the
    # record holds {"truncated": true, "bytes": …, "preview": …}. None: no bound.
    "AUDIT_MAX_PAYLOAD_BYTES": Setting(
        "django_mcp.E240",
        "None, or an int >= 1024",
        (type(None), int),
        lambda v: v is None or v >= 1024,
        default=65_536,
    ),
    # -- What people see (docs/discovery.md, docs/browsable.md) --
    # The Server Card at <ENDPOINT>server-card and the AI Catalog at /.well-known/ai-catalog.json (the
    # experimental server-card extension): True, False (both 404), or a dict of what cannot be derived.
    "SERVER_CARD": Setting(
        "django_mcp.E191",
        "True, False or a dict of " + ", ".join(f'"{k}"' for k in sorted(_CARD_KEYS)),
        (bool, dict),
        lambda v: isinstance(v, bool) or set(v) <= _CARD_KEYS,
        default=True,
    ),
    # GET ENDPOINT from a browser: a page listing what the signed-in user may use, with forms to call it.
    # "staff" (the default) or "superuser" says who may open it; False turns it off (check --deploy: W032).
    "BROWSABLE_ENDPOINT": Setting(
        "django_mcp.E192",
        '"staff", "superuser" or False',
        (str, bool),
        lambda v: v in ("staff", "superuser", False),
        default="staff",
    ),
    # Folders of skills besides the apps' own ``skills/`` (each child folder with a SKILL.md is one skill).
    "SKILL_DIRS": Setting(
        "django_mcp.E250",
        "a list of folders (strings or paths)",
        _SEQUENCE,
        lambda v: all(isinstance(d, (str, os.PathLike)) and d for d in v),
        default=[],
    ),
    # Where browsers reach this site ("https://books.example.com"): MCP App pages then load the ext-apps bridge
    # from <PUBLIC_URL><ENDPOINT>apps/ (served once, cached) and declare its origin in their CSP; None: every
    # ui:// page inlines the bridge (about 240 KB each). Pages are rendered with no request, hence a setting.
    "PUBLIC_URL": Setting(
        "django_mcp.E300",
        'None or the URL of the site\'s root as browsers reach it, such as "https://books.example.com" '
        "(http or https, no query or fragment)",
        (str, type(None)),
        _public_url,
        default=None,
    ),
}


#: Each key's default, derived from ``SETTINGS``.
DEFAULTS: dict[str, Any] = {name: setting.default for name, setting in SETTINGS.items()}
#: Keys whose string value is a dotted path, imported on first access.
IMPORT_STRINGS = frozenset({"EXCEPTION_HANDLER", "TOKEN_SCOPES"})


class MCPSettings:
    """``mcp_settings.PAGE_SIZE`` and so on: the user's value, else the default (typed for mypy below)."""

    # Annotations only (no class attributes), so ``__getattr__`` still resolves each on first access.
    SERVER_NAME: str
    SERVER_TITLE: str | None
    SERVER_VERSION: str | None
    INSTRUCTIONS: str | None
    ENDPOINT: str
    URL_PREFIX: str
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
    DRF_FILTER_LOOKUPS: bool
    RESOURCE_MAX_BLOB_SIZE: int
    SCOPES: Mapping[str, str]
    ALLOW_ANONYMOUS_REGISTRATION: bool
    REQUIRE_AUDIENCE: bool
    TOKEN_CACHE_MAX_AGE: float
    TOKEN_CACHE_SIZE: int
    AUTHENTICATION_CLASSES: Sequence[str | type]
    TOKEN_SCOPES: TokenScopes | None  # imported on first access
    SCOPE_GROUPS: Mapping[str, Sequence[str]]
    MAX_BATCH_SIZE: int
    SHUTDOWN_GRACE: float
    SHUTDOWN_QUIET: float
    SESSION_CACHE_SIZE: int
    SESSION_CACHE_MAX_AGE: float
    SESSION_RETENTION: float
    HEALTH_TIMEOUT: float
    SYNC_WORKERS: int
    SYNC_QUEUE_TIMEOUT: float
    SYNC_BOOKKEEPING_WORKERS: int
    GC_FREEZE: bool
    UNAVAILABLE_RETRY_AFTER: int
    ACCEPTED_AUDIENCES: Sequence[str]
    JWT_ISSUER: str | None
    JWT_JWKS_URI: str | None
    JWT_ALGORITHMS: Sequence[str]
    JWT_LEEWAY: float
    JWT_USER_CLAIM: str
    JWT_USER_FIELD: str | None
    JWT_CREATE_USERS: bool
    JWT_ROLES_CLAIMS: Sequence[str]
    JWT_ROLE_SCOPES: Mapping[str, Sequence[str]]
    JWT_KEYS_MIN_REFRESH: float
    JWT_KEYS_MAX_AGE: float
    IDJAG_ISSUERS: Sequence[str]
    REGISTRATION_MAX_BODY_SIZE: int
    REGISTRATION_MAX_REDIRECT_URIS: int
    REGISTRATION_MAX_URI_LENGTH: int
    REGISTRATION_MAX_EXTRA_METADATA: int
    REGISTRATION_RATE_LIMIT: str | Sequence[int] | None
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
    MIDDLEWARE: Sequence[str | Callable[..., Any]]
    PROJECT_MIDDLEWARE: Sequence[str] | None
    PROJECT_MIDDLEWARE_EXCLUDE: Sequence[str]
    TELEMETRY: bool
    TELEMETRY_RESOURCE_SPAN_NAMES: bool
    TELEMETRY_TOOL_CONTENT: bool
    TELEMETRY_CLIENT_BAGGAGE: bool
    SWITCHES_REVALIDATE_INTERVAL: float
    REQUIRE_ACCESS_RULES: bool
    TASK_UNCLAIMED_WARNING: float
    RATE_LIMITS: Mapping[str, str | None]
    RATE_LIMIT_CACHE: str
    TASK_LIMITS: Mapping[str, int | str | None]
    TOOL_TIMEOUT: float | None
    TASK_TIMEOUT: float | None
    MAX_RESULT_BYTES: int | None
    AUDIT_LOG: bool
    AUDIT_RETENTION: float
    AUDIT_FLUSH_INTERVAL: float
    AUDIT_BATCH_SIZE: int
    AUDIT_BUFFER_SIZE: int
    AUDIT_SENSITIVE_KEYS: str
    AUDIT_MAX_PAYLOAD_BYTES: int | None
    SERVER_CARD: bool | Mapping[str, Any]
    BROWSABLE_ENDPOINT: Literal["staff", "superuser", False]
    SKILL_DIRS: Sequence[str | os.PathLike[str]]
    PUBLIC_URL: str | None

    def __init__(self) -> None:
        self._cached: dict[str, Any] = {}
        self._user: dict[str, Any] | None = None

    @property
    def user_settings(self) -> dict[str, Any]:
        if self._user is None:
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


def endpoint_under_prefix() -> str:
    """``ENDPOINT`` relative to ``URL_PREFIX``, without slashes: where the included URLconfs put the endpoint.

    ``"mcp"`` at the site root (the default), ``""`` for ``ENDPOINT = URL_PREFIX = "/plugins/mcp/"``. An
    ``ENDPOINT`` outside ``URL_PREFIX`` (system check ``E221``) is taken whole, as at the root.
    """
    endpoint, prefix = mcp_settings.ENDPOINT.rstrip("/") + "/", mcp_settings.URL_PREFIX
    if endpoint.startswith(prefix):
        return endpoint[len(prefix) :].strip("/")
    return endpoint.strip("/")
