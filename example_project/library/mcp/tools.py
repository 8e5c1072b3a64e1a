"""The library over MCP: autodiscovered by django_mcp at startup, like ``admin.py``.

Sync tools run in django_mcp's bounded thread pool (``SYNC_WORKERS``), each call handled like a
Django request, so they use the ORM as usual;
async tools use the async ORM API (``afirst``, ``acount``...) or hand sync code to the same pool
with ``await run_sync(fn, *args)``. Nothing here blocks the event loop.

Who may do what (copy this pattern, not just the tools):

- The catalogue (search_books, book_details, library_stats) is open to every signed-in caller.
  Loans name people: book_details lists every active loan only to holders of ``library.view_loan``
  (desk staff), and to anyone else only their own.
- ``lend_book`` needs ``library.add_loan`` (members): a member borrows in their own name. Lending
  to somebody else is a desk operation: ``library.lend_to_others``.
- ``return_book`` needs ``library.add_loan`` or ``library.change_loan``, and then the loan itself:
  a member ends only their own loans; ``library.change_loan`` (desk staff) ends any. A loan the
  caller may not touch gets the same answer as a loan that does not exist.
- ``export_catalogue`` exports the catalogue (no loans, so open like search_books). It may take a
  while on a big catalogue, so it is declared ``task="optional"``: a client that supports the tasks
  extension gets a task handle at once and polls it, while ``manage.py db_worker`` runs the export as
  the same caller; other clients get the result in the request, as usual.

Declared permissions hide a tool from callers without them (tools/list) and refuse the call;
object checks run inside the tool, where the object is known.
"""

import csv
import datetime
import io
import json
from typing import Annotated, Any, Literal

from asgiref.sync import async_to_sync
from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone
from pydantic import BaseModel, Field

from django_mcp import Context, Message, ToolError, run_sync, site, user
from django_mcp.content import ContentBlock, embedded_resource, text
from django_mcp.exceptions import ResourceNotFound
from django_mcp.ui import UI

from ..models import Author, Book, Loan, LoanQuerySet

#: A tool that only reads the library's own data (host directories want all three hints set).
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}


# -- output types: they become each tool's outputSchema and its structuredContent ---------------------------


class BookSummary(BaseModel):
    id: int
    title: str
    author: str
    published: int = Field(description="Year of first publication")
    genre: str
    available_copies: int = Field(description="Copies on the shelf now; 0 means all are lent out")
    uri: str = Field(description="The book's resource URI")


class SearchResults(BaseModel):
    total: int = Field(description="How many books match; `books` holds at most `limit` of them")
    books: list[BookSummary]


class LoanOut(BaseModel):
    id: int
    book_id: int
    title: str
    borrower: str
    lent: datetime.date
    due: datetime.date
    returned: datetime.date | None = None
    overdue: bool


class BookDetails(BookSummary):
    isbn: str
    summary: str
    author_born: int | None
    active_loans: list[LoanOut]


class LibraryStats(BaseModel):
    authors: int
    books: int = Field(description="Titles in the catalogue")
    copies_on_shelf: int
    active_loans: int
    overdue_loans: int
    books_per_genre: dict[str, int]


class Borrower(BaseModel):
    """What lend_book asks the user for when no borrower was given (a flat form)."""

    name: str = Field(description="Full name of the person borrowing the book", min_length=2)


# -- helpers ---------------------------------------------------------------------------------------------------


def book_uri(book_id: int) -> str:
    return f"library://books/{book_id}"


def _summary(book: Book) -> BookSummary:
    return BookSummary(
        id=book.pk,
        title=book.title,
        author=book.author.name,
        published=book.published,
        genre=book.get_genre_display(),
        available_copies=book.available_copies,
        uri=book_uri(book.pk),
    )


def _loan_out(loan: Loan) -> LoanOut:
    return LoanOut(
        id=loan.pk,
        book_id=loan.book_id,
        title=loan.book.title,
        borrower=loan.borrower,
        lent=loan.lent,
        due=loan.due,
        returned=loan.returned,
        overdue=loan.is_overdue,
    )


def _stats() -> LibraryStats:
    genres = dict(Book.Genre.choices)
    per_genre = Book.objects.values("genre").annotate(n=Count("id")).order_by("genre")
    return LibraryStats(
        authors=Author.objects.count(),
        books=Book.objects.count(),
        copies_on_shelf=Book.objects.aggregate(n=Sum("available_copies"))["n"] or 0,
        active_loans=Loan.objects.active().count(),
        overdue_loans=Loan.objects.overdue().count(),
        books_per_genre={genres.get(row["genre"], row["genre"]): row["n"] for row in per_genre},
    )


def _visible_loans(caller: Any) -> LoanQuerySet:
    """The loans ``caller`` may see: all of them with ``library.view_loan``, else only their own."""
    loans = Loan.objects.all()
    if caller.has_perm("library.view_loan"):
        return loans
    if not caller.is_authenticated:
        return loans.none()
    return loans.filter(member=caller)


def _may_end(caller: Any, loan: Loan) -> bool:
    """Desk staff (``library.change_loan``) end any loan; a member only a loan of their own."""
    if caller.has_perm("library.change_loan"):
        return True
    return caller.has_perm("library.add_loan") and loan.member_id is not None and loan.member_id == caller.pk


def _can_return(ctx: Context) -> bool:
    """Who sees return_book at all: members and desk staff (the loan itself is checked in the tool)."""
    caller: Any = ctx.user
    return bool(caller.has_perm("library.add_loan") or caller.has_perm("library.change_loan"))


async def _book_changed(book_id: int) -> None:
    """Tell clients subscribed to the book's resource, or to the totals, that they changed."""
    await site.notify_resource_updated(book_uri(book_id))
    await site.notify_resource_updated("library://stats")


# -- tools -----------------------------------------------------------------------------------------------------


@site.tool(title="Search the catalogue", annotations=READ_ONLY)
def search_books(
    query: str = "",
    genre: Book.Genre | None = None,
    available_only: bool = False,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
) -> SearchResults:
    """Find books whose title, author or summary contains every word of the query.

    Args:
        query: words to look for (case-insensitive); empty lists the whole catalogue
        genre: only books of this genre
        available_only: only books with a copy on the shelf
        limit: at most this many books in the answer
    """
    books = Book.objects.select_related("author")
    for word in query.split():
        books = books.filter(Q(title__icontains=word) | Q(author__name__icontains=word) | Q(summary__icontains=word))
    if genre is not None:
        books = books.filter(genre=genre)
    if available_only:
        books = books.filter(available_copies__gt=0)
    return SearchResults(total=books.count(), books=[_summary(b) for b in books[:limit]])


#: The MCP App of the book tools: hosts that render apps (Claude, ChatGPT, VS Code...) show a card, drawn by
#: these Django templates with each result, whose buttons call lend_book and return_book through the host.
BOOK_CARD = UI(template="library/ui/book_card.html", css=["library/app.css"], title="Book card")
LOAN_CARD = UI(template="library/ui/loan_card.html", css=["library/app.css"], title="Loan")


@site.tool(title="Book details", annotations=READ_ONLY, ui=BOOK_CARD)
def book_details(ctx: Context, book_id: int) -> BookDetails:
    """Everything about one book: ISBN, summary, author and its active loans you may see.

    Library staff (``library.view_loan``) see every active loan of the book; members see their own.

    Args:
        book_id: the book's id, as returned by search_books
    """
    book = Book.objects.select_related("author").filter(pk=book_id).first()
    if book is None:
        raise ToolError(f"There is no book with id {book_id}. Use search_books to find ids.")
    loans = _visible_loans(ctx.user).active().filter(book=book).select_related("book")
    return BookDetails(
        **_summary(book).model_dump(),
        isbn=book.isbn,
        summary=book.summary,
        author_born=book.author.born,
        active_loans=[_loan_out(loan) for loan in loans],
    )


def _lend(book_id: int, borrower: str, member: Any, days: int) -> Loan:
    with transaction.atomic():
        # A conditional UPDATE: two concurrent loans can never take the last copy twice.
        if not Book.objects.filter(pk=book_id, available_copies__gt=0).update(
            available_copies=F("available_copies") - 1
        ):
            raise ToolError("No copy of that book is on the shelf any more.")
        today = timezone.localdate()
        loan = Loan.objects.create(
            book_id=book_id, borrower=borrower, member=member, lent=today, due=today + datetime.timedelta(days)
        )
    return Loan.objects.select_related("book").get(pk=loan.pk)


@site.tool(
    title="Lend a book",
    annotations={"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False},
    permissions=["library.add_loan"],
    ui=LOAN_CARD,
)
async def lend_book(
    ctx: Context,
    book_id: int,
    borrower: str | None = None,
    days: Annotated[int, Field(ge=1, le=60)] = 14,
) -> LoanOut:
    """Lend a copy of a book; it is due back after `days` days.

    A member borrows in their own name. Library staff (``library.lend_to_others``) lend to anyone:
    without a borrower the tool asks the user for one (elicitation), when the client supports it.

    Args:
        book_id: the book to lend
        borrower: the borrower's full name (library staff only; members borrow for themselves)
        days: length of the loan in days
    """
    caller: Any = ctx.user
    desk = await run_sync(caller.has_perm, "library.lend_to_others")
    own_name = caller.get_full_name() or caller.get_username()
    if borrower and not desk and borrower != own_name:
        raise ToolError("Only library staff lend books to other people; leave out the borrower to borrow it yourself.")
    # Everything before ctx.elicit() only reads: in the stateless (2026-07-28) era the client answers the
    # elicitation by calling the tool again, and this code runs a second time.
    book = await Book.objects.filter(pk=book_id).afirst()
    if book is None:
        raise ToolError(f"There is no book with id {book_id}. Use search_books to find ids.")
    if book.available_copies < 1:
        raise ToolError(f"All copies of {book.title!r} are lent out.")
    if not desk:
        borrower = own_name
    elif not borrower:
        if "elicitation" not in ctx.client_capabilities:
            raise ToolError("Who is borrowing the book? Call lend_book again with the borrower's name.")
        answer = await ctx.elicit(f"Who is borrowing {book.title!r}?", Borrower)
        if answer.action != "accept" or not answer.content:
            raise ToolError(f"Nothing lent: the user chose to {answer.action} the question.")
        borrower = Borrower.model_validate(answer.content).name
    member = caller if borrower == own_name else None  # a loan at the desk for a walk-in has no member
    loan = await run_sync(_lend, book_id, borrower, member, days)
    await ctx.info(f"Lent {loan.book.title!r} to {loan.borrower}, due {loan.due.isoformat()}", logger="library")
    await _book_changed(book_id)
    return _loan_out(loan)


@site.tool(
    title="Return a book",
    annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
    check=_can_return,
    ui=LOAN_CARD,
)
def return_book(ctx: Context, loan_id: int) -> LoanOut:
    """Record that a lent book came back; its copy goes back on the shelf.

    Members return their own loans; library staff (``library.change_loan``) any loan.

    Args:
        loan_id: the loan's id, as returned by lend_book or book_details
    """
    with transaction.atomic():
        loan = Loan.objects.select_for_update().select_related("book").filter(pk=loan_id).first()
        if loan is None or not _may_end(ctx.user, loan):  # someone else's loan: as if it did not exist
            raise ToolError(f"There is no loan with id {loan_id}.")
        if loan.returned is not None:
            raise ToolError(f"Loan {loan_id} was already returned on {loan.returned.isoformat()}.")
        loan.returned = timezone.localdate()
        loan.save(update_fields=["returned"])
        Book.objects.filter(pk=loan.book_id).update(available_copies=F("available_copies") + 1)
    # A sync tool runs in a thread of the server's event loop: async_to_sync reaches back into it.
    async_to_sync(_book_changed)(loan.book_id)
    return _loan_out(loan)


@site.tool(title="Library statistics", annotations=READ_ONLY)
def library_stats() -> LibraryStats:
    """Totals: authors, books, copies on the shelf, loans out and overdue, books per genre.

    Open to every caller on purpose: counts only, no borrower.
    """
    return _stats()


#: Books read (and written out) per step of export_catalogue; each step reports progress and checks cancellation.
EXPORT_CHUNK = 100
EXPORT_FIELDS = ["id", "title", "author", "author_born", "isbn", "published", "genre", "available_copies", "summary"]


def _export_row(book: Book) -> dict[str, Any]:
    return {
        "id": book.pk,
        "title": book.title,
        "author": book.author.name,
        "author_born": book.author.born,
        "isbn": book.isbn,
        "published": book.published,
        "genre": book.genre,
        "available_copies": book.available_copies,
        "summary": book.summary,
    }


@site.tool(title="Export the catalogue", annotations=READ_ONLY, task="optional")
async def export_catalogue(ctx: Context, format: Literal["csv", "json"] = "csv") -> list[ContentBlock]:
    """Export every book of the catalogue as CSV or JSON (one row per book, no loans).

    A long job on a big catalogue: clients that support tasks get a task to poll, whose status
    message follows the export's progress. The export comes back as an embedded resource.

    Args:
        format: "csv" (a header line, then one line per book) or "json" (a list of objects)
    """
    total = await Book.objects.acount()
    rows: list[dict[str, Any]] = []
    last_pk = 0
    while True:
        ctx.check_cancelled()  # the task was cancelled (tasks/cancel): stop between two chunks
        # Keyset pagination: each chunk is one short query, and books added meanwhile do not shift the pages.
        chunk = [
            _export_row(book)
            async for book in Book.objects.select_related("author").filter(pk__gt=last_pk).order_by("pk")[:EXPORT_CHUNK]
        ]
        if not chunk:
            break
        rows.extend(chunk)
        last_pk = chunk[-1]["id"]
        await ctx.report_progress(len(rows), max(total, len(rows)), message=f"Exported {len(rows)} of {total} books")
    # The export travels in the result, which a task keeps in its row until it expires: right for a catalogue of
    # thousands of books. For far bigger files, write them to your storage and return a resource_link instead.
    if format == "json":
        body, mime = json.dumps(rows, ensure_ascii=False, indent=1), "application/json"
    else:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=EXPORT_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
        body, mime = out.getvalue(), "text/csv"
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    await ctx.info(f"Exported {len(rows)} books as {format}", logger="library")
    return [
        text(f"Exported {len(rows)} books as {format.upper()} ({len(body.encode())} bytes)."),
        embedded_resource(f"library://exports/catalogue-{stamp}.{format}", text=body, mime_type=mime),
    ]


# -- resources -------------------------------------------------------------------------------------------------


@site.resource("library://stats", name="stats", title="Library statistics", mime_type="application/json")
def stats_resource() -> str:
    """The library's totals as JSON (the same data as the library_stats tool)."""
    return _stats().model_dump_json(indent=2)


async def complete_book_id(value: str) -> list[str]:
    """Completion for {book_id}. Completers run on the event loop, hence the async ORM call."""
    return [
        str(pk) async for pk in Book.objects.order_by("pk").values_list("pk", flat=True) if str(pk).startswith(value)
    ]


@site.resource(
    "library://books/{book_id}",
    name="book",
    title="Book",
    mime_type="text/markdown",
    complete={"book_id": complete_book_id},
)
def book_resource(book_id: str) -> str:
    """One book as a Markdown page: author, year, genre, availability and summary."""
    valid = book_id.isascii() and book_id.isdigit() and len(book_id) <= 18  # "²" is a digit to isdigit() only
    book = Book.objects.select_related("author").filter(pk=int(book_id)).first() if valid else None
    if book is None:
        raise ResourceNotFound(f"library://books/{book_id}")
    shelf = f"{book.available_copies} on the shelf" if book.available_copies else "all copies lent out"
    return (
        f"# {book.title}\n\n"
        f"*{book.author.name}*, {book.published}. {book.get_genre_display()}. ISBN {book.isbn}. {shelf}.\n\n"
        f"{book.summary}\n"
    )


# -- prompts ---------------------------------------------------------------------------------------------------


@site.prompt(title="Recommend books", complete={"reader": ["children", "teenagers", "adults"]})
def recommend_books(interests: str, reader: str = "adults") -> list[Message]:
    """Ask the model to recommend books from this library's shelves for someone's interests."""
    shelf = Book.objects.select_related("author").filter(available_copies__gt=0)
    catalogue = "\n".join(f"- [{b.pk}] {b.title} by {b.author.name} ({b.published}): {b.summary}" for b in shelf)
    return [
        user(
            f"You are a librarian. Recommend up to three books for {reader} interested in: {interests}.\n"
            "Only recommend books from this list of books currently on the shelf, "
            "and say in one sentence why each one fits.\n\n"
            f"{catalogue or '(no book is on the shelf right now)'}"
        )
    ]
