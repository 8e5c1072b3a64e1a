"""A fixed-window counter per client address on Django's cache, for anonymous registration.

Counting in the cache (not in the process) is what makes the limit hold across
workers: with a shared cache (Redis, a database cache) every worker sees the same
count. Behind a proxy, ``REMOTE_ADDR`` must be the client's address (daphne and
uvicorn ``--proxy-headers``), or every client shares the proxy's budget.
"""

from __future__ import annotations

import time

from django.core.cache import caches

from ..conf import mcp_settings


def registration_retry_after(address: str) -> int | None:
    """Count one anonymous registration from ``address``; seconds to wait when over the limit, else None."""
    limit = mcp_settings.REGISTRATION_RATE_LIMIT
    if not limit:
        return None
    count, window = int(limit[0]), int(limit[1])
    now = time.time()
    bucket = int(now // window)
    key = f"django_mcp:dcr-rate:{address}:{bucket}"
    cache = caches[mcp_settings.REGISTRATION_RATE_CACHE]
    cache.add(key, 0, timeout=window + 1)
    try:
        seen = cache.incr(key)
    except ValueError:  # evicted between add and incr
        cache.set(key, 1, timeout=window + 1)
        seen = 1
    if seen <= count:
        return None
    return max(1, int((bucket + 1) * window - now + 0.999))


__all__ = ["registration_retry_after"]
