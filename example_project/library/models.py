"""A small lending library: authors, books and loans."""

from __future__ import annotations

import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone


def validate_isbn13(value: str) -> None:
    """An ISBN-13: 13 digits whose weighted sum (1, 3, 1, 3, ...) is a multiple of 10."""
    if len(value) != 13 or not value.isdigit():
        raise ValidationError("An ISBN-13 has exactly 13 digits (no dashes).")
    if sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(value)) % 10:
        raise ValidationError("%(value)s has a wrong check digit.", params={"value": value})


class Author(models.Model):
    name = models.CharField(max_length=200, unique=True)
    born = models.PositiveSmallIntegerField("year of birth", null=True, blank=True)
    bio = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Book(models.Model):
    class Genre(models.TextChoices):
        NOVEL = "novel", "Novel"
        SCIENCE_FICTION = "science-fiction", "Science fiction"
        HORROR = "horror", "Horror"
        MYSTERY = "mystery", "Mystery"
        ADVENTURE = "adventure", "Adventure"
        POETRY = "poetry", "Poetry"
        NON_FICTION = "non-fiction", "Non-fiction"

    title = models.CharField(max_length=300)
    author = models.ForeignKey(Author, on_delete=models.PROTECT, related_name="books")
    isbn = models.CharField("ISBN-13", max_length=13, unique=True, validators=[validate_isbn13])
    published = models.PositiveSmallIntegerField("year first published")
    genre = models.CharField(max_length=20, choices=Genre.choices, default=Genre.NOVEL)
    summary = models.TextField(blank=True)
    available_copies = models.PositiveSmallIntegerField(default=1, help_text="Copies on the shelf right now.")

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return f"{self.title} ({self.author})"


class LoanQuerySet(models.QuerySet["Loan"]):
    def active(self) -> LoanQuerySet:
        return self.filter(returned__isnull=True)

    def overdue(self, today: datetime.date | None = None) -> LoanQuerySet:
        return self.active().filter(due__lt=today or timezone.localdate())


class Loan(models.Model):
    """A copy of a book out on loan.

    ``member`` is the account the loan belongs to (a member borrowing for themselves);
    loans made at the desk for someone without an account have none. Who may see or
    end a loan follows from it: its member, or desk staff with the model permissions.
    """

    book = models.ForeignKey(Book, on_delete=models.PROTECT, related_name="loans")
    borrower = models.CharField("borrower name", max_length=200)
    member = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="loans",
        help_text="The member account the loan belongs to; empty for a loan made at the desk.",
    )
    lent = models.DateField(default=timezone.localdate)
    due = models.DateField("due date")
    returned = models.DateField("returned on", null=True, blank=True, help_text="Empty while the book is out.")

    objects = LoanQuerySet.as_manager()

    class Meta:
        ordering = ["-lent", "-id"]
        permissions = [("lend_to_others", "Can lend books to other people (loan desk)")]

    def __str__(self) -> str:
        return f"{self.book.title} → {self.borrower}"

    @property
    def is_overdue(self) -> bool:
        return self.returned is None and self.due < timezone.localdate()
