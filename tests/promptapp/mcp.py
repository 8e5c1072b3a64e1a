"""Template prompts (and the resources they embed) on the default site."""

from __future__ import annotations

import base64
from typing import Any

from django.contrib.auth.models import Group
from django.core.files.base import ContentFile
from django.utils.translation import gettext_lazy as _

from django_mcp import Argument, Context, TemplatePrompt, site
from django_mcp.exceptions import ResourceNotFound
from django_mcp.template_prompts import from_queryset

from .forms import OwnGroupForm, ReviewForm

#: A 1x1 transparent PNG.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
NOTES = {"welcome": "# Welcome\n\nBooks are due in <3> weeks & renewals are free.", "rules": "# Rules\n\nBe quiet."}


@site.resource("prompt://notes/{slug}", name="note", mime_type="text/markdown")
def note(slug: str) -> str:
    if slug not in NOTES:
        raise ResourceNotFound(f"prompt://notes/{slug}")
    return NOTES[slug]


@site.resource("prompt://secret", name="secret", mime_type="text/plain", permissions=["auth.view_group"])
def secret() -> str:
    return "the staff door code is 4321"


site.register(
    TemplatePrompt(
        "review_book",
        "promptapp/review.txt",
        form=ReviewForm,
        title=_("Review a book"),
        description="Ask for a book review.",
    )
)


async def complete_text(value: str, ctx: Context, context: dict[str, str]) -> list[str]:
    """A callable completer: sees the caller and the other arguments already given."""
    who = "anonymous" if not ctx.user.is_authenticated else ctx.user.get_username()
    return [f"{value}…for {who} ({context.get('style', 'any')})"]


site.register(
    TemplatePrompt(
        "summarize",
        "promptapp/plain.txt",
        arguments=[
            Argument("text", description="The text to summarise."),
            Argument("style", required=False, choices=["short", "long", "bullet points"]),
        ],
        complete={"text": complete_text},
    )
)


class EmbedPrompt(TemplatePrompt):
    """Show a note and the library logo."""

    name = "embed_note"
    template_name = "promptapp/embed.txt"
    extra_context = {"logo": PNG}
    complete = {"slug": sorted(NOTES)}

    def get_context_data(self, form: Any, ctx: Context) -> dict[str, Any]:
        data = super().get_context_data(form, ctx)
        data["logo_file"] = ContentFile(PNG, name="logo.png")
        return data


site.register(EmbedPrompt(arguments=["slug"]))
site.register(TemplatePrompt("read_secret", "promptapp/secret.txt"))
site.register(TemplatePrompt("say_yes", "promptapp/i18n.txt", title=_("Review a book")))
site.register(
    TemplatePrompt(
        "club_newsletter",
        "promptapp/club.txt",
        arguments=[Argument("club", description="The club's name.")],
        permissions=["auth.view_group"],
        complete={"club": from_queryset(Group.objects.all(), "name")},
    )
)


class OwnClubPrompt(TemplatePrompt):
    name = "own_club"
    template_name = "promptapp/club.txt"
    form_class = OwnGroupForm

    def get_form_kwargs(self, ctx: Context) -> dict[str, Any]:
        return {"user": ctx.user}


site.register(OwnClubPrompt())
site.register(TemplatePrompt("nested", "promptapp/nested.txt"))


def group_names(value: str) -> list[str]:
    """A sync completer using the ORM: the server runs it in a thread."""
    return list(Group.objects.filter(name__startswith=value).order_by("name").values_list("name", flat=True))


@site.prompt(complete={"club": group_names})
def club_greeting(club: str) -> str:
    return f"Greet the {club} club."
