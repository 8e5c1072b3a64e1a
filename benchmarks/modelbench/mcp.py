"""The MCP side: ``Item`` as a ModelResource that anonymous callers may read (``AUTH = "none"``).

The default ``has_permission`` asks for ``modelbench.view_item``, which an anonymous
caller lacks; the override makes the catalogue public, as docs/models.md shows, so the
comparison is with DRF's ``AllowAny``.
"""

from __future__ import annotations

from django.db import models

from django_mcp import Context, ModelResource, site

from .models import Item

FIELDS = ["id", "title", "publisher", "isbn", "published", "price", "pages", "in_stock"]


@site.register
class ItemResource(ModelResource):
    model = Item
    fields = FIELDS
    select_related = ["publisher"]

    def has_permission(self, ctx: Context, obj: models.Model | None = None) -> bool:
        return True
