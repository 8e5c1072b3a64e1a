"""Database state: handshake-era sessions (stateless 2026-07-28 requests need none) and OAuth client state."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class MCPSession(models.Model):
    """A handshake-era MCP session, created by ``initialize`` and named by ``Mcp-Session-Id``."""

    id = models.CharField(primary_key=True, max_length=64, editable=False)
    protocol_version = models.CharField(_("protocol revision"), max_length=16)
    client_info = models.JSONField(_("client info"), default=dict, blank=True)
    client_capabilities = models.JSONField(_("client capabilities"), default=dict, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="mcp_sessions"
    )
    oauth_client = models.CharField(
        _("OAuth client"), max_length=255, blank=True, default="", help_text=_("client_id of the token that opened it")
    )
    log_level = models.CharField(_("log level"), max_length=16, blank=True, default="")
    subscriptions = models.JSONField(_("resource subscriptions"), default=list, blank=True)
    initialized = models.BooleanField(_("initialized"), default=False)
    created = models.DateTimeField(_("created"), auto_now_add=True, db_index=True)
    last_seen = models.DateTimeField(_("last seen"), db_index=True)
    ended = models.DateTimeField(_("ended"), null=True, blank=True, db_index=True)

    class Meta:
        verbose_name = _("MCP session")
        verbose_name_plural = _("MCP sessions")
        ordering = ["-last_seen"]

    def __str__(self) -> str:
        name = (self.client_info or {}).get("name", "client")
        return f"{name} ({self.protocol_version}) {self.id[:8]}…"

    @property
    def is_active(self) -> bool:
        return self.ended is None


class MCPClient(models.Model):
    """django_mcp's record of one OAuth client (a django-oauth-toolkit Application, by ``client_id``).

    Keyed by ``client_id`` rather than a foreign key so that django_mcp needs no
    OAuth app installed (development mode) and works with a swapped application
    model. DOT itself records how and when the application was registered; this
    adds what MCP needs on top: whether an administrator disabled the client.
    """

    client_id = models.CharField(_("client ID"), max_length=255, unique=True)
    disabled = models.BooleanField(_("disabled"), default=False, db_index=True)
    disabled_at = models.DateTimeField(_("disabled at"), null=True, blank=True)
    created = models.DateTimeField(_("first seen"), auto_now_add=True)

    class Meta:
        verbose_name = _("MCP client")
        verbose_name_plural = _("MCP clients")
        ordering = ["-created"]

    def __str__(self) -> str:
        return self.client_id
