"""Where this site's OAuth documents are: at the site root, or under the prefix ``django_mcp.urls`` is mounted at.

Read from the URLconf (``reverse()``), so the URL a client is sent to is the one the project serves.
"""

from __future__ import annotations

from django.urls import NoReverseMatch, reverse

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"


def protected_resource_metadata_path(endpoint: str) -> str:
    """The path of the RFC 9728 document of the endpoint at path ``endpoint``.

    ``django_mcp.urls`` at the site root (or not included): the path-suffixed well-known URL
    (``/.well-known/oauth-protected-resource/mcp``, what MCP clients try first). Under a prefix: the
    document under it (``/plugins/mcp/.well-known/oauth-protected-resource``), the only one a client reaches.
    """
    try:
        mounted = reverse("oauth2_provider:oauth-resource-metadata")
    except NoReverseMatch:
        mounted = PRM_WELL_KNOWN
    if mounted == PRM_WELL_KNOWN:
        return PRM_WELL_KNOWN + endpoint.rstrip("/")
    return str(mounted)


__all__ = ["PRM_WELL_KNOWN", "protected_resource_metadata_path"]
