"""One test per system check id."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal, get_type_hints

import pytest
from django.test import override_settings
from pydantic import TypeAdapter

from django_mcp import MCPServer
from django_mcp.checks import (
    check_runserver,
    check_settings,
    check_telemetry,
    check_tools,
    host_directory_warnings,
    tool_warnings,
)
from django_mcp.conf import DEFAULTS, SETTINGS, DjangoMCPSettings, MCPSettings
from tests.support.servers import ROOT, server_env


def ids(**overrides: Any) -> set[str]:
    with override_settings(**overrides):
        return {e.id for e in check_settings()}


def messages(**overrides: Any) -> list[Any]:
    with override_settings(**overrides):
        return list(check_settings())


def test_clean_settings_pass() -> None:
    assert ids() == set()


def test_e001_not_a_dict() -> None:
    assert "django_mcp.E001" in ids(DJANGO_MCP=["nope"])


def test_e002_unknown_key() -> None:
    assert "django_mcp.E002" in ids(DJANGO_MCP={"SERVER_NAM": "typo"})


def test_e002_hint_suggests_the_closest_key() -> None:
    (error,) = messages(DJANGO_MCP={"SERVERNAME": "typo"})
    assert error.id == "django_mcp.E002" and "'SERVERNAME'" in error.msg
    assert "Did you mean 'SERVER_NAME'?" in error.hint
    (error,) = messages(DJANGO_MCP={"page_size": 10})
    assert "Did you mean 'PAGE_SIZE'?" in error.hint
    (error,) = messages(DJANGO_MCP={"ZZZ": 1})
    assert "Did you mean" not in error.hint and "docs/settings.md" in error.hint


def test_e003_channels_missing() -> None:
    from django.conf import settings

    apps = [a for a in settings.INSTALLED_APPS if a != "channels"]
    assert "django_mcp.E003" in ids(INSTALLED_APPS=apps)


def test_w002_no_asgi_application() -> None:
    assert "django_mcp.W002" in ids(ASGI_APPLICATION=None)


def test_e005_asgi_not_routing_endpoint() -> None:
    assert "django_mcp.E005" in ids(ASGI_APPLICATION="tests.settings.asgi_without_mcp.application")
    assert "django_mcp.E005" in ids(ASGI_APPLICATION="tests.no_such_module.application")


def test_e006_bad_auth() -> None:
    assert "django_mcp.E006" in ids(DJANGO_MCP={"AUTH": "maybe"})


def test_e007_bad_body_size() -> None:
    assert "django_mcp.E007" in ids(DJANGO_MCP={"MAX_BODY_SIZE": 0})
    assert "django_mcp.E007" in ids(DJANGO_MCP={"MAX_BATCH_SIZE": 0})
    assert "django_mcp.E007" in ids(DJANGO_MCP={"MAX_BATCH_SIZE": "100"})
    assert "django_mcp.E007" not in ids(DJANGO_MCP={"MAX_BATCH_SIZE": 1})


def test_e008_unknown_event_cache() -> None:
    assert "django_mcp.E008" in ids(DJANGO_MCP={"EVENT_STORE_CACHE": "nope"})


def test_w001_no_channel_layer() -> None:
    assert "django_mcp.W001" in ids(CHANNEL_LAYERS={})


# -- Typed settings: every key has a check id; a wrong type or value is an error with a hint ---------

#: Per key, values its check refuses: a wrong type first, then (where the type has one) a wrong value.
BAD: dict[str, list[Any]] = {
    "SERVER_NAME": [5, ""],
    "SERVER_TITLE": [5],
    "SERVER_VERSION": [1.0],
    "INSTRUCTIONS": [["use the tools"]],
    "ENDPOINT": [None, "mcp/", "/", "/mcp/?x=1", "https://example.com/mcp/"],
    "URL_PREFIX": [None, "", "plugins/", "/plugins", "/a//b/", "/p/?x=1/"],
    "AUTH": [True, "maybe", "OAuth"],
    "ALLOWED_ORIGINS": ["https://app.example.com", ["https://app.example.com/"], ["app.example.com"], [5]],
    "MAX_BODY_SIZE": ["4096", True, 0, -1],
    "SESSION_IDLE_TIMEOUT": ["60", 0, -5],
    "SESSION_REVALIDATE_INTERVAL": [None, -1],
    "PAGE_SIZE": [10.0, 0],
    "CLIENT_REQUEST_TIMEOUT": [None, 0],
    "SSE_KEEPALIVE": ["15", 0],
    "SSE_RETRY_MS": [1.5, -1],
    "EVENT_STORE_CACHE": [None, "", "nope"],
    "EVENT_STORE_MAX_EVENTS": ["500", 0],
    "EVENT_STORE_TTL": [None, 0],
    "CHANNEL_LAYER": [["default"], ""],
    "CACHE_TTL_MS": [1.5, -1],
    "CACHE_SCOPE": [None, "shared"],
    "REQUEST_STATE_MAX_AGE": [900.0, 0],
    "EXCEPTION_HANDLER": [5, "tests.no_such_module.handler", "django_mcp.conf.nothing", "django_mcp.conf.DEFAULTS"],
    "VALIDATE_RESULTS": ["yes", 1],
    "ATOMIC_TOOL_CALLS": [None, 0],
    "RESOURCE_MAX_BLOB_SIZE": ["1MB", -1],
    "SCOPES": [["mcp"], {"two words": "bad"}, {"": "empty"}, {"mcp": 5}],
    "ALLOW_ANONYMOUS_REGISTRATION": ["False"],
    "REQUIRE_AUDIENCE": [None],
    "TOKEN_CACHE_MAX_AGE": [-1, "10", None],
    "TOKEN_CACHE_SIZE": [0, -5, 1.5],
    "MAX_BATCH_SIZE": ["100", 0],
    "SHUTDOWN_GRACE": ["20", -1],
    "SHUTDOWN_QUIET": ["5", -0.5],
    "SESSION_CACHE_SIZE": [1e4, 0],
    "SESSION_CACHE_MAX_AGE": [None, 0],
    "SESSION_RETENTION": ["1d", -1],
    "HEALTH_TIMEOUT": [None, 0],
    "SYNC_WORKERS": [12.0, 0],
    "SYNC_QUEUE_TIMEOUT": [None, -1],
    "SYNC_BOOKKEEPING_WORKERS": ["4", 0],
    "GC_FREEZE": ["yes", 1],
    "UNAVAILABLE_RETRY_AFTER": [2.5, -1],
    "ACCEPTED_AUDIENCES": ["https://mcp.example.com/mcp/", ["mcp.example.com"], ["https://x.example/#frag"]],
    "JWT_ISSUER": [5, "http://login.example.com", "https://login.example.com/?tenant=1", "login.example.com"],
    "JWT_JWKS_URI": [5, "http://keys.example.com/jwks"],
    "JWT_ALGORITHMS": ["RS256", [], ["none"], ["HS256"], ["RS256", "HS512"]],
    "JWT_LEEWAY": ["30", -1, 3600],
    "JWT_USER_CLAIM": [5, ""],
    "JWT_USER_FIELD": [5],
    "JWT_CREATE_USERS": ["yes"],
    "JWT_ROLES_CLAIMS": ["groups", [""], [5]],
    "JWT_ROLE_SCOPES": [["staff"], {"staff": "books:write"}, {"staff": [5]}],
    "JWT_KEYS_MIN_REFRESH": ["60", 0],
    "JWT_KEYS_MAX_AGE": ["3600", 0],
    "IDJAG_ISSUERS": ["https://login.example.com", ["http://login.example.com"], ["https://login.example.com/#f"], [3]],
    "REGISTRATION_MAX_BODY_SIZE": ["16k", 0],
    "REGISTRATION_MAX_REDIRECT_URIS": [None, 0],
    "REGISTRATION_MAX_URI_LENGTH": [2048.0, 0],
    "REGISTRATION_MAX_EXTRA_METADATA": ["4096", -1],
    "REGISTRATION_RATE_LIMIT": ["20/3600", "twenty an hour", [20], [20, 0], [20, "3600"], [True, 60]],
    "REGISTRATION_RATE_CACHE": [5, "", "nope"],
    "EVENT_STORE_SESSION_MAX_EVENTS": [None, 0],
    "EVENT_STORE_BROADCAST_MAX_EVENTS": ["1000", 0],
    "WRITER_LEASE_TTL": [None, 0],
    "MAX_STREAMS": [1000.0, 0],
    "LAYER_REFRESH_INTERVAL": ["60", 0],
    "TASK_BACKEND": ["", 1],
    "TASK_QUEUE": ["", None],
    "TASK_DEFAULT_TTL_MS": [0, 1.5],
    "TASK_MAX_TTL_MS": [0, "1h"],
    "TASK_POLL_INTERVAL_MS": [0, True],
    "TASK_HEARTBEAT_TIMEOUT": [0, "60"],
    "TASK_MAX_ATTEMPTS": [0, None],
    "MIDDLEWARE": ["tests.support.middlewares.Recorder", [5], ["nodots"], ["tests.no_such_module.Middleware"]],
    "PROJECT_MIDDLEWARE": ["tests.projectapp.middleware.TenancyMiddleware", [5], ["nodots"]],
    "PROJECT_MIDDLEWARE_EXCLUDE": [None, "x.Y", [5]],
    "TELEMETRY": ["yes", 1],
    "TELEMETRY_RESOURCE_SPAN_NAMES": [None],
    "TELEMETRY_TOOL_CONTENT": ["False", 0],
    "TELEMETRY_CLIENT_BAGGAGE": ["yes", 1],
    "DRF_FILTER_LOOKUPS": ["yes", 1],
    "SWITCHES_REVALIDATE_INTERVAL": ["10", 0, -1],
    "REQUIRE_ACCESS_RULES": ["yes", 1, None],
    "TASK_UNCLAIMED_WARNING": [None, 0, "2m"],
    "RATE_LIMITS": ["600/minute", {"users": "1/second"}, {"user": "often"}, {"user": 600}, {"tool": "0/minute"}],
    "RATE_LIMIT_CACHE": [None, "", "nope"],
    "TASK_LIMITS": [20, {"active": 20}, {"active_per_user": 0}, {"active_per_user": "20"}, {"created_per_user": 5}],
    "TOOL_TIMEOUT": ["30", 0, -1, True],
    "TASK_TIMEOUT": ["1h", 0],
    "MAX_RESULT_BYTES": [4.0, 0, "4MB"],
    "AUDIT_LOG": ["yes", 1],
    "AUDIT_RETENTION": ["30d", 0, -1],
    "AUDIT_FLUSH_INTERVAL": [None, 0],
    "AUDIT_BATCH_SIZE": [500.0, 0],
    "AUDIT_BUFFER_SIZE": ["10000", 0],
    "AUDIT_SENSITIVE_KEYS": [None, "", "(unclosed", ["TOKEN"]],
    "AUDIT_MAX_PAYLOAD_BYTES": [0, 1023, "64k", True],
    "SERVER_CARD": [None, "on", {"tools": []}],
    "BROWSABLE_ENDPOINT": [True, "everyone", None],
    "SKILL_DIRS": ["skills", [""], [None], [3]],
    "PUBLIC_URL": [
        "books.example.com",
        "ftp://books.example.com",
        "https://books.example.com/?a=1",
        "https://x#top",
        "https://",
        "https://books.example.com:99999",
        443,
        "",
    ],
    "AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        [5],
        ["nodots"],
        ["tests.no_such_module.Authentication"],
    ],
    "TOKEN_SCOPES": [5, ["mcp"], "tests.no_such_module.scopes", "django_mcp.conf.DEFAULTS"],
    "SCOPE_GROUPS": [
        [],
        {"secret:read": []},
        {"secret:read": "vault-readers"},
        {"a b": ["staff"]},
        {"secret:read": [""]},
        {"": ["staff"]},
    ],
}

#: Values besides the defaults that the checks accept (ints where floats are allowed, None where allowed...).
GOOD: dict[str, list[Any]] = {
    "SERVER_TITLE": ["Library"],
    "ENDPOINT": ["/api/mcp/", "/mcp"],
    "URL_PREFIX": ["/", "/plugins/mcp/"],
    "ALLOWED_ORIGINS": [["https://app.example.com", "http://127.0.0.1:8000", "*"], ("https://a.example",)],
    "SESSION_IDLE_TIMEOUT": [1.5],
    "SESSION_REVALIDATE_INTERVAL": [0, 0.2],
    "SSE_KEEPALIVE": [0.5],
    "CACHE_SCOPE": ["public"],
    "EXCEPTION_HANDLER": [lambda exc, *, tool: None, "django_mcp.exceptions.exception_handler"],
    "SCOPES": [{"mcp": "Connect", "books:read": "Read books"}],
    "SHUTDOWN_GRACE": [0],
    "SHUTDOWN_QUIET": [0, 4.5],
    "ACCEPTED_AUDIENCES": [["https://mcp.example.com/mcp/"], ("https://other.example/mcp",)],
    "JWT_ISSUER": ["https://login.example.com/realms/staff", "http://127.0.0.1:8080", "http://localhost:9000/"],
    "IDJAG_ISSUERS": [[], ["https://login.example.com", "http://127.0.0.1:8080"], ("https://idp.example/t1",)],
    "JWT_ALGORITHMS": [["ES256"], ("RS256", "EdDSA")],
    "JWT_LEEWAY": [0, 2.5, 300],
    "JWT_USER_FIELD": ["email", None],
    "JWT_ROLE_SCOPES": [{"staff": ["books:write", "books:read"]}, {}],
    "REGISTRATION_RATE_LIMIT": [None, (5, 60), [10000, 3600], "20/hour", "5/minute; 100/day"],
    "MIDDLEWARE": [[], ["tests.support.middlewares.Recorder", "tests.support.middlewares.SyncStamp"]],
    "PROJECT_MIDDLEWARE": [None, [], ["tests.projectapp.middleware.TenancyMiddleware"]],
    "PROJECT_MIDDLEWARE_EXCLUDE": [[], ["tests.projectapp.middleware.TenancyMiddleware"]],
    "TELEMETRY": [True],
    "TELEMETRY_RESOURCE_SPAN_NAMES": [True],
    "TELEMETRY_TOOL_CONTENT": [True],
    "TELEMETRY_CLIENT_BAGGAGE": [True],
    "DRF_FILTER_LOOKUPS": [True, False],
    "SWITCHES_REVALIDATE_INTERVAL": [0.5, 60],
    "REQUIRE_ACCESS_RULES": [True],
    "TASK_UNCLAIMED_WARNING": [1, 0.5],
    "RATE_LIMITS": [{}, {"user": None}, {"client": "10 per second; 1000/hour", "tool": "5/2 minutes"}],
    "TASK_LIMITS": [{}, {"active_per_user": None, "created_per_client": "30/hour"}],
    "TOOL_TIMEOUT": [None, 0.5, 30],
    "TASK_TIMEOUT": [3600, 1.5],
    "MAX_RESULT_BYTES": [None, 1024],
    "AUDIT_LOG": [False],
    "AUDIT_RETENTION": [3600, 0.5],
    "AUDIT_FLUSH_INTERVAL": [2, 0.05],
    "AUDIT_SENSITIVE_KEYS": ["password|token", r"^(ssn|iban)$"],
    "AUDIT_MAX_PAYLOAD_BYTES": [None, 1024, 1_000_000],
    "SERVER_CARD": [False, {}, {"name": "com.example/library", "description": "Books", "icons": []}],
    "BROWSABLE_ENDPOINT": [False, "superuser"],
    "SKILL_DIRS": [[], ["skills"], (Path("skills"),)],
    "PUBLIC_URL": [None, "https://books.example.com", "http://127.0.0.1:8000/", "https://example.com/library"],
    "AUTHENTICATION_CLASSES": [[], ("rest_framework.authentication.TokenAuthentication",)],
    "TOKEN_SCOPES": [None, lambda user, auth: None, "django_mcp.auth.authenticators.token_scopes"],
    "SCOPE_GROUPS": [{"secret:read": ["vault-readers"]}, {"mcp": ("staff", "contractors")}],
}

CASES = [(key, value) for key, values in BAD.items() for value in values]


def test_every_setting_is_typed_and_checked() -> None:
    """SETTINGS declares each key once; the TypedDict and mcp_settings' annotations (for mypy) agree with it.

    Same keys, same types (EXCEPTION_HANDLER and TOKEN_SCOPES are also dotted paths in the dict), and every
    default has the declared type and passes its own check.
    """
    assert list(SETTINGS) == list(DEFAULTS)
    typed = get_type_hints(DjangoMCPSettings)
    attributes = get_type_hints(MCPSettings)
    assert list(typed) == list(SETTINGS)
    assert list(attributes) == list(SETTINGS)
    differ = {key for key in SETTINGS if typed[key] != attributes[key]}
    assert differ == {"EXCEPTION_HANDLER", "TOKEN_SCOPES"}, differ
    for key, default in DEFAULTS.items():  # one key at a time: pydantic wants typing_extensions' TypedDict
        TypeAdapter(typed[key]).validate_python(default, strict=True)
    assert {key: spec.problem(spec.default) for key, spec in SETTINGS.items() if spec.problem(spec.default)} == {}
    assert set(BAD) == set(DEFAULTS), "every key needs a refused value in BAD"


def test_new_ids_are_unique_per_key() -> None:
    """One id per key, except E007 (MAX_BODY_SIZE and MAX_BATCH_SIZE, as before)."""
    owners: dict[str, list[str]] = {}
    for key, spec in SETTINGS.items():
        owners.setdefault(spec.id, []).append(key)
    shared = {i: keys for i, keys in owners.items() if len(keys) > 1}
    assert shared == {"django_mcp.E007": ["MAX_BODY_SIZE", "MAX_BATCH_SIZE"]}


def test_defaults_pass() -> None:
    assert ids(DJANGO_MCP=dict(DEFAULTS)) == set()


@pytest.mark.parametrize(("key", "value"), [(k, v) for k, values in GOOD.items() for v in values])
def test_accepted_values(key: str, value: Any) -> None:
    assert SETTINGS[key].id not in ids(DJANGO_MCP={key: value})


@pytest.mark.parametrize(("key", "value"), CASES, ids=[f"{k}={v!r}" for k, v in CASES])
def test_wrong_type_or_value_is_an_error_with_a_hint(key: str, value: Any) -> None:
    """One test per setting id (E006-E008, E033, E101-E145): the id, the key, the expected type, the default."""
    found = [e for e in messages(DJANGO_MCP={key: value}) if e.id == SETTINGS[key].id]
    assert len(found) == 1, found
    (error,) = found
    assert error.level == 40  # ERROR
    assert f"DJANGO_MCP[{key!r}]" in error.msg
    assert SETTINGS[key].expected in error.hint and f"the default is {DEFAULTS[key]!r}" in error.hint


def test_e119_import_error_is_in_the_message() -> None:
    (error,) = messages(DJANGO_MCP={"EXCEPTION_HANDLER": "tests.no_such_module.handler"})
    assert error.id == "django_mcp.E119" and "cannot be imported" in error.msg and "no_such_module" in error.msg
    (error,) = messages(DJANGO_MCP={"EXCEPTION_HANDLER": "django_mcp.conf.DEFAULTS"})
    assert "not callable" in error.msg


def test_wrong_alias_type_skips_the_alias_checks() -> None:
    """An unhashable alias is one error (its type), not a crash in the W001 / E008 lookups."""
    assert ids(DJANGO_MCP={"CHANNEL_LAYER": ["default"]}) == {"django_mcp.E115"}
    assert ids(DJANGO_MCP={"EVENT_STORE_CACHE": ["default"]}) == {"django_mcp.E008"}
    assert ids(DJANGO_MCP={"ENDPOINT": 5}) == {"django_mcp.E105"}


def telemetry_errors(**mcp: Any) -> list[Any]:
    from django.conf import settings

    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, **mcp}):
        return list(check_telemetry())


def telemetry_ids(**mcp: Any) -> set[str]:
    return {e.id for e in telemetry_errors(**mcp)}


def test_e186_telemetry_without_opentelemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    from django_mcp import telemetry as telemetry_package
    from django_mcp.telemetry import middleware as telemetry

    assert telemetry_ids(TELEMETRY=True) == set()  # installed here (the dev extra)
    # As without the otel extra: importing opentelemetry fails.
    monkeypatch.setattr(telemetry, "_instruments", None)
    monkeypatch.delattr(telemetry_package, "otel", raising=False)
    monkeypatch.delitem(sys.modules, "django_mcp.telemetry.otel", raising=False)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    assert telemetry_ids(TELEMETRY=True) == {"django_mcp.E186"}
    assert telemetry_ids(TELEMETRY=False) == set()  # off: nothing to import
    (error,) = telemetry_errors(TELEMETRY=True)
    assert "django-mcp-toolkit[otel]" in error.hint


def test_e189_telemetry_without_its_middleware() -> None:
    assert telemetry_ids(TELEMETRY=True, MIDDLEWARE=["tests.support.middlewares.Recorder"]) == {"django_mcp.E189"}
    assert telemetry_ids(TELEMETRY=True, MIDDLEWARE=["tests.support.middlewares.TelemetrySubclass"]) == set()
    assert telemetry_ids(TELEMETRY=False, MIDDLEWARE=[]) == set()


def test_e140_unknown_registration_cache() -> None:
    (error,) = messages(DJANGO_MCP={"REGISTRATION_RATE_CACHE": "nope"})
    assert error.id == "django_mcp.E140" and "'nope'" in error.msg and "CACHES has 'default'" in error.hint


# -- W003: manage.py runserver must be daphne's (DEBUG on, ASGI_APPLICATION set) -------------------------


def runserver_ids(**overrides: Any) -> set[str]:
    with override_settings(**overrides):
        return {e.id for e in check_runserver()}


def test_w003_daphne_missing() -> None:
    from django.conf import settings

    without = [a for a in settings.INSTALLED_APPS if a != "daphne"]
    assert runserver_ids(DEBUG=True, INSTALLED_APPS=without) == {"django_mcp.W003"}
    with override_settings(DEBUG=True, INSTALLED_APPS=without):
        (warning,) = check_runserver()
    assert "'/mcp/' answers 404" in warning.msg and "Django's WSGI server" in warning.msg
    assert 'Put "daphne" first in INSTALLED_APPS' in warning.hint


def test_w003_daphne_after_staticfiles() -> None:
    """staticfiles' runserver (WSGI) wins over daphne's when it comes first."""
    from django.conf import settings

    without = [a for a in settings.INSTALLED_APPS if a != "daphne"]
    late = ["django.contrib.staticfiles", "daphne", *without]
    assert runserver_ids(DEBUG=True, INSTALLED_APPS=late) == {"django_mcp.W003"}
    early = ["daphne", "django.contrib.staticfiles", *without]
    assert runserver_ids(DEBUG=True, INSTALLED_APPS=early) == set()


def test_w003_quiet_outside_development_or_without_asgi() -> None:
    from django.conf import settings

    without = [a for a in settings.INSTALLED_APPS if a != "daphne"]
    assert runserver_ids(DEBUG=True) == set(), "the test project lists daphne first"
    assert runserver_ids(DEBUG=False, INSTALLED_APPS=without) == set(), "a deployment runs an ASGI server"
    assert runserver_ids(DEBUG=True, INSTALLED_APPS=without, ASGI_APPLICATION=None) == set(), "stdio only (W002)"
    # WSGI mode: the URLconf routes /mcp/ to django_mcp.transports.wsgi, which Django's own runserver serves.
    assert runserver_ids(DEBUG=True, INSTALLED_APPS=without, ROOT_URLCONF="tests.settings.urls_wsgi") == set()


# -- W004: every tool has a title and says whether it is read-only or destructive ---------------------------


def test_w004_tool_without_title_or_hints() -> None:
    server = MCPServer("w004")

    @server.tool
    def bare() -> None: ...

    @server.tool(title="Titled")
    def titled_only() -> None: ...

    @server.tool(annotations={"destructiveHint": True})
    def hinted_only() -> None: ...

    @server.tool(title="Reads", annotations={"readOnlyHint": True})
    def reads() -> None: ...

    @server.tool(annotations={"title": "Deletes", "readOnlyHint": False, "destructiveHint": True})
    def deletes() -> None: ...

    found = {w.msg.split("'")[1]: w for w in tool_warnings(server)}
    assert set(found) == {"bare", "titled_only", "hinted_only"}
    assert all(w.id == "django_mcp.W004" and w.level == 30 for w in found.values())
    assert "no title and no readOnlyHint or destructiveHint" in found["bare"].msg
    assert "no title" not in found["titled_only"].msg and "no title" in found["hinted_only"].msg
    assert '@site.tool(title="Bare", annotations={"readOnlyHint": True, "destructiveHint": False' in found["bare"].hint
    assert found["bare"].obj == "MCP server 'w004'"


def test_w040_to_w043_what_host_directories_ask() -> None:
    server = MCPServer("hosts")
    full = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}

    @server.tool(title="Fine", annotations=full)
    def fine() -> None:
        """Described and fully hinted."""

    @server.tool(title="Undescribed", annotations=full)
    def undescribed() -> None: ...

    @server.tool(name="x" * 65, title="Long", annotations=full)
    def too_long() -> None:
        """Named past 64 characters."""

    @server.tool(name="has.dot", title="Dotted", annotations=full)
    def dotted() -> None:
        """A dot in its name."""

    @server.tool(title="Half", annotations={"readOnlyHint": True})
    def half() -> None:
        """No destructiveHint nor openWorldHint."""

    @server.tool(title="Both ways", annotations={"readOnlyHint": True, "destructiveHint": True, "openWorldHint": False})
    def contradicts() -> None:
        """Reads only and destroys."""

    @server.tool(title="Manage", annotations={"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False})
    def manage(action: Literal["list", "delete"]) -> None:
        """One tool for reading and deleting."""

    @server.tool
    def bare() -> None: ...

    found = [(w.id, w.msg.split("'")[1]) for w in host_directory_warnings(server)]
    assert sorted(found) == sorted(
        [
            ("django_mcp.W040", "undescribed"),
            ("django_mcp.W040", "bare"),
            ("django_mcp.W041", "x" * 65),
            ("django_mcp.W041", "has.dot"),
            ("django_mcp.W042", "half"),  # bare gets W004 for its hints, not W042 too
            ("django_mcp.W043", "contradicts"),
            ("django_mcp.W043", "manage"),
        ]
    )
    (mixed,) = [w for w in host_directory_warnings(server) if w.msg.startswith("Tool 'manage'")]
    assert "'action' argument (delete, list)" in mixed.msg
    (half_warning,) = [w for w in host_directory_warnings(server) if w.id == "django_mcp.W042"]
    assert "destructiveHint, openWorldHint" in half_warning.msg


def test_the_example_project_passes_the_host_directory_checks() -> None:
    """``manage.py check --tag mcp_hosts --fail-level WARNING`` in example_project: no warning."""
    out = subprocess.run(
        [sys.executable, "manage.py", "check", "--tag", "mcp_hosts", "--fail-level", "WARNING"],
        cwd=ROOT / "example_project",
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "example_project.settings", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and "no issues" in out.stdout, out.stdout + out.stderr


def test_w004_runs_on_the_site_after_autodiscovery() -> None:
    """tests/testapp/mcp.py's bare tools are reported (autodiscovered); its described ``add`` is not."""
    names = {w.msg.split("'")[1] for w in check_tools()}
    assert {"echo", "square"} <= names and "add" not in names


def test_w004_servers_mounted_by_asgi_application() -> None:
    with override_settings(ASGI_APPLICATION="tests.settings.asgi_two_servers.application"):
        warnings = check_tools()
    other = [w for w in warnings if w.obj == "MCP server 'other-server'"]
    assert [w.msg.split("'")[1] for w in other] == ["other_tool"]


# -- manage.py check, end to end ---------------------------------------------------------------------------


def manage_check(tmp_path: Path, settings: str) -> subprocess.CompletedProcess[str]:
    env = server_env(tmp_path, settings=settings)
    return subprocess.run(
        [sys.executable, "-m", "django", "check"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_manage_check_reports_the_new_ids(tmp_path: Path) -> None:
    out = manage_check(tmp_path, "tests.settings.settings_misconfigured")
    assert out.returncode != 0, out.stdout + out.stderr
    for check_id in ("E002", "E106", "E109", "E117", "E119", "E035", "W003", "W004"):
        assert f"(django_mcp.{check_id})" in out.stderr, (check_id, out.stderr)
    assert "Did you mean 'SERVER_NAME'?" in out.stderr
    assert "HINT: PAGE_SIZE must be a positive int; the default is 100." in out.stderr


def test_manage_check_on_the_test_project_warns_only(tmp_path: Path) -> None:
    """The test project's bare tools are warnings (W004), never errors."""
    out = manage_check(tmp_path, "tests.settings")
    assert out.returncode == 0, out.stderr
    assert "(django_mcp.W004)" in out.stderr and "(django_mcp.E" not in out.stderr
