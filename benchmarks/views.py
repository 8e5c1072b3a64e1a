"""A Django async view doing the floor's JSON work, behind the default middleware."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from .payloads import fixed_reply


@csrf_exempt
async def jsonrpc_view(request: HttpRequest) -> HttpResponse:
    message = json.loads(request.body)
    return HttpResponse(json.dumps(fixed_reply(message)).encode(), content_type="application/json")


@csrf_exempt
def sync_jsonrpc_view(request: HttpRequest) -> HttpResponse:
    """The same as a sync view: what a WSGI worker runs at the least (``wsgi_cpu.py``'s floor)."""
    message = json.loads(request.body)
    return HttpResponse(json.dumps(fixed_reply(message)).encode(), content_type="application/json")
