"""The benchmark settings in WSGI mode: the endpoint is ``django_mcp.transports.wsgi.mcp_view`` in the URLconf."""

from benchmarks.settings import *  # noqa: F403

ROOT_URLCONF = "benchmarks.urls_wsgi"
WSGI_APPLICATION = "benchmarks.wsgi.application"

# The peers' projects in wsgi_peers.py run with CommonMiddleware only; so does ours there.
MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
# The admin (not benchmarked) wants the middleware of a full project.
SILENCED_SYSTEM_CHECKS = [*SILENCED_SYSTEM_CHECKS, "admin.E408", "admin.E409", "admin.E410"]  # noqa: F405

# Persistent connections, as docs/deployment.md advises for gunicorn's sync workers (each worker's thread lives as
# long as the process): the session read of a handshake-era request then runs on the worker's own thread and
# connection (django_mcp.state.sessions.prefetch) instead of hopping to a bookkeeping thread.
DATABASES["default"]["CONN_MAX_AGE"] = 60  # noqa: F405
