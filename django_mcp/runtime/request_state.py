"""Signed ``requestState`` for 2026-07-28 multi-round-trip requests.

The state carries the answers a client already gave, bound to the request
(method, target name and a digest of its arguments) and to the caller, and is
signed with Django's signing (HMAC with ``SECRET_KEY``) so a client cannot forge
or replay it for another request; tampering is -32602.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.core import signing

from ..conf import mcp_settings
from ..protocol.jsonrpc import INVALID_PARAMS, ProtocolError

_SALT = "django_mcp.request_state"


def _binding(method: str, params: dict[str, Any], user_key: str) -> str:
    target = {k: v for k, v in params.items() if k not in ("_meta", "inputResponses", "requestState")}
    raw = json.dumps([method, target, user_key], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def sign_state(method: str, params: dict[str, Any], user_key: str, answers: dict[str, Any]) -> str:
    return signing.dumps({"b": _binding(method, params, user_key), "a": answers}, salt=_SALT, compress=True)


def load_state(state: str, method: str, params: dict[str, Any], user_key: str) -> dict[str, Any]:
    """The answers carried by ``state``; -32602 when it is forged, expired or for another request."""
    try:
        data = signing.loads(state, salt=_SALT, max_age=mcp_settings.REQUEST_STATE_MAX_AGE)
    except signing.BadSignature:
        raise ProtocolError(INVALID_PARAMS, "Invalid requestState: signature check failed") from None
    if not isinstance(data, dict) or data.get("b") != _binding(method, params, user_key):
        raise ProtocolError(INVALID_PARAMS, "Invalid requestState: it belongs to another request")
    answers = data.get("a")
    return answers if isinstance(answers, dict) else {}
