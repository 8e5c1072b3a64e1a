"""The large API (``tests.drfbig``'s viewsets) on ``django_mcp.site``, as a project's own ``mcp.py`` would
register it; the other apps (objpermapp, tokenapp, projectapp) bring their own ``mcp.py``."""

from __future__ import annotations

from django_mcp import site
from tests.drfbig import serializers, views

site.register_drf(
    views.GadgetViewSet,
    basename="catalog_gadget",
    output_serializers={"bump": serializers.GadgetSerializer, "stats": serializers.StatsSerializer},
)
site.register_drf(views.PublisherViewSet, basename="catalog_publisher")
site.register_drf(views.TagViewSet, basename="catalog_tag")
