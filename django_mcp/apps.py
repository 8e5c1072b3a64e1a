from __future__ import annotations

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class DjangoMCPConfig(AppConfig):
    name = "django_mcp"
    verbose_name = "MCP server"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import (
            checks,  # noqa: F401  (registers the system checks)
            site,
        )
        from .auth import checks as auth_checks  # noqa: F401  (registers the OAuth checks)
        from .auth_clients import connect_signals

        connect_signals(self)
        autodiscover_modules("mcp", register_to=site)
