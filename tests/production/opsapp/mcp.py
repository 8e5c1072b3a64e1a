"""A tool only the operations tests register (their settings add this app): a slow *sync* tool."""

from __future__ import annotations

import time

from django_mcp import site


@site.tool
def sync_sleep(seconds: float = 5) -> str:
    """Blocks its thread, as a slow ORM query or HTTP call would; cancelling the request cannot stop it."""
    time.sleep(seconds)
    return "sync woke up"
