"""Verified OAuth access tokens, kept per worker so that a repeated request queries nothing.

Checking a bearer token costs a query (django-oauth-toolkit's lookup, the client's and the user's rows)
and a hop to a thread on every request. A worker keeps what the check decided, keyed by a SHA-256 of
the ``Authorization`` header and the endpoint URL the audience was checked against (never the token
itself), for at most ``TOKEN_CACHE_MAX_AGE`` seconds and never past the token's ``expires``; at most
``TOKEN_CACHE_SIZE`` entries, least recently used first out.

Only what the database can take back is cached, and only where every change is heard: a
django-oauth-toolkit token (not a JWT from ``JWT_ISSUER``, not a project authentication class's
token), in a long-lived ASGI worker whose hub hears the other processes over a shared channel layer
(Redis; not the in-memory layer, not WSGI mode). Anything that can change the answer is broadcast
once it commits (``TOKENS_CHANGED``) and drops the entries it concerns on every worker:

- an access token saved or deleted (revocation endpoint, the admin, ``mcp_client revoke``, refresh
  rotation, ``cleartokens``), a client's application saved or deleted, an ``MCPClient`` saved
  (``disabled``, ``service_user``) or the ``CLIENTS_CHANGED`` broadcast of ``disable_clients``;
- a user saved (``is_active``) or deleted.

A change made with ``QuerySet.update()`` on these tables sends no signal: call :func:`announce`.
A broadcast lost (the sender's layer down) is bounded by ``TOKEN_CACHE_MAX_AGE``; a worker whose
layer fails or loses its groups forgets every entry (``hub.outages``) and caches nothing until it
hears again. A check under way while a change is heard is not cached (``generation``).
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.core.signals import setting_changed
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from ..conf import mcp_settings
from ..models import MCPClient
from ..state.hub import hub, long_lived
from ..state.lru import LRU
from .clients import CLIENTS_CHANGED

#: The broadcast kind of a change that may take back a verified token:
#: ``{"kind": TOKENS_CHANGED, "tokens": [pk...], "users": [pk...], "clients": [client_id...]}``.
TOKENS_CHANGED = "tokens_changed"
#: Ids per broadcast message (channels_redis drops messages past a channel's capacity).
_BATCH = 500


@dataclass(eq=False)
class Entry:
    """A verified token: what the check decided, and until when (``time.monotonic()``) it stands."""

    seen: float
    deadline: float
    info: Any  # bearer.AuthInfo
    token_id: str
    user_id: str
    client_id: str


class TokenCache:
    def __init__(self) -> None:
        self._entries: LRU[Entry] = LRU(
            lambda: int(mcp_settings.TOKEN_CACHE_SIZE), lambda: float(mcp_settings.TOKEN_CACHE_MAX_AGE)
        )
        #: Bumped by every change heard: a check that started before it is not cached.
        self.generation = 0
        self._outages = -1
        self._lock = threading.RLock()  # hooks run on any thread (run_hooks from the admin's)
        hub.on_broadcast(self._on_broadcast)

    @staticmethod
    def enabled() -> bool:
        return float(mcp_settings.TOKEN_CACHE_MAX_AGE) > 0 and long_lived.get()

    def usable(self) -> bool:
        """Whether entries may be read and added now: this worker hears every change (``hub.hearing``)."""
        if not hub.hearing():
            return False
        if hub.outages != self._outages:  # an outage since the last look: a change may have gone unheard
            self.clear()
            self._outages = hub.outages
        return True

    @staticmethod
    def key(authorization: str, endpoint: str) -> str:
        return hashlib.sha256(f"{endpoint}\n{authorization}".encode("utf-8", "surrogateescape")).hexdigest()

    def get(self, key: str) -> Any:
        """The cached ``AuthInfo`` for ``key``, or None (absent, past its deadline)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if time.monotonic() >= entry.deadline:
            self._entries.pop(key)
            return None
        return entry.info

    def put(self, key: str, info: Any, generation: int) -> bool:
        """Keep ``info`` (an OAuth token DOT verified) unless a change was heard since ``generation``."""
        token = info.token
        expires = getattr(token, "expires", None)
        if info.authenticator or isinstance(token, dict) or getattr(token, "pk", None) is None or expires is None:
            return False  # a project token or a JWT: not taken back by anything this cache hears
        now = time.monotonic()
        left = expires.timestamp() - time.time()
        deadline = now + min(float(mcp_settings.TOKEN_CACHE_MAX_AGE), left)
        if deadline <= now:
            return False
        entry = Entry(now, deadline, info, str(token.pk), str(info.user_id), info.client_id)
        with self._lock:
            if generation != self.generation or not self.usable():
                return False
            self._entries[key] = entry
        return True

    def drop(self, tokens: set[str], users: set[str], clients: set[str]) -> int:
        """Forget the entries of these tokens, users and clients (every entry is looked at: changes are rare)."""
        with self._lock:
            self.generation += 1
            gone = [
                key
                for key in self._entries.keys()
                if (entry := self._entries.peek(key)) is not None
                and (entry.token_id in tokens or entry.user_id in users or entry.client_id in clients)
            ]
            for key in gone:
                self._entries.pop(key)
        return len(gone)

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            for key in self._entries.keys():
                self._entries.pop(key)

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list[str]:
        return self._entries.keys()

    def _on_broadcast(self, payload: dict[str, Any]) -> None:
        kind = payload.get("kind")
        if kind == TOKENS_CHANGED:
            self.drop(_ids(payload.get("tokens")), _ids(payload.get("users")), _ids(payload.get("clients")))
        elif kind == CLIENTS_CHANGED:
            self.drop(set(), set(), _ids(payload.get("clients")))


def _ids(values: Any) -> set[str]:
    return {str(v) for v in values or () if isinstance(v, (str, int))}


cache = TokenCache()


def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("DJANGO_MCP", "OAUTH2_PROVIDER"):
        cache.clear()


setting_changed.connect(_settings_changed)


# -- telling every worker, once the change commits ------------------------------------------------------
class _Pending(threading.local):
    def __init__(self) -> None:
        self.tokens: set[str] = set()
        self.users: set[str] = set()
        self.clients: set[str] = set()


_pending = _Pending()


def announce(*, tokens: Any = (), users: Any = (), clients: Any = ()) -> None:
    """Tell every worker (this one at once) that these tokens, users or clients changed, once it commits.

    The signal receivers below call it; call it yourself after a ``QuerySet.update()`` of
    ``is_active``, a token's scope or expiry, or a client's record. Changes of one transaction go out
    in one message; a layer outage is logged, not raised (entries then last ``TOKEN_CACHE_MAX_AGE`` at most).
    """
    _pending.tokens.update(str(t) for t in tokens)
    _pending.users.update(str(u) for u in users)
    _pending.clients.update(str(c) for c in clients if c)
    transaction.on_commit(_flush)


def _flush() -> None:
    tokens, users, clients = sorted(_pending.tokens), sorted(_pending.users), sorted(_pending.clients)
    _pending.tokens, _pending.users, _pending.clients = set(), set(), set()
    if not (tokens or users or clients):
        return  # an earlier callback of the same transaction sent them
    for start in range(0, max(len(tokens), len(users), len(clients)), _BATCH):
        payload = {
            "kind": TOKENS_CHANGED,
            "tokens": tokens[start : start + _BATCH],
            "users": users[start : start + _BATCH],
            "clients": clients[start : start + _BATCH],
        }
        hub.run_hooks(payload)  # this process at once, whether or not its hub listens
        async_to_sync(hub.broadcast_or_log)(payload)


# -- the signals (connected in AppConfig.ready) ---------------------------------------------------------
def on_token_saved(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    if not created:  # a new token has no entry anywhere
        announce(tokens=[instance.pk])


def on_token_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    announce(tokens=[instance.pk])


def on_user_saved(sender: Any, instance: Any, created: bool = False, update_fields: Any = None, **kwargs: Any) -> None:
    if created or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return  # a sign-in changes nothing a token grants
    announce(users=[instance.pk])


def on_user_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    announce(users=[instance.pk])


def on_client_changed(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    if not created:
        announce(clients=[instance.client_id])


def connect_signals() -> None:
    post_save.connect(on_user_saved, sender=get_user_model(), dispatch_uid="django_mcp.token_cache.user_saved")
    post_delete.connect(on_user_deleted, sender=get_user_model(), dispatch_uid="django_mcp.token_cache.user_deleted")
    post_save.connect(on_client_changed, sender=MCPClient, dispatch_uid="django_mcp.token_cache.client_saved")
    post_delete.connect(on_client_changed, sender=MCPClient, dispatch_uid="django_mcp.token_cache.client_deleted")
    from django.apps import apps  # reason: DOT's models exist only when it is installed

    if not apps.is_installed("oauth2_provider"):
        return
    # reason: DOT's models need it in INSTALLED_APPS
    from oauth2_provider.models import get_access_token_model, get_application_model

    token, application = get_access_token_model(), get_application_model()
    post_save.connect(on_token_saved, sender=token, dispatch_uid="django_mcp.token_cache.token_saved")
    post_delete.connect(on_token_deleted, sender=token, dispatch_uid="django_mcp.token_cache.token_deleted")
    post_save.connect(on_client_changed, sender=application, dispatch_uid="django_mcp.token_cache.app_saved")
    post_delete.connect(on_client_changed, sender=application, dispatch_uid="django_mcp.token_cache.app_deleted")


__all__ = ["TOKENS_CHANGED", "TokenCache", "announce", "cache", "connect_signals"]
