"""The project's change logging: a ``ChangeRecord`` for every saved ``Gadget``, as the request's user."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_save

from . import middleware
from .models import ChangeRecord, Gadget


def record(sender: Any, instance: Gadget, **kwargs: Any) -> None:
    request = getattr(middleware.local, "request", None)
    if request is None:
        return  # not inside a request (shell, migrations): nothing to attribute
    # Assigning AnonymousUser to the foreign key raises ValueError, as in real projects.
    ChangeRecord.objects.create(
        user=request.user,
        tenant=middleware.tenant.get() or "",
        object_repr=str(instance),
        via=request.method,
    )


post_save.connect(record, sender=Gadget)
