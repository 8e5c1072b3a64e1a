"""Django REST framework views, viewset actions and ``@api_view`` functions as MCP tools.

The call runs through DRF's real stack: a real request goes to the view function
(``as_view``), where ``MCPCallerAuthentication`` (tried first) authenticates the
MCP caller, then the view's permission classes, throttles, parsers, serializer
validation and pagination run as for any HTTP client. The input schema comes
from the request serializer, filter backends and paginator, the output schema
from the response serializer, both through DRF's own OpenAPI inspector
(``AutoSchema``) converted to JSON Schema. Needs the ``drf`` extra.

Importing this module gives ``MCPServer.register_drf`` its tool maker (``server.hooks``);
``DjangoMCPConfig.ready()`` imports it when Django REST framework is installed.
"""

from __future__ import annotations

import inspect
import io
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.wsgi import WSGIRequest
from django.db import models
from rest_framework import serializers
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import APIException
from rest_framework.mixins import DestroyModelMixin, ListModelMixin, RetrieveModelMixin, UpdateModelMixin
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.schemas.utils import get_pk_description
from rest_framework.views import APIView
from rest_framework.viewsets import ViewSetMixin

from ..access import Check
from ..audit.declaration import REDACTED, AuditPolicy
from ..context import Context
from ..runtime import project_middleware
from ..runtime.project_middleware import request_host
from ..runtime.sync_pool import run_sync
from ..server import hooks
from ..signature import EMPTY, Parameter, Signature, arguments_model, model_name
from ..tools import TaskSupport, Tool
from ..view_tools import (
    CTX,
    WRITE_METHODS,
    build_request,
    default_annotations,
    error_text,
    handler,
    refuse_or_fail,
)
from .drf_schema import pagination_parameters, query_parameters, serializer_schema, to_json_schema

STANDARD_ACTIONS = {
    "list": "GET",
    "create": "POST",
    "retrieve": "GET",
    "update": "PUT",
    "partial_update": "PATCH",
    "destroy": "DELETE",
}
DETAIL_ACTIONS = frozenset({"retrieve", "update", "partial_update", "destroy"})
_ACTION_TEXT = {
    "list": "List {plural}.",
    "create": "Create one {name}.",
    "retrieve": "Get one {name}.",
    "update": "Replace one {name} (every writable field).",
    "partial_update": "Change some fields of one {name}.",
    "destroy": "Delete one {name}.",
}

#: Default titles of the standard viewset actions (host directories want a title on every tool).
_ACTION_TITLE = {
    "list": "List {plural}",
    "create": "Create {name}",
    "retrieve": "Get {name}",
    "update": "Replace {name}",
    "partial_update": "Update {name}",
    "destroy": "Delete {name}",
}


class _Unset:
    """Default of an optional argument the client did not send (so it is not sent to the view)."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()


class MCPCallerAuthentication(BaseAuthentication):  # type: ignore[misc]  # DRF is untyped
    """Authenticates a request django_mcp built for a tool call as the MCP caller.

    django_mcp puts it first in the view's ``authentication_classes``; for any
    other request it does nothing and the view's own authenticators run.
    """

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        caller = getattr(request._request, "mcp_caller", None)
        if caller is None or not caller.is_authenticated:
            return None
        return caller, getattr(request._request, "mcp_token", None)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="mcp"'


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@dataclass
class DRFTool(Tool):
    """A tool that calls a DRF view; build it with ``drf_tool`` or ``MCPServer.register_drf``."""

    view_class: Any = None
    action: str | None = None
    http_method: str = "GET"
    path: str = "/"
    initkwargs: dict[str, Any] = field(default_factory=dict)
    path_params: list[str] = field(default_factory=list)
    query_params: list[str] = field(default_factory=list)
    _view_fn: Callable[..., Any] | None = field(default=None, init=False, repr=False)
    own_request = True

    # -- the view ---------------------------------------------------------------------
    def _initkwargs(self) -> dict[str, Any]:
        auth = [MCPCallerAuthentication, *(c for c in self.view_class.authentication_classes)]
        return {**self.initkwargs, "authentication_classes": auth}

    def view_function(self) -> Callable[..., Any]:
        """The view as a URLconf would call it (built on first use, with the caller's authentication first)."""
        if self._view_fn is None:
            if self.action is not None:
                actions = {self.http_method.lower(): self.action}
                self._view_fn = self.view_class.as_view(actions, **self._initkwargs())
            else:
                self._view_fn = self.view_class.as_view(**self._initkwargs())
        return self._view_fn

    def view_instance(self) -> Any:
        return view_instance(self.view_class, self.action, self.http_method, self._initkwargs(), None)

    # -- access -------------------------------------------------------------------------
    async def permits(self, ctx: Context) -> bool:
        """Declared permissions/check first, then the view's permission classes for the caller."""
        if not await super().permits(ctx):
            return False
        return bool(await run_sync(self._view_permits, ctx))

    def declares_access(self) -> bool:
        """Declared rules, or a permission class of the view other than ``AllowAny``."""
        if super().declares_access():
            return True
        classes = self.initkwargs.get("permission_classes", self.view_class.permission_classes)
        return any(p is not AllowAny for p in classes)

    def _view_permits(self, ctx: Context) -> bool:
        """``has_permission`` of each permission class on a synthetic request of the caller.

        Object-level checks need an object and stay with the call. A permission
        class that cannot decide without a real request (it raises) leaves the
        tool visible: the call runs every check for real.
        """
        http = build_request(self.http_method, self.path, ctx)
        view = self.view_instance()
        request = view.initialize_request(http)
        view.request = request
        if self.action is not None:
            view.action = self.action
        try:
            return all(p.has_permission(request, view) for p in view.get_permissions())
        except APIException:
            return False
        except Exception:  # noqa: BLE001  # undecidable without a real request: the call decides
            return True

    # -- the call -----------------------------------------------------------------------
    def call_view(self, ctx: Context, args: dict[str, Any]) -> mcp_types.CallToolResult:
        """Runs in the tool's thread (inside the ``ATOMIC_TOOL_CALLS`` savepoint)."""
        args = {k: v for k, v in args.items() if v is not UNSET}
        kwargs = {k: args.pop(k) for k in self.path_params if k in args}
        query = {k: args.pop(k) for k in self.query_params if k in args}
        if self.http_method in WRITE_METHODS:
            request = build_request(
                self.http_method,
                self.path,
                ctx,
                query=query,
                body=json.dumps(args).encode(),
                content_type="application/json",
            )
        else:
            request = build_request(self.http_method, self.path, ctx, query={**query, **args})
        view = self.view_function()
        response = project_middleware.run_sync(request, lambda r: view(r, **kwargs))
        data = getattr(response, "data", None) if isinstance(response, Response) else None
        if response.status_code >= 300 and isinstance(response, Response):
            refuse_or_fail(response, "; ".join(error_text(data)) if data is not None else None)
        refuse_or_fail(response)
        if data is None:
            return mcp_types.CallToolResult(content=[])
        plain = json.loads(JSONRenderer().render(data))
        structured = plain if isinstance(plain, dict) else {"result": plain}
        text = mcp_types.TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))
        if self.output_schema is None:
            return mcp_types.CallToolResult(content=[text])
        return mcp_types.CallToolResult(content=[text], structured_content=structured)


def view_instance(cls: Any, action: str | None, method: str, initkwargs: dict[str, Any], path: str | None = "/") -> Any:
    """A view object set up as ``dispatch`` would before a request, for schemas and permission checks.

    Its ``request`` is a real DRF ``Request`` of an anonymous GET (no authenticator runs): a
    ``get_serializer_class``/``get_queryset`` that reads ``self.request.user`` or ``query_params``
    works while schemas are built. ``path=None``: no request (the caller sets its own).
    """
    view = cls(**initkwargs)
    if action is not None:
        view.action_map = {method.lower(): action}
        view.action = action
    view.args, view.kwargs = (), {}
    view.format_kwarg = None
    view.headers = {}
    view.request = None
    if path is None:
        return view
    http = WSGIRequest(
        {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": request_host(),
            "SERVER_PORT": "80",
            "HTTP_HOST": request_host(),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(b""),
        }
    )
    http.user = AnonymousUser()
    request = Request(http, parsers=[], authenticators=[], negotiator=view.get_content_negotiator())
    request.user = AnonymousUser()
    view.request = request
    return view


def _view_class(view: Any) -> Any:
    cls = getattr(view, "cls", view)  # @api_view functions and as_view() results carry .cls
    if not (isinstance(cls, type) and issubclass(cls, APIView)):
        raise ImproperlyConfigured(f"{view!r} is not a DRF view, viewset or @api_view function")
    return cls


def _method_for(cls: Any, action: str | None, method: str | None) -> str:
    if method:
        return method.upper()
    if action is not None:
        if action in STANDARD_ACTIONS:
            return STANDARD_ACTIONS[action]
        mapping = getattr(getattr(cls, action, None), "mapping", None)
        if not mapping:
            raise ImproperlyConfigured(f"{cls.__name__} has no action {action!r}")
        return str(next(iter(mapping))).upper()
    handlers = [m.upper() for m in ("get", "post", "put", "patch", "delete") if hasattr(cls, m)]
    if len(handlers) != 1:
        raise ImproperlyConfigured(f"{cls.__name__} handles {handlers}: pass method=... to choose one")
    return handlers[0]


def _serializer(spec: Any) -> Any:
    if spec is None:
        return None
    return spec() if isinstance(spec, type) else spec


def _request_serializer(view: Any) -> Any:
    """``view.get_serializer()``, as DRF's schema generator calls it (None for a view without one)."""
    get_serializer = getattr(view, "get_serializer", None)
    if get_serializer is None:
        return None
    try:
        return get_serializer()
    except (AssertionError, APIException):  # no serializer_class (a plain APIView or @api_view)
        return None


def _serializer_doc(spec: Any) -> str | None:
    """The docstring of a serializer class (or of a view's static ``serializer_class``): read without building the
    view, so registering needs no database. A class without a docstring of its own gives None."""
    serializer = getattr(spec, "serializer_class", spec)
    serializer = getattr(serializer, "child", serializer)  # many=True
    serializer = serializer if isinstance(serializer, type) else type(serializer)
    if not issubclass(serializer, serializers.BaseSerializer) or serializer.__module__.startswith("rest_framework."):
        return None
    doc = serializer.__dict__.get("__doc__")
    return doc if isinstance(doc, str) else None


def _lookup_schema(view: Any, name: str) -> dict[str, Any]:
    model = getattr(getattr(view, "queryset", None), "model", None)
    schema: dict[str, Any] = {"type": "string"}
    if model is not None:
        try:
            model_field = model._meta.get_field(getattr(view, "lookup_field", "pk"))
        except Exception:  # noqa: BLE001  # "pk" or a custom lookup: fall back to the primary key
            model_field = model._meta.pk
        if isinstance(model_field, (models.AutoField, models.IntegerField)):
            schema = {"type": "integer"}
        schema["description"] = str(get_pk_description(model, model_field))
    return schema


def drf_tool(
    view: Any,
    *,
    action: str | None = None,
    method: str | None = None,
    name: str | None = None,
    basename: str | None = None,
    path: str = "/",
    url_kwargs: Sequence[str] = (),
    input_serializer: Any = None,
    output_serializer: Any = None,
    title: str | None = None,
    description: str | None = None,
    annotations: dict[str, Any] | None = None,
    scopes: Sequence[str] = (),
    permissions: Sequence[str] = (),
    check: Check | None = None,
    task: TaskSupport | None = None,
    audit: AuditPolicy = REDACTED,
    filters: Sequence[str] | None = None,
) -> DRFTool:
    """One tool for a DRF view: an ``APIView``, an ``@api_view`` function, or one viewset ``action``.

    ``input_serializer``/``output_serializer`` (class or instance; ``many=True``
    for a list) replace what ``get_serializer()`` gives, for views without a
    ``serializer_class``. ``url_kwargs`` names URL arguments of a plain APIView;
    viewsets and generic detail views get their lookup argument automatically.
    ``task`` ("optional"/"required") runs the view as an MCP task (docs/tasks.md).
    ``audit`` says what the audit log keeps of a call (as for ``@site.tool``).
    ``filters`` names the query parameters of the filter backends a list tool
    takes (the others are left out of its schema); None: all of them.
    """
    cls = _view_class(view)
    is_viewset = issubclass(cls, ViewSetMixin)
    if is_viewset and action is None:
        raise ImproperlyConfigured(f"{cls.__name__} is a viewset: pass action=... (or use register_drf)")
    http_method = _method_for(cls, action, method)
    model = getattr(getattr(cls, "queryset", None), "model", None)
    base = basename or (model._meta.model_name if model is not None else _snake(cls.__name__).removesuffix("_view_set"))
    # A viewset with get_queryset() only (no queryset attribute) still names its model in its serializer's Meta:
    # its tools get the model's titles and descriptions ("List notes.") as the others do.
    model = model or getattr(getattr(getattr(cls, "serializer_class", None), "Meta", None), "model", None)
    initkwargs: dict[str, Any] = {}
    detail = action in DETAIL_ACTIONS
    if is_viewset:
        func = getattr(cls, action or "", None)
        extra = getattr(func, "kwargs", None) if action not in STANDARD_ACTIONS else None
        if action not in STANDARD_ACTIONS:
            detail = bool(getattr(func, "detail", False))
        initkwargs = {**(extra or {}), "basename": base, "detail": detail}
    elif issubclass(cls, (RetrieveModelMixin, UpdateModelMixin, DestroyModelMixin)) and http_method != "POST":
        detail = not (issubclass(cls, ListModelMixin) and http_method == "GET")
    # @api_view functions become a class named after the function, which keeps its docstring.
    tool_name = name or (f"{base}_{action}" if is_viewset else _snake(cls.__name__))

    is_list = (action == "list") if is_viewset else (http_method == "GET" and not detail and hasattr(cls, "list"))
    path_params = list(url_kwargs)
    if detail and (is_viewset or not url_kwargs):
        path_params = [str(getattr(cls, "lookup_url_kwarg", None) or getattr(cls, "lookup_field", "pk"))]
    query_params: list[str] = []  # filled when the schemas are built

    def build() -> tuple[Signature, dict[str, Any]]:
        """The schemas, from the view, its serializers and filter backends: on first use, never while Django
        starts (a ``get_queryset`` or filterset may query the database; the database may not be there yet)."""
        instance = view_instance(cls, action, http_method, initkwargs, path)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for p in path_params:
            properties[p] = _lookup_schema(instance, p)
            required.append(p)
        query: list[str] = []
        if is_list:
            declared = query_parameters(instance, path, http_method, filters)
            declared += pagination_parameters(instance)
            for param_name, schema, needed in declared:
                properties[param_name] = schema
                query.append(param_name)
                if needed:
                    required.append(param_name)
        if http_method in WRITE_METHODS:
            serializer = _serializer(input_serializer) or _request_serializer(instance)
            if serializer is None:
                raise ImproperlyConfigured(
                    f"Tool {tool_name!r}: {cls.__name__} has no serializer for its {http_method} body; pass "
                    "input_serializer=... (rest_framework.serializers.Serializer for no body)"
                )
            if isinstance(serializer, serializers.Serializer):
                body = serializer_schema(instance, path, http_method, serializer, "input")
                for key, sub in body.get("properties", {}).items():
                    if key in properties:
                        raise ImproperlyConfigured(
                            f"Tool {tool_name!r}: {key!r} is both a URL/query and a body argument"
                        )
                    properties[key] = sub
                if action != "partial_update" and http_method != "PATCH":
                    required.extend(body.get("required", []))
        input_schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            input_schema["required"] = required
        query_params[:] = query
        # Only URL arguments are enforced before the call: DRF validates the rest, with its own messages.
        params = [make_param(n, required=n in path_params) for n in properties]
        signature = Signature(
            arguments_model(model_name(tool_name), params),
            ctx_param=CTX,
            returns=Any,
            output_schema=_output_schema(instance),  # call_view returns the CallToolResult itself
            description=description,
        )
        return signature, input_schema

    def _output_schema(instance: Any) -> dict[str, Any] | None:
        if http_method == "DELETE":
            return None
        out = _serializer(output_serializer)
        if out is None and (action is None or action in STANDARD_ACTIONS):
            # An extra @action's serializer_class describes its input; what it returns is unknown.
            out = _request_serializer(instance)
            if out is not None and is_list:
                out = serializers.ListSerializer(child=out)
        item_schema: Any = None
        if isinstance(out, serializers.ListSerializer):
            child = serializer_schema(instance, path, http_method, out.child, "output")
            item_schema = {"type": "array", "items": child}
            paginator_class = getattr(instance, "pagination_class", None) if is_list else None
            if paginator_class is not None:
                item_schema = to_json_schema(paginator_class().get_paginated_response_schema(item_schema), "output")
        elif isinstance(out, serializers.Serializer):
            item_schema = serializer_schema(instance, path, http_method, out, "output")
        if item_schema is None:
            return None
        if item_schema.get("type") == "object":
            return dict(item_schema)
        return {"type": "object", "properties": {"result": item_schema}, "required": ["result"]}

    if description is None:
        func = getattr(cls, action, None) if action else None
        own = func.__doc__ if func is not None and action not in STANDARD_ACTIONS else None
        lines = []
        if action in _ACTION_TEXT and model is not None:
            meta = model._meta
            lines.append(_ACTION_TEXT[action].format(name=meta.verbose_name, plural=meta.verbose_name_plural))
        doc = (
            own
            or cls.__doc__
            or _serializer_doc(next(s for s in (output_serializer, input_serializer, cls) if s is not None))
        )
        if doc:
            lines.append(inspect.cleandoc(doc))
        description = "\n\n".join(lines) or None

    if title is None and action in _ACTION_TITLE and model is not None:
        meta = model._meta
        title = _ACTION_TITLE[action].format(name=meta.verbose_name, plural=meta.verbose_name_plural)
        title = title[:1].upper() + title[1:]
    elif title is None and is_viewset and action not in STANDARD_ACTIONS:
        # An extra @action: its own name= (DRF's, as the browsable API shows it), else its method's name, after
        # the model's ("Gadget: bump"); host directories want every tool titled (W004).
        extra_name = (getattr(getattr(cls, action or "", None), "kwargs", None) or {}).get("name")
        words = str(extra_name or (action or "").replace("_", " "))
        title = f"{model._meta.verbose_name}: {words}" if model is not None else words
        title = title[:1].upper() + title[1:]

    tool_holder: list[DRFTool] = []
    tool = DRFTool(
        handler(lambda ctx, args: tool_holder[0].call_view(ctx, args)),
        name=tool_name,
        deferred=build,
        ctx_param=CTX,
        title=title,
        description=description,
        annotations={**default_annotations(http_method), **(annotations or {})},
        scopes=list(scopes),
        permissions=list(permissions),
        check=check,
        task_support=task,
        audit=audit,
        view_class=cls,
        action=action,
        http_method=http_method,
        path=path,
        initkwargs=initkwargs,
        path_params=path_params,
        query_params=query_params,
    )
    tool_holder.append(tool)
    return tool


def make_param(name: str, *, required: bool) -> Parameter:
    """One argument: any JSON value, validated by DRF itself; an optional one the client left out is ``UNSET``."""
    return Parameter(name, Any, EMPTY if required else UNSET)


def drf_tools(
    viewset: Any,
    *,
    actions: Sequence[str] | None = None,
    basename: str | None = None,
    output_serializers: dict[str, Any] | None = None,
    **options: Any,
) -> list[DRFTool]:
    """A tool per action of a viewset: the standard actions it has, then its extra ``@action`` methods.

    ``output_serializers`` maps an action to the serializer of what it returns
    (extra actions have no output schema without one).
    """
    cls = _view_class(viewset)
    if not issubclass(cls, ViewSetMixin):
        return [drf_tool(viewset, basename=basename, **options)]
    if actions is None:
        actions = [a for a in STANDARD_ACTIONS if hasattr(cls, a)]
        actions += [f.__name__ for f in cls.get_extra_actions()]
    outputs = output_serializers or {}
    return [drf_tool(cls, action=a, basename=basename, output_serializer=outputs.get(a), **options) for a in actions]


def _drf_tools(view: Any, *, action: str | None = None, **options: Any) -> list[Tool]:
    """``register_drf``: one tool for an action (or a plain view), else one per action of a viewset."""
    return [drf_tool(view, action=action, **options)] if action else list(drf_tools(view, **options))


hooks.tool_makers["drf"] = _drf_tools

__all__ = ["DRFTool", "MCPCallerAuthentication", "drf_tool", "drf_tools", "to_json_schema"]
