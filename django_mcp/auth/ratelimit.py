"""Anonymous client registration, limited per client address on the limits' counter.

``REGISTRATION_RATE_LIMIT`` is a rate string of the limits' syntax (``"20/hour"``,
``docs/operations.md``), counted by ``limits.counting`` like every other rate: on Django's cache
(``REGISTRATION_RATE_CACHE``), so the limit holds across workers when that cache is shared
(Redis, a database cache). Behind a proxy, ``REMOTE_ADDR`` must be the client's address (daphne
and uvicorn ``--proxy-headers``), or every client shares the proxy's budget.
"""

from __future__ import annotations

from ..conf import mcp_settings
from ..limits.counting import counters
from ..limits.rates import Rate, parse


def registration_rates() -> tuple[Rate, ...]:
    """The rates of ``REGISTRATION_RATE_LIMIT``; ``[count, seconds]`` (the 0.1.0 form) is one rate."""
    limit = mcp_settings.REGISTRATION_RATE_LIMIT
    if not limit:
        return ()
    if isinstance(limit, str):
        return parse(limit)
    return (Rate(int(limit[0]), int(limit[1])),)


def registration_retry_after(address: str) -> int | None:
    """Count one anonymous registration from ``address``; seconds to wait when over the limit, else None."""
    for rate in registration_rates():
        wait = counters.take_sync(mcp_settings.REGISTRATION_RATE_CACHE, f"dcr:{address}", rate)
        if wait is not None:
            return wait
    return None


__all__ = ["registration_rates", "registration_retry_after"]
