"""``TemplatePrompt``: a Django template as an MCP prompt.

The arguments come from a Django ``Form`` (or are declared with ``Argument``,
which builds one): the form validates and converts them, its errors become a
-32602 error with the field errors in ``data``, ``help_text`` becomes the
argument's description and ``choices``/querysets feed ``completion/complete``.
The template is rendered as text (no HTML autoescaping: the reader is a model,
not a browser) in the caller's language. ``{% load mcp %}`` splits the output
into several user/assistant messages and embeds resources, images and audio;
a template without those tags gives one user message.

Tags cannot await, so they leave markers carrying a per-render random nonce in
the text; after rendering, the markers become messages and content blocks, and
embedded resources are read through the server's own ``resources/read``
handler with the caller's access checks.
"""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union, cast

from django import forms
from django.core.exceptions import ImproperlyConfigured
from django.db.models import QuerySet
from django.template import Context as TemplateContext
from django.template import TemplateSyntaxError
from django.template.base import Template as DjangoTemplate
from django.template.loader import get_template
from django.utils.datastructures import MultiValueDict
from django.utils.functional import Promise

from .access import Check
from .content import dump
from .context import Context
from .exceptions import InvalidParams
from .prompts import Prompt
from .resources import Completer
from .runtime import project_middleware
from .runtime.sync_pool import run_sync

StrOrPromise = Union[str, Promise]  # noqa: UP007  # a runtime alias: py3.10 has no str | Promise here
ROLES = ("user", "assistant")
COLLECTOR_KEY = "_mcp_collector"  # a leading underscore: templates cannot reach it
COMPLETION_LIMIT = 100


# -- markers ---------------------------------------------------------------------------


@dataclass
class Embed:
    """What a ``{% load mcp %}`` tag left in the output: a message, a resource to read, or a block."""

    kind: str  # "message" | "resource" | "block"
    role: str = "user"
    text: str = ""
    uri: str = ""
    block: Any = None


class Collector:
    """Per-render store behind the markers; the digits-only nonce survives case filters and is unguessable."""

    def __init__(self) -> None:
        self.nonce = str(secrets.randbelow(10**18)).zfill(18)
        self.items: list[Embed] = []
        self._pattern = re.compile(f"\x00mcp{self.nonce}:(\\d+)\x00")
        self._in_message = False

    @staticmethod
    def of(context: Any) -> Collector | None:
        found = context.get(COLLECTOR_KEY)
        return found if isinstance(found, Collector) else None

    def mark(self, item: Embed) -> str:
        self.items.append(item)
        return f"\x00mcp{self.nonce}:{len(self.items) - 1}\x00"

    @contextlib.contextmanager
    def inside_message(self) -> Iterator[None]:
        if self._in_message:
            raise TemplateSyntaxError("{% message %} blocks cannot be nested")
        self._in_message = True
        try:
            yield
        finally:
            self._in_message = False

    def split(self, text: str) -> list[str | Embed]:
        """``text`` as alternating text pieces and the items its markers stand for."""
        parts: list[str | Embed] = []
        for i, piece in enumerate(self._pattern.split(text)):
            parts.append(self.items[int(piece)] if i % 2 else piece)
        return parts


# -- arguments -------------------------------------------------------------------------


@dataclass(frozen=True)
class Argument:
    """A prompt argument declared without a form (a ``CharField``, or a ``ChoiceField`` with ``choices``)."""

    name: str
    description: StrOrPromise | None = None
    required: bool = True
    title: StrOrPromise | None = None
    choices: Sequence[str] | None = None

    def field(self) -> forms.Field:
        common: dict[str, Any] = {"required": self.required, "help_text": self.description or "", "label": self.title}
        if self.choices is not None:
            return forms.ChoiceField(choices=[(c, c) for c in self.choices], **common)
        return forms.CharField(**common)


def arguments_form(arguments: Iterable[str | Argument]) -> type[forms.Form]:
    """A form class whose fields are ``arguments`` (a plain name is a required text argument)."""
    fields: dict[str, Any] = {}
    for arg in arguments:
        spec = Argument(arg) if isinstance(arg, str) else arg
        fields[spec.name] = spec.field()
    return type("ArgumentsForm", (forms.Form,), fields)


def _flat_choices(choices: Any) -> Iterator[tuple[Any, Any]]:
    for key, label in choices:
        if isinstance(label, (list, tuple)):  # an optgroup
            yield from _flat_choices(label)
        else:
            yield key, label


def from_queryset(queryset: QuerySet[Any], field: str = "pk") -> Completer:
    """A completer offering the ``field`` values of ``queryset`` that start with the typed text (in the DB)."""

    def values(value: str) -> list[str]:
        qs = queryset.filter(**{f"{field}__istartswith": value}) if value else queryset.all()
        return [str(v) for v in qs.values_list(field, flat=True)[: COMPLETION_LIMIT + 1]]

    async def complete(value: str) -> list[str]:
        return await run_sync(values, value)

    return complete


def declared_fields(form_class: type[forms.BaseForm]) -> dict[str, forms.Field]:
    """The fields a form class declares: they are the prompt's arguments."""
    return cast("dict[str, forms.Field]", getattr(form_class, "base_fields", {}))


def _multiple(field: forms.Field) -> bool:
    return isinstance(field, forms.MultipleChoiceField) or bool(getattr(field.widget, "allow_multiple_selected", False))


def _summary(errors: Mapping[str, Sequence[Any]]) -> str:
    return "; ".join(f"{name}: {' '.join(str(m) for m in messages)}" for name, messages in errors.items())


# -- the prompt ------------------------------------------------------------------------


class TemplatePrompt(Prompt):
    """A prompt rendered from a Django template.

    Instance form::

        site.register(TemplatePrompt("review_book", "library/prompts/review.txt", form=ReviewForm))

    Class form (attributes as defaults, hooks to override)::

        class ReviewPrompt(TemplatePrompt):
            '''Ask for a review of one book.'''     # the description
            name = "review_book"
            template_name = "library/prompts/review.txt"
            form_class = ReviewForm

            def get_context_data(self, form, ctx): ...

        site.register(ReviewPrompt())
    """

    template_name: str = ""
    form_class: type[forms.BaseForm] | None = None
    using: str | None = None
    extra_context: Mapping[str, Any] | None = None

    def __init__(
        self,
        name: str | None = None,
        template_name: str | None = None,
        *,
        form: type[forms.BaseForm] | None = None,
        arguments: Iterable[str | Argument] | None = None,
        title: StrOrPromise | None = None,
        description: StrOrPromise | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] | None = None,
        permissions: Sequence[str] | None = None,
        check: Check | None = None,
        complete: Mapping[str, Completer | Sequence[str] | QuerySet[Any]] | None = None,
        using: str | None = None,
        extra_context: Mapping[str, Any] | None = None,
    ) -> None:
        cls = type(self)
        self.name = name or str(getattr(cls, "name", ""))
        self.template_name = template_name or self.template_name
        if not self.name or not self.template_name:
            raise ImproperlyConfigured(f"{cls.__name__} needs a name and a template_name")
        if form is not None and arguments is not None:
            raise ImproperlyConfigured(f"Prompt {self.name!r}: give either form= or arguments=, not both")
        if arguments is not None:
            self.form_class = arguments_form(arguments)
        elif form is not None:
            self.form_class = form
        self.using = using or self.using
        self.extra_context = extra_context if extra_context is not None else self.extra_context
        self.fn = self.render
        # title and description may be lazy translations: definition() turns them into text per request.
        self.title = cast("str | None", title if title is not None else getattr(cls, "title", None))
        own_doc = cls.__dict__.get("__doc__") if cls is not TemplatePrompt else None
        self.description = cast(
            "str | None", description if description is not None else (getattr(cls, "description", None) or own_doc)
        )
        self.icons = icons if icons is not None else getattr(cls, "icons", None)
        self.meta = meta if meta is not None else getattr(cls, "meta", None)
        self.scopes = list(scopes if scopes is not None else getattr(cls, "scopes", ()))
        self.permissions = list(permissions if permissions is not None else getattr(cls, "permissions", ()))
        self.check = check if check is not None else getattr(self, "check", None)
        fields = declared_fields(self.get_form_class())
        self.arguments = [{"name": n, "required": f.required} for n, f in fields.items()]
        completers: dict[str, Completer | Sequence[str]] = {
            n: self._completer(n) for n, f in fields.items() if isinstance(f, forms.ChoiceField)
        }
        for key, source in {**getattr(cls, "complete", {}), **(complete or {})}.items():
            completers[key] = from_queryset(source) if isinstance(source, QuerySet) else source
        self.complete = completers

    # -- hooks (run in a worker thread: the ORM is fine here) ----------------------------
    def get_form_class(self) -> type[forms.BaseForm]:
        return self.form_class or forms.Form

    def get_form_kwargs(self, ctx: Context) -> dict[str, Any]:
        """Extra keyword arguments for the form, e.g. ``{"user": ctx.user}`` for per-user querysets."""
        return {}

    def get_form(self, ctx: Context, data: MultiValueDict[str, Any] | None = None) -> forms.BaseForm:
        return self.get_form_class()(data=data, **self.get_form_kwargs(ctx))

    def get_context_data(self, form: forms.BaseForm, ctx: Context) -> dict[str, Any]:
        """The template context: the cleaned arguments, ``form``, ``user``, ``prompt`` and ``extra_context``."""
        return {**form.cleaned_data, "form": form, "user": ctx.user, "prompt": self, **(self.extra_context or {})}

    # -- protocol ------------------------------------------------------------------------
    def argument_definitions(self) -> list[dict[str, Any]]:
        """Computed per call: labels and help texts are translated into the caller's language."""
        arguments = []
        for name, field in declared_fields(self.get_form_class()).items():
            arg: dict[str, Any] = {"name": name, "required": field.required}
            if field.label:
                arg["title"] = str(field.label)
            if field.help_text:
                arg["description"] = str(field.help_text)
            arguments.append(arg)
        return arguments

    def check_arguments(self, arguments: dict[str, Any]) -> list[str]:
        return []  # the form reports missing arguments along with every other error

    def bind(self, arguments: Mapping[str, Any], ctx: Context) -> forms.BaseForm:
        """A bound form; a multiple-choice argument is a comma-separated list."""
        data: MultiValueDict[str, Any] = MultiValueDict()
        form = self.get_form(ctx, data)
        for name, field in form.fields.items():
            if name not in arguments:
                continue
            value = arguments[name]
            if _multiple(field) and isinstance(value, str):
                data.setlist(name, [v.strip() for v in value.split(",") if v.strip()])
            else:
                data[name] = value
        return form

    def render_text(self, arguments: Mapping[str, Any], ctx: Context, collector: Collector) -> str:
        """Validate the arguments and render the template as text (sync: runs in a thread)."""
        form = self.bind(arguments, ctx)
        if not form.is_valid():
            errors = form.errors.get_json_data()
            raise InvalidParams(
                f"Invalid arguments for prompt {self.name!r}: {_summary(form.errors)}",
                {"errors": errors},
            )
        for name, field in form.fields.items():
            if name not in arguments and form.cleaned_data.get(name) in field.empty_values:
                initial = form.get_initial_for_field(field, name)
                if initial is not None:
                    form.cleaned_data[name] = initial
        context = {**self.get_context_data(form, ctx), COLLECTOR_KEY: collector}
        template = get_template(self.template_name, using=self.using)
        inner = getattr(template, "template", None)
        if isinstance(inner, DjangoTemplate):
            return inner.render(TemplateContext(context, autoescape=False))
        # Another engine: its own escaping rules apply and {% load mcp %} is not available.
        return template.render(context)

    async def render(self, arguments: dict[str, Any], ctx: Context) -> dict[str, Any]:
        collector = Collector()
        text = await run_sync(project_middleware.within, ctx, self.render_text, arguments, ctx, collector)
        messages = await self.messages(text, collector, ctx)
        result: dict[str, Any] = {"messages": messages}
        if self.description:
            result["description"] = str(self.description)
        return result

    async def messages(self, text: str, collector: Collector, ctx: Context) -> list[dict[str, Any]]:
        """Turn the rendered text and its markers into wire messages (one content block each)."""
        top = collector.split(text)
        groups: list[tuple[str, list[str | Embed]]] = []
        if not any(isinstance(p, Embed) and p.kind == "message" for p in top):
            groups.append(("user", top))
        else:
            for piece in top:
                if isinstance(piece, Embed) and piece.kind == "message":
                    groups.append((piece.role, collector.split(piece.text)))
                elif not isinstance(piece, str) or piece.strip():
                    groups.append(("user", [piece]))  # text or embeds between message blocks
        messages: list[dict[str, Any]] = []
        for role, parts in groups:
            for part in parts:
                if isinstance(part, str):
                    if part.strip():
                        messages.append({"role": role, "content": {"type": "text", "text": part.strip()}})
                elif part.kind == "resource":
                    for block in await self.embed(part.uri, ctx):
                        messages.append({"role": role, "content": block})
                elif part.kind == "block":
                    messages.append({"role": role, "content": dump(part.block)})
        return messages or [{"role": "user", "content": {"type": "text", "text": ""}}]

    async def embed(self, uri: str, ctx: Context) -> list[dict[str, Any]]:
        """Read ``uri`` through the server's own handler, so the caller's access checks apply."""
        return [{"type": "resource", "resource": contents} for contents in await ctx.read_resource(uri)]

    # -- completion ----------------------------------------------------------------------
    def _completer(self, name: str) -> Callable[..., Any]:
        async def complete(value: str, ctx: Context) -> list[str]:
            return await run_sync(self.completion_values, name, value, ctx)

        return complete

    def completion_values(self, name: str, value: str, ctx: Context) -> list[str]:
        """Values of a choice field starting with ``value`` (keys or labels, case-insensitively)."""
        field = self.get_form(ctx).fields.get(name)
        if isinstance(field, forms.ModelChoiceField):
            if field.queryset is None:
                return []
            key = field.to_field_name or "pk"
            qs = field.queryset.filter(**{f"{key}__istartswith": value}) if value else field.queryset.all()
            return [str(v) for v in qs.values_list(key, flat=True)[: COMPLETION_LIMIT + 1]]
        if not isinstance(field, forms.ChoiceField):
            return []
        typed = value.casefold()
        return [
            str(k)
            for k, label in _flat_choices(field.choices)
            if k not in ("", None) and (str(k).casefold().startswith(typed) or str(label).casefold().startswith(typed))
        ]


__all__ = ["Argument", "TemplatePrompt", "arguments_form", "from_queryset"]
