"""The big API as MCP tools, on a server of its own (``tests.settings.asgi_drfbig`` mounts it at /mcp/)."""

from __future__ import annotations

from django_mcp import MCPServer

from . import serializers, views


def register(server: MCPServer, prefix: str = "") -> None:
    """The API's viewsets on ``server``, their tools' names after ``prefix`` (a project's own ``mcp.py`` calls it
    with ``site``)."""
    server.register_drf(
        views.GadgetViewSet,
        basename=f"{prefix}gadget",
        output_serializers={"bump": serializers.GadgetSerializer, "stats": serializers.StatsSerializer},
    )
    server.register_drf(views.PublisherViewSet, basename=f"{prefix}publisher")
    server.register_drf(views.TagViewSet, basename=f"{prefix}tag")


server = MCPServer("drfbig")
register(server)
