"""OAuth clients as MCP sees them: disabling a client and revoking what it holds.

django-oauth-toolkit's Application records how and when a client registered
(``registration_source``: manual, DCR or CIMD). :class:`~django_mcp.models.MCPClient`
adds the administrator's switch. A disabled client is refused everywhere a
client is looked at: the bearer check of the MCP endpoint and DOT's token and
authorization endpoints (through :func:`is_client_disabled`); disabling also
revokes every token and grant it holds, so its very next request gets 401.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.db import transaction
from django.utils import timezone

if TYPE_CHECKING:
    from .models import MCPClient


def oauth_installed() -> bool:
    return apps.is_installed("oauth2_provider")


def is_client_disabled(application: Any) -> bool:
    """Whether an administrator disabled ``application`` (a DOT Application, or None)."""
    from .models import MCPClient

    client_id = getattr(application, "client_id", None)
    if not client_id:
        return False
    return bool(MCPClient.objects.filter(client_id=client_id, disabled=True).exists())


def allowed_scopes(application: Any) -> frozenset[str] | None:
    """The scopes staff allowed ``application`` to request; None when its record sets none."""
    from .models import MCPClient

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
    from .models import MCPClient

    client_id = getattr(application, "client_id", None)
    if not client_id:
        return None
    record = MCPClient.objects.filter(client_id=client_id).select_related("service_user").first()
    if record is not None and record.service_user is not None:
        return record.service_user
    if getattr(application, "registration_source", "manual") == "manual":
        return getattr(application, "user", None)
    return None


def record_client(application: Any) -> MCPClient:
    """The MCPClient row for ``application``, created on first sight."""
    from .models import MCPClient

    client: MCPClient = MCPClient.objects.get_or_create(client_id=application.client_id)[0]
    return client


def applications(client_ids: Iterable[str]) -> Any:
    from oauth2_provider.models import get_application_model

    return get_application_model().objects.filter(client_id__in=list(client_ids))


def revoke_tokens(client_ids: Iterable[str]) -> int:
    """Revoke every access token, refresh token, grant and ID token of these clients; the access-token count.

    Their MCP sessions end too, so a client cannot go on with a session it opened.
    """
    from oauth2_provider.models import (
        get_access_token_model,
        get_grant_model,
        get_id_token_model,
        get_refresh_token_model,
    )

    from .models import MCPSession
    from .sessions import end_sessions_sync

    ids = list(client_ids)
    apps_qs = applications(ids)
    with transaction.atomic():
        get_refresh_token_model().objects.filter(application__in=apps_qs, revoked__isnull=True).update(
            revoked=timezone.now()
        )
        tokens = get_access_token_model().objects.filter(application__in=apps_qs)
        count, _ = tokens.delete()
        get_grant_model().objects.filter(application__in=apps_qs).delete()
        get_id_token_model().objects.filter(application__in=apps_qs).delete()
    sessions = MCPSession.objects.filter(oauth_client__in=ids, ended__isnull=True)
    end_sessions_sync(list(sessions.values_list("id", flat=True)))
    return int(count)


def disable_clients(client_ids: Iterable[str]) -> int:
    """Disable these clients and revoke all they hold; the number newly disabled."""
    from .models import MCPClient

    ids = list(client_ids)
    for client_id in ids:
        MCPClient.objects.get_or_create(client_id=client_id)
    n = MCPClient.objects.filter(client_id__in=ids, disabled=False).update(disabled=True, disabled_at=timezone.now())
    revoke_tokens(ids)
    return int(n)


def enable_clients(client_ids: Iterable[str]) -> int:
    from .models import MCPClient

    n = MCPClient.objects.filter(client_id__in=list(client_ids), disabled=True).update(disabled=False, disabled_at=None)
    return int(n)


# -- keeping MCPClient rows beside DOT applications (connected in AppConfig.ready) ------------------
def on_application_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    from .models import MCPClient

    if instance.client_id:
        MCPClient.objects.get_or_create(client_id=instance.client_id)


def on_application_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    from .models import MCPClient

    MCPClient.objects.filter(client_id=instance.client_id).delete()


def sync_clients(**kwargs: Any) -> None:
    """Rows for applications that existed before django_mcp (run after ``migrate``)."""
    from .models import MCPClient

    if not oauth_installed():
        return
    from django.db.utils import DatabaseError

    try:
        known = set(MCPClient.objects.values_list("client_id", flat=True))
        missing = [cid for cid in applications_all_ids() if cid not in known]
    except DatabaseError:  # tables not migrated yet (migrate --plan, a partial migrate)
        return
    MCPClient.objects.bulk_create([MCPClient(client_id=cid) for cid in missing], ignore_conflicts=True)


def applications_all_ids() -> list[str]:
    from oauth2_provider.models import get_application_model

    return list(get_application_model().objects.values_list("client_id", flat=True))


def connect_signals(app_config: Any) -> None:
    from django.db.models.signals import post_delete, post_migrate, post_save

    post_migrate.connect(sync_clients, sender=app_config, dispatch_uid="django_mcp.sync_clients")
    if not oauth_installed():
        return
    from oauth2_provider.models import get_application_model

    model = get_application_model()
    post_save.connect(on_application_saved, sender=model, dispatch_uid="django_mcp.application_saved")
    post_delete.connect(on_application_deleted, sender=model, dispatch_uid="django_mcp.application_deleted")
