"""The drfapp API over MCP: DRF views and viewsets, plain views, and tools for the access/atomic tests."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from pydantic import BaseModel

from django_mcp import Context, ToolError, site

from . import serializers, views
from .models import Item

# DRF: every action of a viewset (item_list, item_create, ..., item_restock), an APIView, @api_view functions.
site.register_drf(views.ItemViewSet, output_serializers={"restock": serializers.ItemSerializer})
site.register_drf(views.StatsView, name="item_stats", output_serializer=serializers.StatsSerializer)
site.register_drf(
    views.bulk_create,
    input_serializer=serializers.BulkSerializer,
    output_serializer=serializers.ItemSerializer(many=True),
)
site.drf_tool(name="api_ping")(views.ping)


# Plain Django views.
class LabelArgs(BaseModel):
    upper: bool = False


class Renamed(BaseModel):
    id: int
    name: str


site.register_view(views.item_label, arguments=LabelArgs)
site.register_view(views.my_items)
site.register_view(views.rename_item, method="POST", arguments={"name": str}, output=Renamed)


# Per-user visibility: a tool, a static resource and a prompt that need a Django permission,
# and a tool guarded by a check callable.
@site.tool(permissions=["drfapp.delete_item"])
def purge_items() -> int:
    """Delete every item (needs drfapp.delete_item)."""
    return Item.objects.all().delete()[0]


@site.tool(check=lambda ctx: ctx.user.is_staff)
def staff_hello(ctx: Context) -> str:
    """Only staff see this tool."""
    return f"hello staff member {ctx.user.get_username()}"


@site.resource("drfapp://inventory", mime_type="text/plain", permissions=["drfapp.view_item"])
def inventory() -> str:
    """The inventory (needs drfapp.view_item)."""
    return "\n".join(f"{i.name}: {i.quantity}" for i in Item.objects.all()) or "(empty)"


@site.prompt(permissions=["drfapp.view_item"])
def audit_items(focus: str = "quantities") -> str:
    """Ask for an audit of the inventory (needs drfapp.view_item)."""
    return f"Audit the inventory, focusing on {focus}."


# ATOMIC_TOOL_CALLS: a sync tool that writes, then fails or not; an async one that writes, then fails.
@site.tool
def make_items(names: list[str], fail: bool = False) -> int:
    """Create items, then fail on purpose when asked: the writes must be rolled back."""
    for name in names:
        Item.objects.create(name=name)
    if fail:
        raise ToolError("failed after writing")
    return len(names)


@site.tool
def crash_after_write(name: str) -> int:
    """Create an item, then raise an unexpected error."""
    Item.objects.create(name=name)
    raise RuntimeError("boom")


@site.tool
async def make_item_async(name: str, fail: bool = False) -> int:
    """Async tools are not wrapped: the write sits in its own sync_to_async call, committed on return."""
    item = await sync_to_async(Item.objects.create)(name=name)
    if fail:
        raise ToolError("async tool failed after writing")
    return item.pk


@site.tool
def item_names() -> list[str]:
    """Names of all items (to observe what the other tools wrote)."""
    return list(Item.objects.order_by("name").values_list("name", flat=True))
