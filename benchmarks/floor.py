"""The floor: a bare Channels ``AsyncHttpConsumer`` answering a fixed JSON-RPC result.

``FloorConsumer`` reads the body straight from ``receive`` as our MCP consumer does
(no per-request channel-layer channel, no ``close_old_connections`` thread hop), so
it is the least a Channels consumer can do for the same JSON work. ``StockConsumer``
is the same handler on the stock ``AsyncHttpConsumer`` dispatch, for reference.
Run: ``daphne benchmarks.floor:application`` or ``uvicorn --lifespan off benchmarks.floor:application``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.settings")
django.setup()

from channels.generic.http import AsyncHttpConsumer  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from benchmarks.payloads import fixed_reply  # noqa: E402

JSON_HEADERS = [(b"content-type", b"application/json")]


class StockConsumer(AsyncHttpConsumer):  # type: ignore[misc]
    async def handle(self, body: bytes) -> None:
        reply = json.dumps(fixed_reply(json.loads(body))).encode()
        # With its length, as ours and Starlette send it (not chunked: one write, not two).
        await self.send_response(200, reply, headers=[*JSON_HEADERS, (b"content-length", b"%d" % len(reply))])


class FloorConsumer(StockConsumer):
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scope = scope
        self.base_send = send
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        await self.handle(b"".join(chunks))


application = ProtocolTypeRouter(
    {"http": URLRouter([path("mcp/", FloorConsumer.as_asgi()), path("stock/", StockConsumer.as_asgi())])}
)
