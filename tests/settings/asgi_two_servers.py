"""An ASGI application mounting a second MCPServer beside the site (for check django_mcp.W004)."""

from channels.routing import ProtocolTypeRouter, URLRouter

from django_mcp import MCPServer
from django_mcp.asgi import mcp_urlpatterns

other = MCPServer("other-server")


@other.tool
def other_tool() -> str:
    """A tool with neither a title nor read-only/destructive annotations."""
    return "ok"


@other.tool(title="Other, described", annotations={"readOnlyHint": True})
def other_described() -> str:
    """A tool a host directory accepts."""
    return "ok"


application = ProtocolTypeRouter(
    {"http": URLRouter([*mcp_urlpatterns(server=other, prefix="/other/"), *mcp_urlpatterns()])}
)
