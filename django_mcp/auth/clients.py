"""OAuth clients as MCP sees them: disabling a client and revoking what it holds.

django-oauth-toolkit's Application records how and when a client registered
(``registration_source``: manual, DCR or CIMD). :class:`~django_mcp.models.MCPClient`
adds the administrator's switch. A disabled client is refused everywhere a
client is looked at: the bearer check of the MCP endpoint and DOT's token and
authorization endpoints (through :func:`is_client_disabled`); disabling also
revokes every token and grant it holds, so its very next request gets 401.
Disabling and enabling are broadcast (``CLIENTS_CHANGED``) so that what holds no
token check per request learns it at once on every worker: the kill-switch middleware
(stdio, task runs) and the client's ``subscriptions/listen`` streams, which end.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from django.apps import apps
from django.db import transaction
from django.db.models import Count, Max, OuterRef, QuerySet, Subquery
from django.db.models.signals import post_delete, post_migrate, post_save
from django.db.utils import DatabaseError
from django.utils import timezone

from ..models import MCPClient, MCPSession
from ..state.hub import hub
from ..state.sessions import end_sessions_sync
from ..state.writelock import write_transaction

#: The broadcast kind of a change of clients: ``{"kind": CLIENTS_CHANGED, "clients": [...], "disabled": bool}``.
CLIENTS_CHANGED = "clients_changed"
#: Client ids per broadcast message (channels_redis drops messages past a channel's capacity).
_BATCH = 500


def oauth_installed() -> bool:
    return apps.is_installed("oauth2_provider")


def is_client_disabled(application: Any) -> bool:
    """Whether an administrator disabled ``application`` (a DOT Application, or None)."""
    client_id = getattr(application, "client_id", None)
    if not client_id:
        return False
    return bool(MCPClient.objects.filter(client_id=client_id, disabled=True).exists())


def allowed_scopes(application: Any) -> frozenset[str] | None:
    """The scopes staff allowed ``application`` to request; None when its record sets none."""
    client_id = getattr(application, "client_id", None)
    if not client_id:
        return None
    text = MCPClient.objects.filter(client_id=client_id).values_list("allowed_scopes", flat=True).first()
    return frozenset(text.split()) if text and text.split() else None


def service_user(application: Any) -> Any:
    """The account a client credentials token of ``application`` acts as, or None.

    The MCP client record's ``service_user``; failing that, the application's own
    ``user`` only when staff created the application by hand (never the account that
    happened to be signed in during a dynamic registration).
    """
    client_id = getattr(application, "client_id", None)
    if not client_id:
        return None
    record = MCPClient.objects.filter(client_id=client_id).select_related("service_user").first()
    if record is not None and record.service_user is not None:
        return record.service_user
    if getattr(application, "registration_source", "manual") == "manual":
        return getattr(application, "user", None)
    return None


def applications(client_ids: Iterable[str]) -> Any:
    from oauth2_provider.models import get_application_model  # reason: DOT's models need it in INSTALLED_APPS

    return get_application_model().objects.filter(client_id__in=list(client_ids))


def revoke_tokens(client_ids: Iterable[str]) -> int:
    """Revoke every access token, refresh token, grant and ID token of these clients; the access-token count.

    Their MCP sessions end too, so a client cannot go on with a session it opened.
    """
    ids = list(client_ids)
    count = _revoke(application__in=applications(ids))
    sessions = MCPSession.objects.filter(oauth_client__in=ids, ended__isnull=True)
    end_sessions_sync(list(sessions.values_list("id", flat=True)))
    return count


def revoke_user_tokens(user_ids: Iterable[Any], client_ids: Iterable[str] | None = None) -> int:
    """Revoke what these users hold (through ``client_ids`` only, when given); the access-token count.

    As :func:`revoke_tokens` does for a client: their tokens are deleted, so their next request gets 401
    and a task they queued fails when a worker takes it (``auth.grants``); their sessions end.
    """
    users = list(user_ids)
    scope: dict[str, Any] = {"user__in": users}
    sessions = MCPSession.objects.filter(user__in=users, ended__isnull=True)
    if client_ids is not None:
        clients = list(client_ids)
        scope["application__in"] = applications(clients)
        sessions = sessions.filter(oauth_client__in=clients)
    count = _revoke(**scope)
    end_sessions_sync(list(sessions.values_list("id", flat=True)))
    return count


def _revoke(**lookup: Any) -> int:
    """Revoke the refresh tokens, access tokens, grants and ID tokens matching ``lookup``; the access-token count."""
    # reason: DOT's models need it in INSTALLED_APPS
    from oauth2_provider.models import (
        get_access_token_model,
        get_grant_model,
        get_id_token_model,
        get_refresh_token_model,
    )

    with write_transaction():
        get_refresh_token_model().objects.filter(revoked__isnull=True, **lookup).update(revoked=timezone.now())
        count, _ = get_access_token_model().objects.filter(**lookup).delete()
        get_grant_model().objects.filter(**lookup).delete()
        get_id_token_model().objects.filter(**lookup).delete()
    return int(count)


def registration_scope() -> str:
    """DOT's scope of a registration access token (RFC 7592), which no MCP request uses."""
    from oauth2_provider.settings import oauth2_settings  # reason: DOT loads only once OAuth is on

    return str(getattr(oauth2_settings, "DCR_REGISTRATION_SCOPE", "") or "\x00")


def with_activity(clients: QuerySet[MCPClient]) -> QuerySet[MCPClient]:
    """``clients`` annotated with their application's name, registration source and date, live access tokens,
    latest token and latest session activity, in one query (the admin's list and ``mcp_client list``)."""
    # reason: DOT's models need it in INSTALLED_APPS
    from oauth2_provider.models import get_access_token_model, get_application_model

    app = get_application_model().objects.filter(client_id=OuterRef("client_id"))
    tokens = get_access_token_model().objects.filter(application__client_id=OuterRef("client_id")).order_by()
    # A dynamically registered client's registration access token (RFC 7592, DOT's DCR_REGISTRATION_SCOPE,
    # expiring in 9999) manages its registration: it is no access token to the MCP endpoint.
    access = tokens.exclude(scope=registration_scope())
    live = access.filter(expires__gt=timezone.now()).values("application").annotate(n=Count("pk")).values("n")
    latest = tokens.values("application").annotate(at=Max("created")).values("at")
    seen = (
        MCPSession.objects.filter(oauth_client=OuterRef("client_id"))
        .order_by()
        .values("oauth_client")
        .annotate(at=Max("last_seen"))
        .values("at")
    )
    annotated: QuerySet[MCPClient] = clients.annotate(
        _name=Subquery(app.values("name")[:1]),
        _source=Subquery(app.values("registration_source")[:1]),
        _registered=Subquery(app.values("created")[:1]),
        _tokens=Subquery(live[:1]),
        _last_token=Subquery(latest[:1]),
        _last_session=Subquery(seen[:1]),
    )
    return annotated


def last_use(client: Any) -> Any:
    """The latest token issued to a client of :func:`with_activity`, or its latest session activity when later."""
    known = [m for m in (getattr(client, "_last_token", None), getattr(client, "_last_session", None)) if m]
    return max(known) if known else None


def disable_clients(client_ids: Iterable[str]) -> int:
    """Disable these clients and revoke all they hold; the number newly disabled."""
    ids = list(client_ids)
    for client_id in ids:
        MCPClient.objects.get_or_create(client_id=client_id)
    n = MCPClient.objects.filter(client_id__in=ids, disabled=False).update(disabled=True, disabled_at=timezone.now())
    announce_clients(ids, disabled=True)  # before the revocation: its session ends would tell nothing of the client
    revoke_tokens(ids)
    return int(n)


def enable_clients(client_ids: Iterable[str]) -> int:
    ids = list(client_ids)
    n = MCPClient.objects.filter(client_id__in=ids, disabled=True).update(disabled=False, disabled_at=None)
    announce_clients(ids, disabled=False)
    return int(n)


def announce_clients(client_ids: list[str], *, disabled: bool) -> None:
    """Tell every worker these clients were disabled (or enabled again), once the change commits.

    For sync code (the admin, management commands); a layer outage is logged, not raised. Workers
    that miss it catch up when their kill switches revalidate (``SWITCHES_REVALIDATE_INTERVAL``).
    """

    def send() -> None:
        for start in range(0, len(client_ids), _BATCH):
            payload = {"kind": CLIENTS_CHANGED, "clients": client_ids[start : start + _BATCH], "disabled": disabled}
            hub.run_hooks(payload)  # this process at once, whether or not its hub listens
            async_to_sync(hub.broadcast_or_log)(payload)

    transaction.on_commit(send)


# -- keeping MCPClient rows beside DOT applications (connected in AppConfig.ready) ------------------
def on_application_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    if instance.client_id:
        MCPClient.objects.get_or_create(client_id=instance.client_id)


def on_application_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    MCPClient.objects.filter(client_id=instance.client_id).delete()


def sync_clients(**kwargs: Any) -> None:
    """Rows for applications that existed before django_mcp (run after ``migrate``)."""
    if not oauth_installed():
        return

    try:
        known = set(MCPClient.objects.values_list("client_id", flat=True))
        missing = [cid for cid in applications_all_ids() if cid not in known]
    except DatabaseError:  # tables not migrated yet (migrate --plan, a partial migrate)
        return
    MCPClient.objects.bulk_create([MCPClient(client_id=cid) for cid in missing], ignore_conflicts=True)


def applications_all_ids() -> list[str]:
    from oauth2_provider.models import get_application_model  # reason: DOT's models need it in INSTALLED_APPS

    return list(get_application_model().objects.values_list("client_id", flat=True))


def connect_signals(app_config: Any) -> None:
    post_migrate.connect(sync_clients, sender=app_config, dispatch_uid="django_mcp.sync_clients")
    if not oauth_installed():
        return
    from oauth2_provider.models import get_application_model  # reason: DOT's models need it in INSTALLED_APPS

    model = get_application_model()
    post_save.connect(on_application_saved, sender=model, dispatch_uid="django_mcp.application_saved")
    post_delete.connect(on_application_deleted, sender=model, dispatch_uid="django_mcp.application_deleted")
