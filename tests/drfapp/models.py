from __future__ import annotations

from django.conf import settings
from django.db import models


class Item(models.Model):
    name = models.CharField(max_length=50, unique=True, help_text="Unique name of the item.")
    quantity = models.PositiveIntegerField(default=0)
    note = models.CharField(max_length=200, blank=True, null=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
