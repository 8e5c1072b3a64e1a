"""Library model resources exposed over MCP (ModelResource).

Authors and books are the public catalogue: anyone connected may read them.
Loans name borrowers, so they keep the default rule: only users with the
``library.view_loan`` permission see them.
"""

from django.db.models import Model

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
    """django://library/loan/{pk}: who borrowed which book, readable with ``library.view_loan``."""

    model = Loan
    select_related = ["book__author"]
    search_fields = ["borrower", "book__title"]
