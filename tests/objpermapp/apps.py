from __future__ import annotations

from django.apps import AppConfig


class ObjPermAppConfig(AppConfig):
    name = "tests.objpermapp"
    label = "objpermapp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import rules

        from .models import owns

        # The rules-style grant an operator's project had: "view_ledger" for every user (no object: the
        # admin's list), each ledger only for its owner.
        rules.add_perm("objpermapp.view_ledger", owns)
