"""One static resource, one template and one ModelResource, each behind the ``secret:read`` scope AND the
Django permission ``auth.view_group`` (the ModelResource's own view permission for ``auth.Group``)."""

from __future__ import annotations

from django.contrib.auth.models import Group

from django_mcp import ModelResource, site


@site.resource("guarded://static", scopes=["secret:read"], permissions=["auth.view_group"])
def guarded_static() -> str:
    """A static resource behind a scope and a permission."""
    return "static"


@site.resource("guarded://drawer/{slot}", scopes=["secret:read"], permissions=["auth.view_group"])
def guarded_drawer(slot: str) -> str:
    """A resource template behind a scope and a permission."""
    return f"drawer {slot}"


@site.register
class GuardedGroupResource(ModelResource):
    model = Group
    fields = ["name"]
    uri_template = "guarded://groups/{pk}"
    scopes = ["secret:read"]
