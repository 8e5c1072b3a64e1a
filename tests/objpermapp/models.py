"""Models of the object-permission tests: ledgers owned per user, and a model with odd custom fields."""

from __future__ import annotations

from typing import Any

import rules
from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import models


class Ledger(models.Model):
    """A tenant's ledger: each user may see only their own (django-guardian grants or a rules predicate)."""

    name = models.CharField(max_length=100)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)

    def __str__(self) -> str:
        return self.name


@rules.predicate
def owns(user: Any, ledger: Ledger | None) -> bool:
    """Rules' usual convention: no object is "some object" (True); an object, its owner only."""
    return ledger is None or ledger.owner_id == user.pk


class Point:
    """A custom Python value (think ``netaddr.IPNetwork``): not JSON, with a string form."""

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def __str__(self) -> str:
        return f"POINT({self.x} {self.y})"


class PointField(models.CharField):  # type: ignore[type-arg]  # not subscriptable at run time without django-stubs-ext
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 50)
        super().__init__(*args, **kwargs)

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Point | None:
        if value is None:
            return None
        x, y = value.split()
        return Point(int(x), int(y))

    def get_prep_value(self, value: Any) -> Any:
        return f"{value.x} {value.y}" if isinstance(value, Point) else value


class Opaque:
    """A value with neither a JSON nor a string form."""

    def __init__(self, raw: str) -> None:
        self.raw = raw

    def __str__(self) -> str:
        raise ValueError("no text form")


class OpaqueField(models.CharField):  # type: ignore[type-arg]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 50)
        super().__init__(*args, **kwargs)

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Opaque | None:
        return None if value is None else Opaque(value)

    def get_prep_value(self, value: Any) -> Any:
        return value.raw if isinstance(value, Opaque) else value


class Gadget(models.Model):
    name = models.CharField(max_length=100)
    spot = PointField()
    odd = OpaqueField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name


class Member(AbstractBaseUser):
    """A project's own user model, as large projects have: no ``is_staff``, no ``is_superuser``, no groups."""

    username = models.CharField(max_length=50, unique=True)
    is_active = models.BooleanField(default=True)

    USERNAME_FIELD = "username"

    def has_perm(self, perm: str, obj: Any = None) -> bool:
        return False

    def has_module_perms(self, app_label: str) -> bool:
        return False
