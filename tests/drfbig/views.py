"""Viewsets of the big API: a FilterSet with choices, ranges and booleans, search, ordering, pagination."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import Avg
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import filters, permissions, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response

from .models import Gadget, Publisher, Tag
from .serializers import (
    BumpSerializer,
    GadgetSerializer,
    GadgetSummarySerializer,
    PublisherSerializer,
    StatsSerializer,
    TagSerializer,
)


class Pages(PageNumberPagination):  # type: ignore[misc]
    page_size = 3
    page_size_query_param = "page_size"
    max_page_size = 50


class GadgetFilter(django_filters.FilterSet):  # type: ignore[misc]
    price = django_filters.RangeFilter(help_text="Price bounds.")
    made_on = django_filters.DateFromToRangeFilter()
    status = django_filters.ChoiceFilter(choices=Gadget.Status.choices, help_text="Lifecycle state.")
    size = django_filters.ChoiceFilter(choices=Gadget.Size.choices)
    active = django_filters.BooleanFilter()
    publisher = django_filters.ModelChoiceFilter(queryset=Publisher.objects.all())
    name = django_filters.CharFilter(lookup_expr="icontains", help_text="Part of the name.")
    stock_min = django_filters.NumberFilter(field_name="stock", lookup_expr="gte")
    id__in = django_filters.BaseInFilter(field_name="id")

    class Meta:
        model = Gadget
        fields = {"code": ["exact"], "made_at": ["gte", "lte"]}


class GadgetViewSet(viewsets.ModelViewSet):  # type: ignore[misc]
    """Gadgets of the catalogue, with their publisher and tags."""

    queryset = Gadget.objects.select_related("publisher").prefetch_related("tags")
    permission_classes = [permissions.AllowAny]
    pagination_class = Pages
    filter_backends = [DjangoFilterBackend, filters.SearchFilter, filters.OrderingFilter]
    filterset_class = GadgetFilter
    search_fields = ["name", "code"]
    ordering_fields = ["name", "price", "stock"]

    def get_serializer_class(self) -> Any:
        if self.serializer_class is not None:  # an @action's own
            return self.serializer_class
        # Reads the request (as many projects do): schema building gives the view a real one.
        if self.request.query_params.get("short") and not self.request.user.is_staff:
            return GadgetSummarySerializer
        return GadgetSerializer

    def get_queryset(self) -> Any:
        queryset = super().get_queryset()
        if self.request.user.is_authenticated:
            return queryset
        return queryset.exclude(status="retired") if self.action == "list" else queryset

    @action(detail=True, methods=["post"], serializer_class=BumpSerializer)
    def bump(self, request: Request, pk: str | None = None) -> Response:
        """Add stock to a gadget."""
        gadget = self.get_object()
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        gadget.stock += serializer.validated_data["by"]
        gadget.save(update_fields=["stock"])
        return Response(GadgetSerializer(gadget, context=self.get_serializer_context()).data)

    @action(detail=False, methods=["get"])
    def stats(self, request: Request) -> Response:
        """Counts and the average price over all gadgets."""
        average = Gadget.objects.aggregate(a=Avg("price"))["a"]
        data = {
            "gadgets": Gadget.objects.count(),
            "live": Gadget.objects.filter(status="live").count(),
            "average_price": average,
        }
        return Response(StatsSerializer(data).data)


class PublisherViewSet(viewsets.ModelViewSet):  # type: ignore[misc]
    """Publishers, each with the number of its gadgets."""

    queryset = Publisher.objects.all()
    serializer_class = PublisherSerializer
    permission_classes = [permissions.AllowAny]
    filter_backends = [DjangoFilterBackend]
    filterset_fields = ["country"]


class TagViewSet(viewsets.ReadOnlyModelViewSet):  # type: ignore[misc]
    """Tags gadgets carry."""

    queryset = Tag.objects.all()
    serializer_class = TagSerializer
    permission_classes = [permissions.AllowAny]
