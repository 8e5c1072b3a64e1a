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
