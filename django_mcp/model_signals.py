"""Model signals -> resource notifications, sent once the write is committed.

``post_save``, ``post_delete`` and ``m2m_changed`` of every model a
``ModelResource`` exposes schedule, with ``transaction.on_commit``, a
``resource_updated`` broadcast for each affected object URI (and a
``list_changed`` for creations and deletions). A rolled-back write sends
nothing. Broadcasts go through the channel layer, so subscribers on every worker
receive them, whichever process (a tool, the admin, a management command)
made the change.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from django.db import models, transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

from .state.hub import hub

if TYPE_CHECKING:
    from .model_resources import ModelResource

#: Every registered ModelResource, by model (several servers may expose one model).
_watchers: dict[type[models.Model], list[ModelResource]] = defaultdict(list)


def watch(resource: ModelResource) -> None:
    """Connect the signals of ``resource.model`` (idempotent per model)."""
    model = resource.model
    if resource not in _watchers[model]:
        _watchers[model].append(resource)
    uid = f"django_mcp:{model._meta.label_lower}"
    post_save.connect(_saved, sender=model, dispatch_uid=uid, weak=False)
    post_delete.connect(_deleted, sender=model, dispatch_uid=uid, weak=False)
    opts = model._meta
    throughs: list[Any] = [f.remote_field.through for f in opts.many_to_many]
    throughs += [rel.through for rel in opts.related_objects if rel.many_to_many]  # type: ignore[attr-defined]
    for through in throughs:
        m2m_changed.connect(_m2m, sender=through, dispatch_uid=f"django_mcp:{through._meta.label_lower}", weak=False)


def unwatch(resource: ModelResource) -> None:
    """Forget ``resource`` (signals stay connected and become no-ops for it)."""
    watchers = _watchers.get(resource.model, [])
    if resource in watchers:
        watchers.remove(resource)


def uris_for(obj: models.Model) -> list[str]:
    return sorted({r.uri_for(obj) for r in _watchers.get(type(obj), ())})


def send_sync(payloads: Iterable[dict[str, Any]]) -> None:
    """Broadcast from sync code (a tool's thread, the admin, a management command).

    Stored first, so a GET stream resumed later replays it; a layer outage is logged and
    never fails the save that triggered it. Publishing from outside a worker's loop joins
    no group (``Hub.publish``).
    """
    for payload in payloads:
        async_to_sync(hub.broadcast_or_log)(payload)


def _schedule(payloads: list[dict[str, Any]], using: str | None) -> None:
    if payloads:
        transaction.on_commit(lambda: send_sync(payloads), using=using)


def _updated(uris: Iterable[str], listed: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"kind": "resource_updated", "uri": u} for u in uris]
    if listed and out:
        out.append({"kind": "list_changed", "list": "resources"})
    return out


def _saved(sender: Any, instance: models.Model, created: bool = False, raw: bool = False, **kw: Any) -> None:
    if not raw:
        _schedule(_updated(uris_for(instance), created), kw.get("using"))


def _deleted(sender: Any, instance: models.Model, **kw: Any) -> None:
    _schedule(_updated(uris_for(instance), True), kw.get("using"))


def _m2m(sender: Any, instance: models.Model, action: str, model: Any, pk_set: Any, **kw: Any) -> None:
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    uris = set(uris_for(instance))
    watchers = _watchers.get(model, ())
    if pk_set and watchers:
        for obj in model._default_manager.using(kw.get("using")).filter(pk__in=pk_set):
            uris.update(r.uri_for(obj) for r in watchers)
    _schedule(_updated(sorted(uris), False), kw.get("using"))


__all__ = ["send_sync", "unwatch", "uris_for", "watch"]
