"""Library DRF API views and plain views exposed as MCP tools.

Each tool calls the real view with a request whose user is the MCP caller, so the API's
permission classes decide: anonymous callers see the read tools only, and ``api_author_create``
appears for users holding ``library.add_author``.
"""

from django_mcp import site

from ..api import AuthorViewSet, BookViewSet, book_card

#: Every tool here works on this library's own data: no open world (the HTTP method gives the other hints).
OWN_DATA = {"openWorldHint": False}

# api_book_list (search, ordering, page) and api_book_retrieve (pk).
site.register_drf(BookViewSet, basename="api_book", annotations=OWN_DATA)
# api_author_list and api_author_create (DjangoModelPermissionsOrAnonReadOnly decides who sees it).
site.register_drf(AuthorViewSet, basename="api_author", actions=["list", "create"], annotations=OWN_DATA)
# A plain Django view: its `pk: int` parameter becomes the tool's argument.
site.register_view(book_card, name="book_card", title="Book card", annotations=OWN_DATA)
