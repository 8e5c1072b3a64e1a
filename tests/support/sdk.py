"""The official SDK client with callbacks that record what the server sent (logs, progress, elicitations) and
answer its requests (elicitation, sampling, roots)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp import Client


class Recorder:
    """Callbacks that record what the server sent and answer its requests."""

    def __init__(self) -> None:
        self.logs: list[tuple[str, Any]] = []
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.elicited: list[str] = []

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append((params.level, params.data))

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))

    async def elicit(self, ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicited.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def sample(self, ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="42"), model="m")

    async def roots(self, ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///srv/project")])

    def client(self, url: str, mode: str, **extra: Any) -> Client:
        kwargs: dict[str, Any] = dict(
            mode=mode,
            logging_callback=self.on_log,
            elicitation_callback=self.elicit,
            sampling_callback=self.sample,
            list_roots_callback=self.roots,
            read_timeout_seconds=30,
        )
        if mode != "legacy":
            kwargs["cache"] = None
        kwargs.update(extra)
        return Client(url, **kwargs)
