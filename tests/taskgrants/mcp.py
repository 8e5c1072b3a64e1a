"""A task tool behind a scope, for the revocation tests (``tests.settings.settings_tasks_oauth`` installs this app)."""

from __future__ import annotations

import asyncio

from django_mcp import site


def _append(path: str, line: str) -> None:
    with open(path, "a") as f:
        f.write(line + "\n")


@site.tool(scopes=["notes:write"], task="optional", title="Write a note", annotations={"readOnlyHint": False})
async def write_note(marker: str, seconds: float = 0) -> str:
    """Needs ``notes:write``: logs its start to ``marker``.runs, waits ``seconds``, then writes ``marker``."""
    _append(marker + ".runs", "run")
    await asyncio.sleep(seconds)
    _append(marker, "written")
    return "written"
