from django.conf import settings
from django.db import models


class Gadget(models.Model):
    name = models.CharField(max_length=100)
    tenant = models.CharField(max_length=100, blank=True)

    def __str__(self) -> str:
        return self.name


class ChangeRecord(models.Model):
    """What the project's change logging writes for every save, naming the request's user (never anonymous)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    tenant = models.CharField(max_length=100)
    object_repr = models.CharField(max_length=200)
    via = models.CharField(max_length=20)
