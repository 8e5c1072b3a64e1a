"""The object-permission tests' resources (``tests.settings.settings_objperm`` installs this app)."""

from __future__ import annotations

from django_mcp import ModelResource, site

from .models import Gadget, Ledger


@site.register
class LedgerResource(ModelResource):
    """No override: object permissions come from the configured backend (guardian's or rules')."""

    model = Ledger
    fields = ["name", "owner"]
    search_fields = ["name"]
    ui = "objpermapp/ledger.html"


@site.register
class GadgetResource(ModelResource):
    model = Gadget
