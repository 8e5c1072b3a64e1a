"""What a hub message becomes on a client's stream: one mapping for every transport.

Changes travel over the hub as small payloads (``kind``: ``list_changed``,
``resource_updated``, ``task``, or ``notify``, a session push that is already a
message). Each stream that carries notifications (a session's GET stream, the
2024-11-05 SSE stream, stdio, a ``subscriptions/listen`` stream) asks here what a
payload becomes for it, so the streams agree and a new kind is added once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ..protocol import jsonrpc
from .sessions import SessionState, store


def notification_for(
    payload: Mapping[str, Any],
    *,
    lists: Collection[str] | None = None,
    uris: Collection[str] = (),
    tasks: Collection[str] = (),
    meta: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The notification a hub broadcast becomes on a stream, or None when the stream did not ask for it.

    ``lists`` are the lists whose changes the stream carries (None: every list), ``uris`` the
    resources it is subscribed to, ``tasks`` the task ids it follows; ``meta`` is stamped on
    each notification (a listen stream's subscription id).
    """
    kind = payload.get("kind")
    if kind == "list_changed" and (lists is None or payload.get("list") in lists):
        params = {"_meta": meta} if meta is not None else None
        return jsonrpc.notification_message(f"notifications/{payload['list']}/list_changed", params)
    if kind == "resource_updated" and payload.get("uri") in uris:
        return jsonrpc.notification_message("notifications/resources/updated", _stamp({"uri": payload["uri"]}, meta))
    if kind == "task" and isinstance(payload.get("task"), dict) and payload["task"].get("taskId") in tasks:
        return jsonrpc.notification_message("notifications/tasks", _stamp({**payload["task"]}, meta))
    return None


def session_notification(session: SessionState, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a hub message becomes on a handshake-era session's stream, or None if nothing.

    The session's own pushes (``notify``: a task's status, any message sent to the session)
    go as they are; broadcasts by what the session subscribed to, as this worker last heard
    it (another worker may have taken the ``resources/subscribe``).
    """
    kind = payload.get("kind")
    if kind == "notify":
        message = payload.get("message")
        return message if isinstance(message, dict) else None
    uris = (store.peek(session.id) or session).subscriptions if kind == "resource_updated" else ()
    return notification_for(payload, uris=uris)


def _stamp(params: dict[str, Any], meta: dict[str, Any] | None) -> dict[str, Any]:
    if meta is not None:
        params["_meta"] = meta
    return params


__all__ = ["notification_for", "session_notification"]
