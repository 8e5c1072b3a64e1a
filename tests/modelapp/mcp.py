"""ModelResources the model tests drive, and a tool that writes (optionally rolling back)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from rest_framework import serializers

from django_mcp import Context, ModelResource, site

from .models import Document, Note, Shelf, Tag


@site.register
class ShelfResource(ModelResource):
    model = Shelf
    search_fields = ["name"]


@site.register
class TagResource(ModelResource):
    model = Tag
    lookup_field = "slug"


@site.register
class DocumentResource(ModelResource):
    model = Document
    exclude = ["secret"]
    select_related = ["shelf"]
    prefetch_related = ["tags"]
    search_fields = ["title"]

    def get_queryset(self, ctx: Context) -> QuerySet[Any]:
        """Staff see every document, everyone else their own."""
        qs = super().get_queryset(ctx)
        return qs if ctx.user.is_staff else qs.filter(owner_id=ctx.user.pk)


class NoteSerializer(serializers.ModelSerializer[Note]):
    words = serializers.SerializerMethodField()

    class Meta:
        model = Note
        fields = ["id", "text", "words"]

    def get_words(self, obj: Note) -> int:
        return len(obj.text.split())


@site.register
class NoteResource(ModelResource):
    model = Note
    serializer_class = NoteSerializer
    uri_template = "notes://{pk}"
    mime_type = "application/vnd.test.note+json"
    title = "Memo"


@site.tool
def modelapp_write(action: str, doc: int = 0, title: str = "", tag: str = "", rollback: bool = False) -> str:
    """Create, rename, tag or delete a document in a transaction; ``rollback`` undoes it."""
    with transaction.atomic():
        if action == "create":
            from django.contrib.auth.models import User

            d = Document.objects.create(
                title=title, shelf=Shelf.objects.order_by("pk")[0], owner=User.objects.filter(username="bob").first()
            )
        else:
            d = Document.objects.get(pk=doc)
            if action == "rename":
                d.title = title
                d.save()
            elif action == "tag":
                d.tags.add(Tag.objects.get_or_create(slug=tag)[0])
            elif action == "delete":
                Document.objects.filter(pk=d.pk).delete()
        if rollback:
            transaction.set_rollback(True)
    return str(d.pk or doc)
