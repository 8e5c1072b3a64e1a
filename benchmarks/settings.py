"""Settings for the benchmark servers: the test project's, tuned for measuring.

The test apps' tools, resources and prompts are swapped for the two benchmark tools so that
``tools/list`` returns the same list as the SDK comparison server. The database is
SQLite in a temporary file (``MCP_SQLITE``, set by ``run.py``), or with ``MCP_BENCH_DB=postgres`` and
``MCP_TEST_DB=postgres`` PostgreSQL as ``tests.settings`` configures it (``MCP_PG_POOL``: the guide's pool);
the channel layer is the in-memory one, whatever the environment says.
"""

import os
import tempfile

from tests.settings import *  # noqa: F403
from tests.settings import DJANGO_MCP, INSTALLED_APPS

DEBUG = False
TEST_APPS = ("tests.testapp", "tests.drfapp", "tests.promptapp", "tests.modelapp")
INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in TEST_APPS] + ["benchmarks.benchapp"]
ROOT_URLCONF = "benchmarks.urls"
# The middleware of a new `startproject`; it only wraps Django views, never the MCP consumer.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
if os.environ.get("MCP_BENCH_DB") != "postgres":  # else tests.settings' PostgreSQL (MCP_TEST_DB=postgres)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("MCP_SQLITE", os.path.join(tempfile.gettempdir(), "django-mcp-bench.sqlite3")),
        }
    }
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 1000}}}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
DJANGO_MCP = {**DJANGO_MCP, "VALIDATE_RESULTS": False, "SERVER_NAME": "django-mcp-bench"}

# benchmarks/operations.py: which operations middleware runs ("none", "default", or names of the built-in ones).
_OPS = os.environ.get("MCP_BENCH_MIDDLEWARE")
if _OPS:
    from django_mcp.conf import DEFAULT_MIDDLEWARE

    if _OPS == "none":
        DJANGO_MCP["MIDDLEWARE"] = []
    elif _OPS == "passthrough":  # the chain with two middleware that do nothing
        DJANGO_MCP["MIDDLEWARE"] = ["benchmarks.middleware.Passthrough"] * 2
    elif _OPS != "default":
        _wanted = _OPS.split(",")
        DJANGO_MCP["MIDDLEWARE"] = [p for p in DEFAULT_MIDDLEWARE if any(f".{w}." in p for w in _wanted)]

# GC_FREEZE (on by default): MCP_BENCH_GC_FREEZE=0 measures without it.
DJANGO_MCP["GC_FREEZE"] = os.environ.get("MCP_BENCH_GC_FREEZE", "1") == "1"

# MCP_BENCH_GC_LOG=<prefix>: each server process appends its full collections (and any collection over 5 ms) to
# <prefix>.<pid>, with how long each stopped the process: how the sync tools' p99 tail was traced (docs/performance.md).
if os.environ.get("MCP_BENCH_GC_LOG"):
    import gc
    import sys
    import time

    _gc_log = open(f"{os.environ['MCP_BENCH_GC_LOG']}.{os.getpid()}", "a", buffering=1)
    _gc_log.write(" ".join(sys.argv) + "\n")
    _gc_started = [0.0]

    def _gc_callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            _gc_started[0] = time.perf_counter()
            return
        ms = (time.perf_counter() - _gc_started[0]) * 1e3
        if ms > 5 or info["generation"] == 2:
            _gc_log.write(f"generation {info['generation']}: {ms:.1f} ms, {info['collected']} collected\n")

    gc.callbacks.append(_gc_callback)
