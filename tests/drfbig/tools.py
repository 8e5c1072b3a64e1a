"""The big API as MCP tools, on a server of its own (``tests.asgi_drfbig`` mounts it at /mcp/)."""

from __future__ import annotations

from django_mcp import MCPServer

from . import serializers, views

server = MCPServer("drfbig")
server.register_drf(
    views.GadgetViewSet,
    basename="gadget",
    output_serializers={"bump": serializers.GadgetSerializer, "stats": serializers.StatsSerializer},
)
server.register_drf(views.PublisherViewSet, basename="publisher")
server.register_drf(views.TagViewSet, basename="tag")
