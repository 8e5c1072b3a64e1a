"""Library prompts rendered from Django templates (TemplatePrompt).

The form's fields are the prompt's arguments: the client lists them with their help
texts, completes ``book`` from the catalogue (a ModelChoiceField: a queryset lookup
in the database) and ``audience``/``tone`` from their choices, and a bad value comes
back as a -32602 error naming the field. The template
(``library/templates/library/prompts/review.txt``) uses ``{% load mcp %}`` to write
a short conversation and to embed the book's resource, read with the caller's rights.
"""

from django import forms
from django.utils.translation import gettext_lazy as _

from django_mcp import TemplatePrompt, site

from ..models import Book


class ReviewForm(forms.Form):
    book = forms.ModelChoiceField(
        queryset=Book.objects.select_related("author"),
        to_field_name="isbn",
        label=_("Book"),
        help_text=_("The book's ISBN-13; completion offers the catalogue."),
    )
    audience = forms.ChoiceField(
        choices=[("children", _("Children")), ("teenagers", _("Teenagers")), ("adults", _("Adults"))],
        required=False,
        initial="adults",
        help_text=_("Who the review is written for."),
    )
    tone = forms.ChoiceField(
        choices=[("warm", _("Warm")), ("critical", _("Critical")), ("playful", _("Playful"))],
        required=False,
        initial="warm",
    )
    words = forms.IntegerField(
        min_value=50, max_value=800, required=False, initial=250, help_text=_("Length, in words.")
    )


site.register(
    TemplatePrompt(
        "review_book",
        "library/prompts/review.txt",
        form=ReviewForm,
        title=_("Review a book"),
        description=_("Ask for a review of one book of the catalogue, with its catalogue entry attached."),
    )
)
