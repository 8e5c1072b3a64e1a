"""A project's own API tokens, as large DRF projects have them: a write flag, allowed addresses, expiry."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    key = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    write_enabled = models.BooleanField(default=False)
    #: Space-separated addresses the token may be used from; empty: any.
    allowed_ips = models.CharField(max_length=200, blank=True)
    expires = models.DateTimeField(null=True, blank=True)


class Note(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notes")
    text = models.CharField(max_length=200)

    class Meta:
        ordering = ["pk"]
