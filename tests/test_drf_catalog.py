"""The size of a large DRF API's catalog: lookup variants of filters left out by default (``DRF_FILTER_LOOKUPS``),
related fields described as ids, no column bounds beside an ``enum``; and an upper bound on ``tests.drfbig``'s
``tools/list``, so a change that bloats every DRF tool fails here."""

from __future__ import annotations

import json
from typing import Any

import django_filters
import pytest
from django.conf import settings
from django.test import override_settings
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import permissions, serializers, viewsets

from django_mcp.contrib.drf import drf_tool
from tests.drfbig.models import Gadget

pytestmark = pytest.mark.django_db

#: The lookups a large project's generated filtersets give every field (as NetBox's do).
LOOKUPS = ["exact", "iexact", "icontains", "istartswith", "iendswith", "isnull", "in", "regex", "iregex"]
NUMBERS = ["exact", "gt", "gte", "lt", "lte", "in", "isnull"]


class WideFilter(django_filters.FilterSet):  # type: ignore[misc]
    class Meta:
        model = Gadget
        fields = {
            **{f: LOOKUPS for f in ("name", "code", "slug", "email", "website", "status")},
            **{f: NUMBERS for f in ("stock", "ratio", "price", "weight", "size", "made_at", "made_on")},
        }


class GadgetOut(serializers.ModelSerializer):  # type: ignore[misc]
    class Meta:
        model = Gadget
        fields = ["id", "name", "status", "size", "publisher", "tags"]


class WideViewSet(viewsets.ModelViewSet):  # type: ignore[misc]
    """Gadgets, filterable every way."""

    queryset = Gadget.objects.all()
    serializer_class = GadgetOut
    permission_classes = [permissions.AllowAny]
    filter_backends = [DjangoFilterBackend]
    filterset_class = WideFilter


def _list_tool(**mcp: Any) -> dict[str, Any]:
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, **mcp}):
        return drf_tool(WideViewSet, action="list", basename="wide").definition()


def test_lookup_variants_are_left_out_unless_asked_for() -> None:
    small = _list_tool()["inputSchema"]["properties"]
    full = _list_tool(DRF_FILTER_LOOKUPS=True)["inputSchema"]["properties"]
    plain = {"name", "code", "slug", "email", "website", "status", "stock", "ratio", "price", "weight", "size"}
    assert plain <= set(small) and {"made_at", "made_on"} <= set(small)
    assert not any("__" in name for name in small), sorted(small)
    assert {"name__icontains", "stock__gte", "made_on__lt", "status__in"} <= set(full)
    assert len(full) == 6 * len(LOOKUPS) + 7 * len(NUMBERS)
    assert len(small) == 13
    # What a client downloads for the one tool, before and after (docs/views.md gives these figures).
    assert len(json.dumps(_list_tool())) * 4 < len(json.dumps(_list_tool(DRF_FILTER_LOOKUPS=True)))


def test_a_filter_named_with_a_lookup_but_no_plain_form_stays() -> None:
    """``made_at__gte`` in tests.drfbig has no ``made_at`` beside it: the only way to filter by it."""
    from tests.drfbig.views import GadgetViewSet

    listing = drf_tool(GadgetViewSet, action="list").definition()["inputSchema"]["properties"]
    assert {"made_at__gte", "made_at__lte", "id__in"} <= set(listing)


def test_related_fields_say_whose_id_they_take_and_enums_carry_no_column_bounds() -> None:
    create = drf_tool(WideViewSet, action="create", basename="wide").definition()["inputSchema"]["properties"]
    assert create["publisher"]["description"] == "The id of a publisher."
    assert create["tags"]["description"] == "The ids of tags."
    assert create["size"]["enum"] == [1, 2] and "minimum" not in create["size"] and "maximum" not in create["size"]


def test_the_catalog_of_a_large_api_stays_small() -> None:
    """tests.drfbig: 16 tools over every DRF field type. Its catalog was 34.5 KB; the bound leaves room to grow
    a little, not to double."""
    from tests.drfbig.tools import server

    definitions = [tool.definition() for tool in server.tools.values()]
    assert len(json.dumps({"tools": definitions})) < 40_000
    assert max(len(json.dumps(d)) for d in definitions) < 6_000


class DocumentedOut(serializers.ModelSerializer):  # type: ignore[misc]
    """A gadget as the shop lists it: name, status and size."""

    class Meta:
        model = Gadget
        fields = ["id", "name", "status", "size"]


class UndocumentedViewSet(viewsets.ReadOnlyModelViewSet):  # type: ignore[misc]
    queryset = Gadget.objects.all()
    serializer_class = DocumentedOut
    permission_classes = [permissions.AllowAny]


def test_a_viewset_without_a_docstring_is_described_by_its_serializers() -> None:
    """Read when the tool is registered, from the classes: no view is built, no database is asked."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        listing = drf_tool(UndocumentedViewSet, action="list", basename="shop")
        own = drf_tool(WideViewSet, action="retrieve", basename="wide")
    assert not queries.captured_queries
    assert listing.description == "List gadgets.\n\nA gadget as the shop lists it: name, status and size."
    assert own.description == "Get one gadget.\n\nGadgets, filterable every way."  # the viewset's own first
    plain = drf_tool(UndocumentedViewSet, action="list", basename="shop", output_serializer=GadgetOut)
    assert plain.description == "List gadgets."  # GadgetOut has no docstring; DRF's own classes' are never used


def test_a_nested_serializer_that_takes_an_id_says_so_with_drf_spectacular() -> None:
    """A writable nested serializer that takes an id on write (its own ``to_internal_value``, as large projects'
    "writable nested" serializers do) is published as the project declares it (docs/views.md)."""
    spectacular = pytest.importorskip("drf_spectacular.utils")
    from tests.drfbig.models import Publisher

    @spectacular.extend_schema_field({"type": "integer", "description": "The id of a publisher."})
    class NestedPublisher(serializers.ModelSerializer):  # type: ignore[misc]
        class Meta:
            model = Publisher
            fields = ["id", "name"]

        def to_internal_value(self, data: Any) -> Any:
            return Publisher.objects.get(pk=data)

    class Writable(serializers.ModelSerializer):  # type: ignore[misc]
        publisher = NestedPublisher()

        class Meta:
            model = Gadget
            fields = ["id", "name", "publisher"]

    class NestedViewSet(viewsets.ModelViewSet):  # type: ignore[misc]
        queryset = Gadget.objects.all()
        serializer_class = Writable

    create = drf_tool(NestedViewSet, action="create", basename="nested").definition()["inputSchema"]
    assert create["properties"]["publisher"] == {"type": "integer", "description": "The id of a publisher."}
