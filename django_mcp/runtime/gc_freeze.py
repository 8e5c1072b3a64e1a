"""After startup, what is loaded leaves the cyclic garbage collector's rounds (``gc.freeze()``).

Why: a full collection walks every object the collector tracks while holding the GIL, and a
Django process holds 140,000-170,000 of them once started (modules, classes, the URLconf, the
registry), almost all alive until it exits. Under load (``benchmarks/run.py``, a sync tool at
16 connections on uvicorn) full collections took 50-115 ms each; the event loop stopped for
each, every request in flight waited, and the p99 was 60-70 ms at a p50 of 4 ms. Frozen
objects are alive and reference-counted as ever and are freed when nothing refers to them any
more; only reference cycles among them are never collected, so startup's own garbage is
collected first. A full collection then walks only what was made since startup.

``GC_FREEZE = False`` leaves the collector alone (a project managing it itself).
"""

from __future__ import annotations

import gc

from ..conf import mcp_settings

#: Whether this process has frozen its startup heap (or was told not to): checked per request in WSGI mode.
done = False


def freeze_startup_heap() -> None:
    """Collect startup's garbage, then freeze what remains; once per process, at the end of startup.

    Called when the endpoint is mounted (``mcp_urlpatterns``, ``get_asgi_application``) and at
    the first request of a Django view endpoint (WSGI mode), whose URLconf loads lazily. In a
    process that ``fork()``s workers after loading (gunicorn ``--preload``), freezing before the
    fork also keeps the collector from writing to the pages the workers share.
    """
    global done
    if done:
        return
    done = True
    if mcp_settings.GC_FREEZE and gc.isenabled():
        gc.collect()
        gc.freeze()


__all__ = ["freeze_startup_heap"]
