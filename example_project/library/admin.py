from django.contrib import admin

from .models import Author, Book, Loan


class BookInline(admin.TabularInline):
    model = Book
    fields = ("title", "isbn", "published", "available_copies")
    extra = 0


@admin.register(Author)
class AuthorAdmin(admin.ModelAdmin):
    list_display = ("name", "born")
    search_fields = ("name",)
    inlines = [BookInline]


@admin.register(Book)
class BookAdmin(admin.ModelAdmin):
    list_display = ("title", "author", "published", "genre", "isbn", "available_copies")
    list_filter = ("genre",)
    search_fields = ("title", "author__name", "isbn", "summary")
    autocomplete_fields = ("author",)


@admin.register(Loan)
class LoanAdmin(admin.ModelAdmin):
    list_display = ("book", "borrower", "member", "lent", "due", "returned")
    list_filter = ("returned", "due")
    search_fields = ("book__title", "borrower")
    autocomplete_fields = ("book",)
    date_hierarchy = "lent"
