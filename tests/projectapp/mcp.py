"""The existing project's MCP declarations: a plain sync tool, an async tool, a resource, its DRF API."""

from __future__ import annotations

from django_mcp import site

from . import middleware
from .api import GadgetViewSet
from .models import Gadget

site.register_drf(GadgetViewSet, actions=["list", "create"])


@site.tool(annotations={"readOnlyHint": False, "destructiveHint": False}, scopes=["mcp"])
def add_gadget(name: str) -> int:
    """Add a gadget to the caller's tenant (the project's change logging records it)."""
    return Gadget.objects.create(name=name, tenant=middleware.tenant.get() or "").pk


@site.tool(annotations={"readOnlyHint": True}, scopes=["mcp"])
async def current_tenant() -> str:
    """The tenant the project's middleware set for this call."""
    return middleware.tenant.get() or "<none>"


@site.resource("gadgets://mine", scopes=["mcp"])
def my_gadgets() -> str:
    """Names of the caller's tenant's gadgets."""
    return ",".join(sorted(Gadget.objects.filter(tenant=middleware.tenant.get() or "").values_list("name", flat=True)))
