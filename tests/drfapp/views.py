"""DRF views of every kind the suite maps to tools, and plain Django views."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required, permission_required
from django.core.cache.backends.locmem import LocMemCache
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from rest_framework import filters, permissions, serializers, status, viewsets
from rest_framework.decorators import action, api_view, permission_classes, throttle_classes
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from .models import Item
from .serializers import BulkSerializer, ItemSerializer, RestockSerializer, StatsSerializer


class TwoPerPage(PageNumberPagination):  # type: ignore[misc]
    page_size = 2


class ItemViewSet(viewsets.ModelViewSet):  # type: ignore[misc]
    """Items on the shelves."""

    queryset = Item.objects.select_related("owner")
    serializer_class = ItemSerializer
    permission_classes = [permissions.IsAuthenticated]
    pagination_class = TwoPerPage
    filter_backends = [filters.SearchFilter, filters.OrderingFilter]
    search_fields = ["name"]
    ordering_fields = ["name", "quantity"]

    def perform_create(self, serializer: Any) -> None:
        serializer.save(owner=self.request.user)

    @action(detail=True, methods=["post"], serializer_class=RestockSerializer)
    def restock(self, request: Request, pk: str | None = None) -> Response:
        """Add copies of an item to the shelf."""
        item = self.get_object()
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        item.quantity += serializer.validated_data["amount"]
        item.save(update_fields=["quantity"])
        return Response(ItemSerializer(item).data)


class StaffOnly(permissions.BasePermission):  # type: ignore[misc]
    message = "Only staff may see the stock statistics."

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_staff)


class StatsView(APIView):  # type: ignore[misc]
    """Totals over all items, for staff."""

    permission_classes = [StaffOnly]

    def get(self, request: Request) -> Response:
        total = Item.objects.aggregate(n=Sum("quantity"))["n"] or 0
        data = {"items": Item.objects.count(), "total_quantity": total, "caller": request.user.get_username()}
        return Response(StatsSerializer(data).data)


class OncePerMinute(UserRateThrottle):  # type: ignore[misc]
    # Per server process: the throttle tests start from a fresh count with each server.
    cache = LocMemCache("drfapp-throttle", {})
    rate = "2/min"


@api_view(["POST"])
@permission_classes([permissions.IsAuthenticated])
@throttle_classes([OncePerMinute])
def bulk_create(request: Request) -> Response:
    """Create several items at once; all or nothing (a failure rolls back the ones before it)."""
    serializer = BulkSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    items = serializer.save()
    for item in items:
        if item.name.startswith("bad"):
            raise serializers.ValidationError({"names": [f"{item.name!r} is a bad name."]})
    return Response(ItemSerializer(items, many=True).data, status=status.HTTP_201_CREATED)


@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def ping(request: Request) -> Response:
    """Who the API sees (works for anonymous callers too)."""
    return Response({"user": request.user.get_username() or "anonymous", "auth": request.user.is_authenticated})


# -- plain Django views -------------------------------------------------------------------------------------


def item_label(request: HttpRequest, pk: int) -> HttpResponse:
    """A printable shelf label for one item (plain text)."""
    item = get_object_or_404(Item, pk=pk)
    upper = request.GET.get("upper") == "True"
    label = f"{item.name} x{item.quantity}"
    return HttpResponse(label.upper() if upper else label, content_type="text/plain")


@login_required
def my_items(request: HttpRequest) -> JsonResponse:
    """The caller's own items as JSON."""
    names = list(Item.objects.filter(owner=request.user).values_list("name", flat=True))
    return JsonResponse({"user": request.user.get_username(), "names": names})


@permission_required("drfapp.change_item", raise_exception=True)
def rename_item(request: HttpRequest, pk: int) -> JsonResponse:
    """Rename an item (needs the change permission); the new name comes as form data."""
    if request.method != "POST":
        return JsonResponse({"error": "POST only"}, status=405)
    item = get_object_or_404(Item, pk=pk)
    name = request.POST.get("name", "").strip()
    if not name:
        return JsonResponse({"error": "name: This field is required."}, status=400)
    item.name = name
    item.save(update_fields=["name"])
    if name.startswith("bad"):
        return JsonResponse({"error": f"{name!r} is a bad name."}, status=400)
    return JsonResponse({"id": item.pk, "name": item.name})
