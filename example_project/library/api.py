"""The library's REST API (Django REST framework): serializers, viewsets, a plain view and the router.

``library/mcp/api.py`` exposes these same views as MCP tools, so the HTTP API and the MCP tools
share one implementation: authentication, permissions, validation and pagination included.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from rest_framework import filters, permissions, serializers, viewsets
from rest_framework.pagination import PageNumberPagination
from rest_framework.routers import DefaultRouter

from .models import Author, Book


class AuthorSerializer(serializers.ModelSerializer):  # type: ignore[misc]
    class Meta:
        model = Author
        fields = ["id", "name", "born", "bio"]


class BookSerializer(serializers.ModelSerializer):  # type: ignore[misc]
    author_name = serializers.CharField(source="author.name", read_only=True)

    class Meta:
        model = Book
        fields = ["id", "title", "author", "author_name", "isbn", "published", "genre", "available_copies"]


class Pages(PageNumberPagination):  # type: ignore[misc]
    page_size = 20


class AuthorViewSet(viewsets.ModelViewSet):  # type: ignore[misc]
    """Authors of the books in the catalogue."""

    queryset = Author.objects.all()
    serializer_class = AuthorSerializer
    # Anyone may read; writing needs the model's add/change/delete permission.
    permission_classes = [permissions.DjangoModelPermissionsOrAnonReadOnly]
    pagination_class = Pages
    filter_backends = [filters.SearchFilter]
    search_fields = ["name"]


class BookViewSet(viewsets.ReadOnlyModelViewSet):  # type: ignore[misc]
    """The catalogue: every book with its author and the copies on the shelf."""

    queryset = Book.objects.select_related("author")
    serializer_class = BookSerializer
    pagination_class = Pages
    filter_backends = [filters.SearchFilter, filters.OrderingFilter]
    search_fields = ["title", "author__name", "summary"]
    ordering_fields = ["title", "published"]


def book_card(request: HttpRequest, pk: int) -> HttpResponse:
    """A plain-text catalogue card for one book (a plain Django view)."""
    book = get_object_or_404(Book.objects.select_related("author"), pk=pk)
    lines: list[Any] = [book.title, f"{book.author.name}, {book.published}", f"ISBN {book.isbn}"]
    return HttpResponse("\n".join(str(line) for line in lines), content_type="text/plain")


router = DefaultRouter()
router.register("authors", AuthorViewSet)
router.register("books", BookViewSet)
