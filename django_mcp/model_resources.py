"""``ModelResource``: a Django model served as MCP resources, declared like a ``ModelAdmin``.

One declaration contributes one resource template (``django://<app>/<model>/{pk}``
by default) whose reads serialize one object, the objects themselves to
``resources/list``, completions of the template's variables, and change
notifications from model signals (see ``model_signals``). Every ORM call runs in
one hop to the sync pool (``django_mcp.runtime.sync_pool``) per request, so the event loop never blocks.

Importing this module lets ``MCPServer.register`` take a ``ModelResource`` and puts the
model objects into ``resources/list`` (``server.hooks``): the server imports no mapping.

Who sees what: the template is visible to callers for whom ``has_permission(ctx)``
holds (by default Django's ``view_<model>`` permission); each object must pass
``get_queryset(ctx)`` and ``has_permission(ctx, obj)``. An object that fails
either is reported exactly like one that does not exist. With object permissions
(``object_permissions``; on by itself when django-guardian's or django-rules' backend is
configured) the model-level answer of a backend no longer opens every object: each must be
granted (``has_perm(perm, obj)``), or the queryset narrowed to the grants (django-guardian).
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import mimetypes
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import mcp_types
from django.conf import settings
from django.contrib.auth import get_permission_codename
from django.contrib.auth.backends import BaseBackend, ModelBackend
from django.core import signing
from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured, ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import ForeignObjectRel, Q, QuerySet
from django.utils.module_loading import import_string
from django.utils.text import capfirst

from . import model_signals
from .access import Check, visible
from .conf import mcp_settings
from .context import Context
from .exceptions import InvalidParams, MCPError, ResourceNotFound, ToolError
from .protocol.uri_template import URITemplate
from .resources import ResourceTemplate
from .runtime import project_middleware
from .runtime.sync_pool import run_sync
from .server import MCPServer, hooks
from .signature import EMPTY, Parameter, Signature, arguments_model, model_name
from .tools import Tool

if TYPE_CHECKING:
    from .runtime.engine import Exchange

MAX_COMPLETIONS = 100
#: Rows a page of ``resources/list`` examines at most when each object is asked ``has_permission``: a caller
#: who may see few objects of a large table gets short pages (and a cursor), not one request scanning it all.
MAX_SCAN = 1000
_CURSOR_SALT = "django_mcp.resources.cursor"
GUARDIAN_BACKEND = "guardian.backends.ObjectPermissionBackend"
#: Backends known to answer per object: their presence turns ``object_permissions`` on by default.
OBJECT_BACKENDS = frozenset({GUARDIAN_BACKEND, "rules.permissions.ObjectPermissionBackend"})
#: JSON types ``serialize`` passes on without trying to encode them first.
_PLAIN = (str, int, float, bool, type(None))

logger = logging.getLogger("django_mcp")


@functools.lru_cache(maxsize=8)
def _backends(paths: tuple[str, ...]) -> tuple[frozenset[str], bool]:
    """The configured backends known to answer per object, and whether django-guardian's alone does.

    Guardian alone: every backend that answers ``has_perm`` is Django's ``ModelBackend`` (global rights, which
    ``has_global_permission`` counts) or guardian's, so ``get_objects_for_user`` is exactly what may be seen.
    """
    known = frozenset(p for p in paths if p in OBJECT_BACKENDS)
    others = []
    for path in paths:
        if path in OBJECT_BACKENDS:
            continue
        try:
            backend = import_string(path)
        except ImportError:
            others.append(path)
            continue
        if _grants(backend):
            others.append(path)
    return known, known == {GUARDIAN_BACKEND} and not others


def _grants(backend: Any) -> bool:
    """Whether an authentication backend may grant a permission ``ModelBackend``'s global rights do not cover.

    Backends without ``has_perm`` grant nothing (sign-in only), nor do ``BaseBackend`` subclasses that override
    none of its permission methods (theirs answer from empty sets).
    """
    if not hasattr(backend, "has_perm") or (isinstance(backend, type) and issubclass(backend, ModelBackend)):
        return False
    if isinstance(backend, type) and issubclass(backend, BaseBackend):
        return any(getattr(backend, name) is not getattr(BaseBackend, name) for name in _PERMISSION_METHODS)
    return True


_PERMISSION_METHODS = ("has_perm", "get_all_permissions", "get_user_permissions", "get_group_permissions")


def object_backends() -> tuple[frozenset[str], bool]:
    return _backends(tuple(settings.AUTHENTICATION_BACKENDS))


class UnserializableField(MCPError):
    """A field whose value is neither JSON nor has a string form: named, so the declaration can be fixed."""

    default_message = "A field cannot be serialized"


class ModelResource:
    """Declare how a model is exposed; register with ``@site.register`` (or ``site.register(cls)``).

    Every attribute is optional except ``model``. Methods taking ``ctx`` run in a
    worker thread and may use the ORM.
    """

    model: type[models.Model]
    #: Field names to serialize (``None`` or ``"__all__"``: every concrete and many-to-many field;
    #: reverse relations such as ``books`` only when named).
    fields: Sequence[str] | str | None = None
    exclude: Sequence[str] = ()
    #: A DRF serializer class; when set it produces the JSON instead of ``fields``.
    serializer_class: type[Any] | None = None
    lookup_field: str = "pk"
    #: RFC 6570 template (``{var}``); its variables are model field lookups. Default ``django://<app>/<model>/{pk}``.
    uri_template: str | None = None
    mime_type: str = "application/json"
    name: str | None = None
    title: str | None = None
    description: str | None = None
    #: Fields searched (``icontains``) by ``completion/complete`` on the lookup variable.
    search_fields: Sequence[str] = ()
    select_related: Sequence[str] = ()
    prefetch_related: Sequence[str] = ()
    icons: list[dict[str, Any]] | None = None
    annotations: dict[str, Any] | None = None
    scopes: Sequence[str] = ()
    permissions: Sequence[str] = ()
    check: Check | None = None
    #: Object permissions: ``None`` (default) turns them on when django-guardian's or django-rules' backend is
    #: in ``AUTHENTICATION_BACKENDS``; ``True`` for a project's own backend. On, a caller's model-level
    #: ``has_perm("<app>.view_<model>")`` no longer opens every object (such backends answer it "for some"):
    #: only a global grant does (a superuser, or the permission among ``user.get_all_permissions()``: Django's
    #: ``ModelBackend``); otherwise each object must pass ``has_perm(perm, obj)``. With guardian the only
    #: per-object backend, reads, lists and completions query the grants (``get_objects_for_user``) instead.
    object_permissions: bool | None = None
    #: An MCP App for one object (a template name or a ``django_mcp.ui.UI``): the server gets a read-only tool
    #: ``show_<name>`` (``ui_tool``) taking the URI template's variables, whose result (the object as a read
    #: serializes it) hosts show with that template. The tool sees exactly what a read of the object would.
    ui: Any = None
    ui_tool: str | None = None

    def __init__(self, server: MCPServer | None = None) -> None:
        if not isinstance(getattr(self, "model", None), type) or not issubclass(self.model, models.Model):
            raise ImproperlyConfigured(f"{type(self).__name__}.model must be a Django model class")
        self.server = server
        opts = self.model._meta
        self.opts = opts
        self.uri_template = self.uri_template or f"django://{opts.app_label}/{opts.model_name}/{{{self.lookup_field}}}"
        self.name = self.name or opts.model_name
        self.title = self.title or capfirst(str(opts.verbose_name))
        if self.description is None:
            doc = (self.model.__doc__ or "").strip()
            # Django invents "Book(id, title, ...)" for models without a docstring: not a description.
            auto = doc.startswith(f"{self.model.__name__}(") and doc.endswith(")")
            self.description = None if auto or not doc else doc
        self.model_fields = self._resolve_fields()
        self.file_fields = [f.name for f in self.model_fields if isinstance(f, models.FileField)]
        self.template = ModelURITemplate(self.uri_template, self.file_fields)
        for var in self.template.variables:
            self._field_for(var)

    # -- declaration -----------------------------------------------------------------
    def _resolve_fields(self) -> list[Any]:
        every: list[Any] = list(self.opts.get_fields())
        candidates = [f for f in every if f.concrete or (f.many_to_many and not f.auto_created)]
        # Reverse relations (``author.books``) only when named in ``fields``.
        by_name = {f.name: f for f in every if f.concrete or f.many_to_many or f.one_to_many}
        if self.fields is None or self.fields == "__all__":
            chosen = candidates
        else:
            unknown = [n for n in self.fields if n not in by_name]
            if unknown:
                raise ImproperlyConfigured(f"{type(self).__name__}.fields names unknown fields: {', '.join(unknown)}")
            chosen = [by_name[n] for n in self.fields]
        return [f for f in chosen if f.name not in set(self.exclude)]

    def _field_for(self, var: str) -> str:
        """The ORM lookup for a template variable (``pk`` or a field name)."""
        if var == "pk":
            return "pk"
        try:
            field = self.opts.get_field(var)
        except FieldDoesNotExist:
            raise ImproperlyConfigured(
                f"{type(self).__name__}: URI template variable {{{var}}} is not a field of {self.opts.label}"
            ) from None
        return getattr(field, "attname", var)

    # -- overridable hooks (sync: they run in a worker thread) -------------------------
    def get_queryset(self, ctx: Context) -> QuerySet[Any]:
        """The objects ``ctx.user`` may reach; override to filter per user."""
        qs: QuerySet[Any] = self.model._default_manager.all()
        return qs

    def has_permission(self, ctx: Context, obj: models.Model | None = None) -> bool:
        """Django's ``view_<model>`` permission: without ``obj``, whether the template is shown; with it, the object.

        Without object permissions the model-level permission opens every object (and an object
        permission one object). With them, a global grant opens every object and otherwise each
        object must be granted; the template shows when the caller may see some object.
        """
        perm = self.view_permission()
        user: Any = ctx.user
        if not self.uses_object_permissions():
            if user.has_perm(perm):
                return True
            return obj is not None and bool(user.has_perm(perm, obj))
        if self.has_global_permission(ctx):
            return True
        if obj is not None:
            return bool(user.has_perm(perm, obj))
        if user.has_perm(perm):  # such a backend's "for some objects"
            return True
        return object_backends()[1] and self.permitted(ctx, self.get_queryset(ctx)).exists()

    def view_permission(self) -> str:
        return f"{self.opts.app_label}.{get_permission_codename('view', self.opts)}"

    def uses_object_permissions(self) -> bool:
        if self.object_permissions is not None:
            return self.object_permissions
        return bool(object_backends()[0])

    def has_global_permission(self, ctx: Context) -> bool:
        """Whether the caller may see every object: an active superuser, or the permission granted for the model.

        ``get_all_permissions()`` without an object is what backends grant model-wide (Django's ``ModelBackend``
        and its subclasses); object backends list nothing there. A custom user model without
        ``PermissionsMixin`` has neither attribute: no global grant.
        """
        user: Any = ctx.user
        if not getattr(user, "is_active", False):
            return False
        if getattr(user, "is_superuser", False):
            return True
        every = getattr(user, "get_all_permissions", None)
        return every is not None and self.view_permission() in every()

    def permitted(self, ctx: Context, qs: QuerySet[Any]) -> QuerySet[Any]:
        """``qs`` narrowed to the caller's object permissions where one query can say (django-guardian alone)."""
        if not self.uses_object_permissions() or not object_backends()[1] or self.has_global_permission(ctx):
            return qs
        from guardian.shortcuts import get_objects_for_user  # reason: optional dependency (django-guardian)

        narrowed: QuerySet[Any] = get_objects_for_user(
            ctx.user, self.view_permission(), klass=qs, with_superuser=False, accept_global_perms=False
        )
        return narrowed

    def every_object_permitted(self, ctx: Context) -> bool:
        """Whether each object of ``queryset(ctx)`` may be seen, so lists need not ask ``has_permission`` per object."""
        if not self.uses_object_permissions():
            return bool(self.has_permission(ctx))
        return self.has_global_permission(ctx) or object_backends()[1]

    def serialize(self, obj: models.Model, ctx: Context) -> Any:
        """The JSON-ready data for ``obj``: the DRF serializer's, or one value per declared field."""
        if self.serializer_class is not None:
            return self.serializer_class(obj, context={"ctx": ctx, "view": self}).data
        data: dict[str, Any] = {}
        for f in self.model_fields:
            if f.many_to_many or f.one_to_many:
                # A reverse relation is reached through its accessor; a forward many-to-many by its name
                # (Django 6.1 no longer counts a ManyToManyField as concrete, so ``concrete`` cannot tell them apart).
                accessor = (f.get_accessor_name() if isinstance(f, ForeignObjectRel) else None) or f.name
                data[f.name] = [self.related_ref(f, o) for o in getattr(obj, accessor).all()]
            elif f.is_relation:
                data[f.name] = self.foreign_ref(obj, f)
            elif isinstance(f, models.FileField):
                data[f.name] = self.file_link(obj, f.name)
            else:
                data[f.name] = self.field_value(obj, f)
        return data

    def field_value(self, obj: models.Model, field: Any) -> Any:
        """The field's value when JSON can carry it, else its string form (``value_to_string``).

        A custom field's Python value (an address, a geometry, a money amount...) becomes its text, as in
        Django's serializers; one without a string form is an error naming the field.
        """
        value = field.value_from_object(obj)
        if isinstance(value, _PLAIN):
            return value
        try:
            json.dumps(value, cls=self._encoder())
            return value
        except (TypeError, ValueError):
            pass
        try:
            return str(field.value_to_string(obj))
        except Exception as exc:  # noqa: BLE001 - any __str__ may raise: named below, never a bare -32603
            logger.error(
                "ModelResource %s: field %r of %s has no JSON or string form: %r",
                type(self).__name__,
                field.name,
                self.opts.label,
                exc,
            )
            raise UnserializableField(
                f"Field {field.name!r} of {self.opts.label} cannot be serialized: its value ({type(value).__name__}) "
                "is not JSON and has no string form",
                {"field": field.name, "model": self.opts.label},
            ) from None

    def object_name(self, obj: models.Model) -> str:
        return str(obj)

    def show(self, ctx: Context, variables: dict[str, str]) -> mcp_types.CallToolResult:
        """The ``ui`` tool's result: the object as a read serializes it, or a tool error a model can read."""
        try:
            uri = self.template.expand(**variables)
            obj = self.get_object(ctx, uri, dict(variables))
        except (ResourceNotFound, ValueError, KeyError):
            raise ToolError(f"No {self.opts.verbose_name} with {variables}") from None
        data = json.loads(json.dumps(self.serialize(obj, ctx), cls=self._encoder(), ensure_ascii=False))
        structured = data if isinstance(data, dict) else {"result": data}
        return mcp_types.CallToolResult(
            content=[
                mcp_types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False)),
                mcp_types.ResourceLink(type="resource_link", uri=uri, name=self.object_name(obj)),
            ],
            structured_content=structured,
        )

    def _encoder(self) -> type[json.JSONEncoder]:
        if self.serializer_class is not None:
            from rest_framework.utils.encoders import JSONEncoder as DRFEncoder  # reason: optional dependency (DRF)

            drf: type[json.JSONEncoder] = DRFEncoder
            return drf
        return DjangoJSONEncoder

    # -- URIs --------------------------------------------------------------------------
    def uri_for(self, obj: models.Model) -> str:
        values = {var: getattr(obj, self._field_for(var)) for var in self.template.variables}
        return self.template.expand(**values)

    def _related_resource(self, model: type[models.Model]) -> ModelResource | None:
        return self.server.model_resource_for(model) if self.server is not None else None

    def foreign_ref(self, obj: models.Model, field: Any) -> Any:
        """A foreign key as the related object's resource URI when one is registered, else its key."""
        raw = getattr(obj, field.attname)
        target = self._related_resource(field.related_model)
        if raw is None or target is None:
            return raw
        if target.template.variables == ["pk"] and field.target_field.primary_key:
            return target.template.expand(pk=raw)  # no query: the key is on obj
        return target.uri_for(getattr(obj, field.name))

    def related_ref(self, field: Any, related: models.Model) -> Any:
        target = self._related_resource(field.related_model)
        return target.uri_for(related) if target is not None else related.pk

    # -- files -------------------------------------------------------------------------
    def file_uri(self, obj: models.Model, field_name: str) -> str:
        return f"{self.uri_for(obj)}/{field_name}"

    def _file_info(self, obj: models.Model, field_name: str) -> tuple[Any, int | None]:
        file = getattr(obj, field_name)
        if not file:
            return None, None
        try:
            size = int(file.size)
        except (OSError, ValueError):
            size = None  # missing from storage: still linked, never inlined
        return file, size

    def file_link(self, obj: models.Model, field_name: str) -> dict[str, Any] | None:
        """A ``resource_link`` to the file's own URI (read it for the bytes, within ``RESOURCE_MAX_BLOB_SIZE``)."""
        file, size = self._file_info(obj, field_name)
        if file is None:
            return None
        name = os.path.basename(file.name)
        link: dict[str, Any] = {"type": "resource_link", "uri": self.file_uri(obj, field_name), "name": name}
        mime = mimetypes.guess_type(name)[0]
        if mime:
            link["mimeType"] = mime
        if size is not None:
            link["size"] = size
        return link

    def file_contents(self, obj: models.Model, field_name: str, *, strict: bool) -> dict[str, Any] | None:
        """Blob contents of a file field, or None when empty/too large (``strict``: an error instead)."""
        uri = self.file_uri(obj, field_name)
        file, size = self._file_info(obj, field_name)
        limit = mcp_settings.RESOURCE_MAX_BLOB_SIZE
        if file is None or size is None:
            if strict:
                raise ResourceNotFound(uri)
            return None
        if size > limit:
            if strict:
                raise InvalidParams(
                    f"File is {size} bytes, above the {limit}-byte limit for inline contents",
                    {"uri": uri, "size": size, "limit": limit},
                )
            return None
        with file.open("rb") as fh:
            blob = fh.read()
        mime = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        return {"uri": uri, "mimeType": mime, "blob": base64.b64encode(blob).decode("ascii")}

    # -- queries (sync) ----------------------------------------------------------------
    def queryset(self, ctx: Context) -> QuerySet[Any]:
        """``get_queryset(ctx)`` with the declared ``select_related``/``prefetch_related``."""
        qs = self.permitted(ctx, self.get_queryset(ctx))
        if self.select_related:
            qs = qs.select_related(*self.select_related)
        if self.prefetch_related:
            qs = qs.prefetch_related(*self.prefetch_related)
        return qs

    def get_object(self, ctx: Context, uri: str, variables: dict[str, str]) -> models.Model:
        lookups = {self._field_for(k): v for k, v in variables.items() if k in self.template.variables}
        try:
            obj = self.queryset(ctx).filter(**lookups).first()
        except (ValueError, TypeError, ValidationError):  # "abc" for an integer key: simply no such object
            obj = None
        if obj is None or not self.has_permission(ctx, obj):
            raise ResourceNotFound(uri)
        found: models.Model = obj
        return found

    def read_sync(self, ctx: Context, uri: str, variables: dict[str, str]) -> list[dict[str, Any]]:
        file_field = variables.pop(ModelURITemplate.FILE_VAR, None)
        obj = self.get_object(ctx, uri, variables)
        if file_field is not None:
            got = self.file_contents(obj, file_field, strict=True)
            assert got is not None
            return [got]
        text = json.dumps(self.serialize(obj, ctx), cls=self._encoder(), ensure_ascii=False)
        contents: list[dict[str, Any]] = [{"uri": uri, "mimeType": self.mime_type, "text": text}]
        if self.serializer_class is None:
            for name in self.file_fields:
                blob = self.file_contents(obj, name, strict=False)
                if blob is not None:
                    contents.append(blob)
        return contents

    def page(self, ctx: Context, after: Any, limit: int) -> tuple[list[dict[str, Any]], Any, bool]:
        """Up to ``limit`` visible objects after key ``after`` in ``pk`` order.

        Returns the resource entries, the key to continue after, and whether the
        objects are exhausted. Objects refused by ``has_permission`` are skipped.
        """
        if after is not None:
            # A cursor made for another source (the caller's visible resources changed between pages)
            # may hold a key of another type: a wrong cursor, not a crash in the query.
            try:
                after = self.model._meta.pk.to_python(after)
            except (ValueError, TypeError, ValidationError):
                raise InvalidParams("Invalid cursor") from None
        items: list[dict[str, Any]] = []
        qs = self.queryset(ctx).order_by("pk")
        model_level = self.every_object_permitted(ctx)
        scanned = 0
        while len(items) < limit and scanned < MAX_SCAN:
            want = min(limit - len(items), MAX_SCAN - scanned)
            chunk = list((qs.filter(pk__gt=after) if after is not None else qs)[:want])
            scanned += len(chunk)
            for obj in chunk:
                if model_level or self.has_permission(ctx, obj):
                    items.append(self.list_entry(obj))
            if chunk:
                after = chunk[-1].pk
            if len(chunk) < want:
                return items, after, True
        return items, after, False

    def list_entry(self, obj: models.Model) -> dict[str, Any]:
        return {"uri": self.uri_for(obj), "name": self.object_name(obj), "mimeType": self.mime_type}

    def completions(self, ctx: Context, var: str, value: str, others: dict[str, str]) -> tuple[list[str], int | None]:
        """Values of template variable ``var`` starting with (or, via ``search_fields``, matching) ``value``.

        Returns at most 100 values and their total, or None for the total when
        more objects matched than were examined.
        """
        if var not in self.template.variables:
            return [], 0
        lookup = self._field_for(var)
        qs = self.queryset(ctx)
        for k, v in others.items():
            if k in self.template.variables and k != var:
                qs = qs.filter(**{self._field_for(k): v})
        if value:
            match = Q(**{f"{lookup}__startswith": value})
            if var == self.template.variables[-1] or var == self.lookup_field:
                for f in self.search_fields:
                    match |= Q(**{f"{f}__icontains": value})
            qs = qs.filter(match)
        values: list[str] = []
        seen: set[str] = set()
        extra = 0
        scanned = list(qs.order_by("pk")[: MAX_COMPLETIONS * 2])
        every = self.uses_object_permissions() and self.every_object_permitted(ctx)
        for obj in scanned:
            if not every and not self.has_permission(ctx, obj):
                continue
            v = str(getattr(obj, lookup))
            if v in seen:
                continue
            seen.add(v)
            if len(values) < MAX_COMPLETIONS:
                values.append(v)
            else:
                extra += 1
        return values, None if len(scanned) == MAX_COMPLETIONS * 2 else len(values) + extra

    # -- the template the server lists --------------------------------------------------
    def as_template(self) -> ModelResourceTemplate:
        return ModelResourceTemplate(
            uri=self.template.template,
            fn=_unused,
            name=str(self.name),
            title=self.title,
            description=self.description,
            mime_type=self.mime_type,
            icons=self.icons,
            annotations=self.annotations,
            scopes=list(self.scopes),
            permissions=list(self.permissions),
            check=self.check,
            resource=self,
        )


def _unused() -> None:  # pragma: no cover - ModelResourceTemplate.read never calls fn
    raise NotImplementedError


class ModelURITemplate(URITemplate):
    """The object template, also matching ``<object uri>/<file field>`` for the files' own URIs."""

    FILE_VAR = "__file__"

    def __init__(self, template: str, file_fields: Sequence[str]) -> None:
        super().__init__(template)
        self.file_fields = tuple(file_fields)

    def match(self, uri: str) -> dict[str, str] | None:
        got = super().match(uri)
        if got is not None or not self.file_fields:
            return got
        base, _, tail = uri.rpartition("/")
        if tail in self.file_fields:
            got = super().match(base)
            if got is not None:
                got[self.FILE_VAR] = tail
        return got


class ModelResourceTemplate(ResourceTemplate):
    """The resource template a ``ModelResource`` contributes to its server."""

    def __init__(self, *, resource: ModelResource, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.resource = resource
        self.template = resource.template

    async def permits(self, ctx: Context) -> bool:
        if not await super().permits(ctx):
            return False
        return bool(await run_sync(self.resource.has_permission, ctx))

    def declares_access(self) -> bool:
        """Always: reading a model object needs its ``view_`` permission (``ModelResource.has_permission``)."""
        return True

    async def read(self, uri: str, variables: dict[str, str], ctx: Context) -> list[dict[str, Any]]:
        return await run_sync(project_middleware.within, ctx, self.resource.read_sync, ctx, uri, dict(variables))

    async def ensure_exists(self, uri: str, variables: dict[str, str], ctx: Context) -> None:
        """``ResourceNotFound`` unless the caller may read the object (used before subscribing)."""
        variables = dict(variables)
        variables.pop(ModelURITemplate.FILE_VAR, None)
        await run_sync(self.resource.get_object, ctx, uri, variables)

    async def completion_values(
        self, ctx: Context, var: str, value: str, others: dict[str, str]
    ) -> tuple[list[str], int | None]:
        return await run_sync(self.resource.completions, ctx, var, value, others)


# -- resources/list: static resources, then every visible ModelResource's objects ---------


def encode_cursor(source: int, after: Any) -> str:
    """A signed, opaque cursor: which source (0 = static resources) and the key to continue after."""
    return signing.dumps([source, after], salt=_CURSOR_SALT, compress=True)


def decode_cursor(cursor: Any) -> tuple[int, Any]:
    """The source and key of a cursor ``encode_cursor`` made; anything else (any JSON value) is -32602."""
    if cursor is None:
        return 0, None
    if not isinstance(cursor, str):
        raise InvalidParams("Invalid cursor")
    try:
        source, after = signing.loads(cursor, salt=_CURSOR_SALT)
    except (signing.BadSignature, ValueError, TypeError):
        raise InvalidParams("Invalid cursor") from None
    if type(source) is not int or source < 0:
        raise InvalidParams("Invalid cursor")
    return source, after


def list_page(
    static: list[dict[str, Any]], sources: list[ModelResource], ctx: Context, cursor: Any, size: int
) -> dict[str, Any]:
    """One page of ``resources/list`` in a stable order (sync: runs the queries)."""
    source, after = decode_cursor(cursor)
    items: list[dict[str, Any]] = []
    if source == 0:
        offset = after if isinstance(after, int) and after >= 0 else 0
        items = static[offset : offset + size]
        if offset + size < len(static):
            return {"resources": items, "nextCursor": encode_cursor(0, offset + size)}
        source, after = 1, None
    while source <= len(sources) and len(items) < size:
        got, after, done = sources[source - 1].page(ctx, after, size - len(items))
        items.extend(got)
        if done:
            source, after = source + 1, None
    result: dict[str, Any] = {"resources": items}
    if source <= len(sources):
        result["nextCursor"] = encode_cursor(source, after)
    return result


async def list_resources(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    """``resources/list``: static resources, then the objects of every visible ``ModelResource``, one cursor."""
    items = [r.definition() for r in server.resources.values() if await visible(r, ex)]
    templates = [t for t in server.templates.values() if isinstance(t, ModelResourceTemplate)]
    sources = [t.resource for t in templates if await visible(t, ex)]
    if not sources:  # nothing to query: no thread hop
        return list_page(items, [], Context(ex), params.get("cursor"), mcp_settings.PAGE_SIZE)
    return await run_sync(list_page, items, sources, Context(ex), params.get("cursor"), mcp_settings.PAGE_SIZE)


def register(server: MCPServer, obj: ModelResource | type[ModelResource]) -> Any:
    """``server.register`` of a ``ModelResource``: a class is instantiated once and returned (a decorator)."""
    if isinstance(obj, type):
        register(server, obj(server))
        return obj
    obj.server = obj.server or server
    if server.model_resource_for(obj.model) is not None:
        raise ImproperlyConfigured(f"Model {obj.model._meta.label} is already registered on MCP server {server.name!r}")
    template = obj.as_template()
    server.add_resource(template)
    if obj.ui is not None:
        show = ShowTool.for_resource(obj)
        show.switch_follows = template  # another door to the same objects: the template's switch covers it
        server.add_tool(show)
    model_signals.watch(obj)
    return obj


#: The annotations of a tool that only reads this site's own data (host directories ask for all four).
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


class ShowTool(Tool):
    """``ModelResource.ui``: one object as a tool result, for its MCP App (the read's checks, the read's data)."""

    resource: ModelResource
    #: The resource template whose kill switch also switches this tool off (``operations.switches.key_of``).
    switch_follows: Any = None

    @classmethod
    def for_resource(cls, resource: ModelResource) -> ShowTool:
        opts = resource.opts
        name = resource.ui_tool or f"show_{resource.name}"
        params = [
            Parameter(var, str | int, EMPTY, f"The {var} of the {opts.verbose_name} (as in {resource.uri_template}).")
            for var in resource.template.variables
        ]

        def show(ctx: Context, **lookup: Any) -> mcp_types.CallToolResult:
            return resource.show(ctx, {k: str(v) for k, v in lookup.items()})

        tool = cls(
            show,
            name=name,
            title=f"Show {opts.verbose_name}",
            description=f"One {opts.verbose_name} ({resource.uri_template}), shown by its app in hosts that render "
            "MCP Apps.",
            annotations={
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            scopes=list(resource.scopes),
            permissions=list(resource.permissions),
            check=resource.check,
            ui=resource.ui,
            signature=Signature(arguments_model(model_name(name), params), ctx_param="ctx"),
        )
        tool.resource = resource
        return tool

    async def permits(self, ctx: Context) -> bool:
        """The template's rules: ``permissions``, ``check`` and the model's ``view_`` permission."""
        if not await super().permits(ctx):
            return False
        return bool(await run_sync(self.resource.has_permission, ctx))

    def declares_access(self) -> bool:
        return True  # the model's view_ permission, as for the template


hooks.kinds[ModelResource] = register
hooks.methods["resources/list"] = list_resources

__all__ = ["ModelResource", "ModelResourceTemplate", "ShowTool", "list_page", "list_resources"]
