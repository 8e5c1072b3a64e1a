"""Tool declaration: a Python callable becomes an MCP tool.

The signature becomes a pydantic model (JSON Schema 2020-12 with ``$defs`` for
the ``inputSchema``), the docstring the description, and a typed return the
``outputSchema`` plus ``structuredContent``. Sync callables run in the bounded
sync pool (``django_mcp.sync``); async ones run on the event loop.
"""

from __future__ import annotations

import inspect
import json
import types
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

import mcp_types
import pydantic
from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model

from .access import Check, Guard
from .conf import mcp_settings
from .content import CONTENT_TYPES, dump
from .context import Context
from .sync import user_pool

_NO_STRUCTURE = (type(None), Any, str, bytes, *CONTENT_TYPES)


def _doc_parts(fn: Callable[..., Any]) -> tuple[str | None, dict[str, str]]:
    """Description and per-argument docs ("Args:" section, Google style) from a docstring."""
    doc = inspect.getdoc(fn)
    if not doc:
        return None, {}
    lines = doc.splitlines()
    args: dict[str, str] = {}
    desc_lines: list[str] = []
    in_args = False
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            if not stripped:
                current = None
                continue
            if stripped.endswith(":") and " " not in stripped:
                in_args = False
                continue
            if line.startswith((" ", "\t")) and ":" in stripped and not line.startswith(("        ", "\t\t")):
                name, _, text = stripped.partition(":")
                current = name.split("(")[0].strip()
                args[current] = text.strip()
            elif current:
                args[current] += " " + stripped
            continue
        desc_lines.append(line)
    return "\n".join(desc_lines).strip() or None, args


def _is_context(annotation: Any) -> bool:
    return annotation is Context or (inspect.isclass(annotation) and issubclass(annotation, Context))


def _is_union(tp: Any) -> bool:
    origin = get_origin(tp)
    return origin is Union or origin is types.UnionType


def _is_content(tp: Any) -> bool:
    """A content block type, or a union/Annotated of them (e.g. ``ContentBlock``)."""
    if get_origin(tp) is Annotated:
        return _is_content(get_args(tp)[0])
    if _is_union(tp):
        return all(_is_content(a) for a in get_args(tp))
    return inspect.isclass(tp) and issubclass(tp, CONTENT_TYPES)


def _wants_structure(tp: Any) -> bool:
    """Typed returns get an outputSchema, except text, bytes, None/Any and content blocks."""
    if tp in _NO_STRUCTURE or tp is inspect.Signature.empty or _is_content(tp):
        return False
    if _is_union(tp):
        return all(_wants_structure(a) for a in get_args(tp) if a is not type(None))
    if get_origin(tp) in (list, tuple) and get_args(tp) and _is_content(get_args(tp)[0]):
        return False
    return True


def _is_object_schema(schema: dict[str, Any]) -> bool:
    if schema.get("type") == "object":
        return True
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = schema.get("$defs", {}).get(ref.rsplit("/", 1)[1], {})
        return bool(target.get("type") == "object")
    return False


@dataclass
class Tool(Guard):
    """A registered tool. Build one with ``MCPServer.tool``."""

    fn: Callable[..., Any]
    name: str
    title: str | None = None
    description: str | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    scopes: list[str] = field(default_factory=list)
    #: Django permissions (``"app.codename"``) the caller needs; see ``access``.
    permissions: list[str] = field(default_factory=list)
    check: Check | None = None
    #: Publish this JSON Schema as the ``inputSchema`` instead of the one derived from the
    #: signature (for keywords a signature cannot express); arguments are still validated
    #: against the signature.
    input_schema: dict[str, Any] = field(default_factory=dict)
    ctx_param: str | None = None
    input_model: type[BaseModel] = field(init=False)
    output_schema: dict[str, Any] | None = field(init=False, default=None)
    output_adapter: TypeAdapter[Any] | None = field(init=False, default=None)
    wrap_output: bool = field(init=False, default=False)
    is_async: bool = field(init=False, default=False)
    _runner: Callable[..., Awaitable[Any]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        fn = self.fn
        self.is_async = inspect.iscoroutinefunction(fn)
        sig = inspect.signature(fn)
        hints = get_type_hints(fn, include_extras=True)
        doc, arg_docs = _doc_parts(fn)
        if self.description is None:
            self.description = doc
        fields: dict[str, Any] = {}
        for pname, param in sig.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"Tool {self.name!r}: *args/**kwargs cannot be described to a client")
            ann = hints.get(pname, Any)
            if _is_context(ann):
                self.ctx_param = pname
                continue
            default = ... if param.default is inspect.Parameter.empty else param.default
            # A docstring "Args:" entry describes the argument; without one, keep any description
            # the annotation carries (``Annotated[str, Field(description=...)]``).
            if pname in arg_docs:
                finfo = pydantic.Field(default=default, description=arg_docs[pname])
            else:
                finfo = pydantic.Field(default=default)
            fields[pname] = (ann, finfo)
        model_name = "".join(p.capitalize() for p in self.name.replace("-", "_").split("_")) + "Arguments"
        self.input_model = create_model(
            model_name, __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False), **fields
        )
        if self.input_schema:
            if self.input_schema.get("type") != "object":
                raise TypeError(f"Tool {self.name!r}: input_schema must be a JSON Schema with type 'object'")
        else:
            schema = self.input_model.model_json_schema()
            schema.pop("title", None)
            schema.pop("additionalProperties", None)
            schema.setdefault("properties", {})
            self.input_schema = schema
        ret = hints.get("return", inspect.Signature.empty)
        if _wants_structure(ret):
            self.output_adapter = TypeAdapter(ret)
            out = self.output_adapter.json_schema(mode="serialization")
            if not _is_object_schema(out):
                self.wrap_output = True
                defs = out.pop("$defs", None)
                out = {"type": "object", "properties": {"result": out}, "required": ["result"]}
                if defs:
                    out["$defs"] = defs
            out.pop("title", None)
            self.output_schema = out
        self._runner = fn if self.is_async else user_pool.wrap(self._call_sync)

    def _call_sync(self, **kwargs: Any) -> Any:
        """Run a sync tool in its thread, in a savepoint when ``ATOMIC_TOOL_CALLS`` is on.

        The savepoint lives on the thread that does the work, so an exception
        (``ToolError`` included) rolls back every write of the call. Async tools
        are not wrapped: their ORM calls hop to asgiref's thread shared with other
        requests, where a transaction spanning ``await`` points cannot live.
        """
        if mcp_settings.ATOMIC_TOOL_CALLS:
            from django.db import transaction

            with transaction.atomic():
                return self.fn(**kwargs)
        return self.fn(**kwargs)

    def definition(self) -> dict[str, Any]:
        """The newest-revision wire form; shaping prunes it for older clients."""
        d: dict[str, Any] = {"name": self.name, "inputSchema": self.input_schema}
        if self.title:
            d["title"] = self.title
        if self.description:
            d["description"] = self.description
        if self.output_schema is not None:
            d["outputSchema"] = self.output_schema
        if self.annotations:
            d["annotations"] = self.annotations
        if self.icons:
            d["icons"] = self.icons
        if self.meta:
            d["_meta"] = self.meta
        return d

    def parse_arguments(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Validate arguments; raises ``pydantic.ValidationError``."""
        model = self.input_model.model_validate(arguments or {})
        return dict(model.__dict__)  # the fields, and only them (extra="forbid"); no model_fields lookup per call

    async def run(self, kwargs: dict[str, Any], ctx: Context) -> Any:
        if self.ctx_param:
            kwargs[self.ctx_param] = ctx
        return await self._runner(**kwargs)

    def to_result(self, value: Any) -> dict[str, Any]:
        """Turn what the callable returned into a CallToolResult dict."""
        if isinstance(value, mcp_types.CallToolResult):
            return value.model_dump(by_alias=True, exclude_none=True, mode="json")
        if self.output_adapter is not None:
            structured = self.output_adapter.dump_python(value, mode="json")
            if self.wrap_output:
                structured = {"result": structured}
            return {
                "content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
                "structuredContent": structured,
            }
        return {"content": to_content(value)}


def to_content(value: Any) -> list[dict[str, Any]]:
    """Unstructured return values: text, content blocks, lists of them, or JSON text."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, CONTENT_TYPES):
        return [dump(value)]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, CONTENT_TYPES) for v in value):
        return [dump(v) for v in value]
    if isinstance(value, BaseModel):
        return [{"type": "text", "text": value.model_dump_json()}]
    return [{"type": "text", "text": json.dumps(value, ensure_ascii=False, default=str)}]
