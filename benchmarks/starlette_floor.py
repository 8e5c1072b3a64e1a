"""The Python ASGI limit: a bare Starlette endpoint doing the same JSON work as a ``tools/call``.

``/mcp/`` is an ``async def`` endpoint: it reads the body, parses the JSON-RPC request and answers
the same result our ``echo`` gives (``payloads.fixed_reply``). ``/mcp-sync/`` does the same work in
Starlette's thread pool (``run_in_threadpool``, what it does for a plain ``def`` endpoint), as a sync
tool runs in ours; the body is read first, on the loop, since reading it is async.
Run: ``uvicorn --lifespan off benchmarks.starlette_floor:app``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.payloads import fixed_reply


async def endpoint(request: Request) -> Response:
    reply = json.dumps(fixed_reply(json.loads(await request.body()))).encode()
    return Response(reply, media_type="application/json")


async def sync_endpoint(request: Request) -> Response:
    body = await request.body()

    def work() -> bytes:
        return json.dumps(fixed_reply(json.loads(body))).encode()

    return Response(await run_in_threadpool(work), media_type="application/json")


app = Starlette(
    routes=[Route("/mcp/", endpoint, methods=["POST"]), Route("/mcp-sync/", sync_endpoint, methods=["POST"])]
)
