"""Library model resources exposed over MCP (ModelResource).

Authors and books are the public catalogue: anyone connected may read them.
Loans name borrowers: library staff (``library.view_loan``) read every loan, a
member (``library.add_loan``) only their own, anyone else none (the template is
not even listed for them).
"""

from typing import Any

from django.db.models import Model, QuerySet

from django_mcp import Context, ModelResource, site

from ..models import Author, Book, Loan


class PublicCatalogue(ModelResource):
    def has_permission(self, ctx: Context, obj: Model | None = None) -> bool:
        return True  # the catalogue is public, even to anonymous callers


@site.register
class AuthorResource(PublicCatalogue):
    """django://library/author/{pk}: an author, with their books as resource URIs."""

    model = Author
    fields = ["name", "born", "bio", "books"]
    search_fields = ["name"]
    prefetch_related = ["books"]  # the reverse relation, as the books' resource URIs


@site.register
class BookResource(PublicCatalogue):
    """django://library/book/{pk}: a book; its author is the author's resource URI."""

    model = Book
    fields = ["title", "author", "isbn", "published", "genre", "summary", "available_copies"]
    select_related = ["author"]  # str(book) shows the author: one join instead of a query per book
    search_fields = ["title", "author__name", "isbn"]
    description = "A book in the catalogue, with its author and the copies on the shelf."


@site.register
class LoanResource(ModelResource):
    """django://library/loan/{pk}: who borrowed which book; staff read all loans, members their own."""

    model = Loan
    fields = ["book", "borrower", "lent", "due", "returned"]  # not ``member``: an account id is not for clients
    select_related = ["book__author"]
    search_fields = ["borrower", "book__title"]

    def has_permission(self, ctx: Context, obj: Model | None = None) -> bool:
        user: Any = ctx.user
        return bool(user.has_perm("library.view_loan") or user.has_perm("library.add_loan"))

    def get_queryset(self, ctx: Context) -> QuerySet[Any]:
        """Per-object rule: without ``library.view_loan`` only the caller's own loans exist (reads, lists,
        completions and subscriptions all start here)."""
        user: Any = ctx.user
        loans = super().get_queryset(ctx)
        if user.has_perm("library.view_loan"):
            return loans
        return loans.filter(member=user) if user.is_authenticated else loans.none()
