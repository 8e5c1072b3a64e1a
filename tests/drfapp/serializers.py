from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .models import Item


class ItemSerializer(serializers.ModelSerializer):  # type: ignore[misc]
    owner = serializers.CharField(source="owner.username", read_only=True, default=None, allow_null=True)

    class Meta:
        model = Item
        fields = ["id", "name", "quantity", "note", "owner"]
        # Explicit: DRF derives the bound from the model field's validators only on Django 5+.
        extra_kwargs = {"quantity": {"min_value": 0}}

    def validate_name(self, value: str) -> str:
        if value.lower() == "forbidden":
            raise serializers.ValidationError("This name is not allowed.")
        return value


class RestockSerializer(serializers.Serializer):  # type: ignore[misc]
    amount = serializers.IntegerField(min_value=1, max_value=100)


class StatsSerializer(serializers.Serializer):  # type: ignore[misc]
    items = serializers.IntegerField()
    total_quantity = serializers.IntegerField()
    caller = serializers.CharField()


class BulkSerializer(serializers.Serializer):  # type: ignore[misc]
    names = serializers.ListField(child=serializers.CharField(max_length=50), min_length=1)

    def create(self, validated: dict[str, Any]) -> list[Item]:
        return [Item.objects.create(name=n) for n in validated["names"]]
