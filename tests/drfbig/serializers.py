"""Serializers using every DRF field type, nested and related fields, and a custom field."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from rest_framework import serializers

from .models import Gadget, Publisher, Tag

try:
    from drf_spectacular.utils import extend_schema_field
except ImportError:  # the suite also runs without drf-spectacular

    def extend_schema_field(schema: Any) -> Any:
        return lambda cls: cls


LABEL_SCHEMA = {
    "type": "object",
    "properties": {"value": {"type": "string"}, "label": {"type": "string"}},
    "required": ["value", "label"],
}


@extend_schema_field(LABEL_SCHEMA)
class ChoiceLabelField(serializers.ChoiceField):  # type: ignore[misc]
    """A choice written as its value and read back as ``{"value": ..., "label": ...}``."""

    def to_representation(self, value: Any) -> Any:
        return {"value": str(value), "label": str(self.choices.get(value, value))}


class PublisherSerializer(serializers.ModelSerializer):  # type: ignore[misc]
    """A publisher of gadgets."""

    gadget_count = serializers.SerializerMethodField()

    class Meta:
        model = Publisher
        fields = ["id", "name", "country", "gadget_count"]

    def get_gadget_count(self, obj: Publisher) -> int:
        return obj.gadgets.count()


class TagSerializer(serializers.ModelSerializer):  # type: ignore[misc]
    class Meta:
        model = Tag
        fields = ["id", "slug"]


COLOURS = [("red", "Red"), ("green", "Green"), ("blue", "Blue")]


class GadgetSerializer(serializers.ModelSerializer):  # type: ignore[misc]
    """A gadget with one field of every kind."""

    colours = serializers.MultipleChoiceField(choices=COLOURS, required=False)
    labels = serializers.ListField(child=serializers.CharField(max_length=20), required=False, max_length=5)
    specs = serializers.DictField(child=serializers.IntegerField(), required=False)
    extra = serializers.JSONField(required=False, allow_null=True)
    ip = serializers.IPAddressField(required=False, allow_null=True)
    price = serializers.DecimalField(max_digits=7, decimal_places=2, min_value=Decimal("0"), max_value=Decimal("99999"))
    weight = serializers.DecimalField(
        max_digits=6,
        decimal_places=3,
        coerce_to_string=False,
        min_value=Decimal("0.001"),
        max_value=Decimal("500"),
        required=False,
        allow_null=True,
    )
    status_label = ChoiceLabelField(source="status", choices=Gadget.Status.choices, read_only=True)
    manual = serializers.FileField(read_only=True)
    photo = serializers.ImageField(read_only=True)
    origin = serializers.HiddenField(default="mcp")
    display = serializers.ReadOnlyField(source="name")
    is_cheap = serializers.SerializerMethodField()
    tag_slugs = serializers.SerializerMethodField()
    publisher_detail = PublisherSerializer(source="publisher", read_only=True)
    publisher_url = serializers.HyperlinkedRelatedField(
        source="publisher", view_name="drfbig-publisher-detail", read_only=True
    )
    tags = serializers.PrimaryKeyRelatedField(many=True, queryset=Tag.objects.all(), required=False)

    class Meta:
        model = Gadget
        fields = [
            "id", "name", "code", "slug", "email", "website", "uid", "ip", "stock", "ratio", "price", "weight",
            "active", "made_at", "made_on", "opens", "warranty", "status", "size", "colours", "labels", "specs",
            "extra", "manual", "photo", "origin", "display", "is_cheap", "tag_slugs", "status_label", "publisher",
            "publisher_detail", "publisher_url", "tags",
        ]  # fmt: skip

    def validate_colours(self, value: Any) -> list[str]:
        return sorted(value)  # a set (DRF 3.15) is not JSON, for the model's JSONField

    def get_is_cheap(self, obj: Gadget) -> bool:
        return obj.price < 10

    def get_tag_slugs(self, obj: Gadget) -> list[str]:
        return [t.slug for t in obj.tags.all()]


class GadgetSummarySerializer(serializers.ModelSerializer):  # type: ignore[misc]
    """The short form of a gadget (the list tool with ``?short=1``)."""

    class Meta:
        model = Gadget
        fields = ["id", "name"]


class BumpSerializer(serializers.Serializer):  # type: ignore[misc]
    by = serializers.IntegerField(min_value=1, max_value=100)


class StatsSerializer(serializers.Serializer):  # type: ignore[misc]
    gadgets = serializers.IntegerField()
    live = serializers.IntegerField()
    average_price = serializers.DecimalField(max_digits=9, decimal_places=2, allow_null=True)
