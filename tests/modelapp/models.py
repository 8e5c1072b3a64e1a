"""Models the ModelResource tests expose: foreign keys, many-to-many, a file field, a slug lookup."""

from __future__ import annotations

import os
import tempfile

from django.conf import settings
from django.core.files.storage import FileSystemStorage
from django.db import models


def media_storage() -> FileSystemStorage:
    """Uploads go to MCP_MEDIA_ROOT (a temporary directory by default), never into the repository."""
    default = os.path.join(tempfile.gettempdir(), "mcp-media")
    return FileSystemStorage(location=os.environ.get("MCP_MEDIA_ROOT", default))


class Shelf(models.Model):
    """A shelf of the archive."""

    name = models.CharField(max_length=100)

    def __str__(self) -> str:
        return self.name


class Tag(models.Model):
    slug = models.SlugField(unique=True)

    def __str__(self) -> str:
        return self.slug


class Document(models.Model):
    """A document filed on a shelf."""

    title = models.CharField(max_length=200)
    shelf = models.ForeignKey(Shelf, on_delete=models.CASCADE, related_name="documents")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True)
    tags = models.ManyToManyField(Tag, blank=True, related_name="documents")
    attachment = models.FileField(storage=media_storage, upload_to="docs", blank=True)
    secret = models.CharField(max_length=50, blank=True)

    def __str__(self) -> str:
        return f"{self.title} ({self.shelf})"


class Note(models.Model):
    """A note serialized by a DRF serializer."""

    text = models.TextField()
    document = models.ForeignKey(Document, on_delete=models.CASCADE, null=True, blank=True)

    def __str__(self) -> str:
        return self.text[:30]
