"""How a handler is called: its ``Context`` parameter, its arguments model, its output.

One module for what tools, resources and prompts read from a callable (in the
spirit of django-ninja's ``ViewSignature``):

- ``context_parameter(fn)``: the parameter annotated ``Context`` (a subclass,
  ``Optional[Context]``/``Context | None``, ``Annotated[Context, ...]``, or the
  same as a string annotation); the same rule for tools, resources and prompts.
- ``Signature.from_callable(fn)``: the pydantic arguments model (its JSON
  Schema is the ``inputSchema``), the description and per-argument docs from
  the docstring, and the output schema of a typed return.
- ``Signature(arguments_model(...), ...)``: the same built from declared
  arguments, for tools whose callable does not describe them (view and DRF
  tools).
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

import mcp_types
import pydantic
from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model

from .content import CONTENT_TYPES
from .context import Context

#: A parameter without a default (also: a return without an annotation).
EMPTY: Any = inspect.Parameter.empty
_NO_STRUCTURE = (type(None), Any, str, bytes, *CONTENT_TYPES)
_ARGS_HEADINGS = ("Args:", "Arguments:", "Parameters:")
#: A string annotation that could not be resolved still names Context when it reads like this.
_CONTEXT_NAME = r"(?:[\w.]+\.)?Context"
_CONTEXT_TEXT = re.compile(
    rf"\s*(?:{_CONTEXT_NAME}(?:\s*\|\s*None)?|None\s*\|\s*{_CONTEXT_NAME}"
    rf"|(?:typing\.)?Optional\[\s*{_CONTEXT_NAME}\s*\])\s*"
)


# -- docstrings ----------------------------------------------------------------------------


def parse_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """Description and per-argument docs (a Google-style ``Args:`` section) of a cleaned docstring."""
    if not doc:
        return None, {}
    args: dict[str, str] = {}
    desc_lines: list[str] = []
    in_args = False
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in _ARGS_HEADINGS:
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


def doc_parts(fn: Callable[..., Any]) -> tuple[str | None, dict[str, str]]:
    """``parse_docstring`` of ``fn``'s docstring."""
    return parse_docstring(inspect.getdoc(fn))


# -- the Context parameter -----------------------------------------------------------------


def _is_union(tp: Any) -> bool:
    origin = get_origin(tp)
    return origin is Union or origin is types.UnionType


def is_context(annotation: Any) -> bool:
    """Whether an annotation asks for the ``Context``: the class or a subclass, optional or ``Annotated``."""
    if isinstance(annotation, str):
        return bool(_CONTEXT_TEXT.fullmatch(annotation))
    if get_origin(annotation) is Annotated:
        return is_context(get_args(annotation)[0])
    if _is_union(annotation):
        members = [a for a in get_args(annotation) if a is not type(None)]
        return len(members) == 1 and is_context(members[0])
    return inspect.isclass(annotation) and issubclass(annotation, Context)


def type_hints(fn: Callable[..., Any], *, strict: bool = True) -> dict[str, Any]:
    """``fn``'s annotations with string (``from __future__ import annotations``) ones resolved.

    ``strict=False`` never raises: a name that cannot be resolved (an import under
    ``TYPE_CHECKING``) leaves that one annotation a string.
    """
    try:
        return get_type_hints(fn, include_extras=True)
    except Exception:
        if strict:
            raise
    hints: dict[str, Any] = {}
    namespace = getattr(inspect.unwrap(fn), "__globals__", {})
    for name, param in _parameters(fn).items():
        ann = param.annotation
        if isinstance(ann, str):
            try:
                ann = get_type_hints(_Holder(ann), namespace, include_extras=True)["value"]
            except Exception:  # noqa: BLE001  # unresolvable: keep the text
                pass
        if ann is not EMPTY:
            hints[name] = ann
    return hints


class _Holder:
    """Something ``get_type_hints`` resolves one annotation of."""

    def __init__(self, annotation: str) -> None:
        self.__annotations__ = {"value": annotation}


def _parameters(fn: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # a callable without a signature: nothing to inject
        return {}


def context_parameter(fn: Callable[..., Any]) -> str | None:
    """The name of ``fn``'s parameter annotated ``Context``, or None. The one rule everywhere."""
    hints = type_hints(fn, strict=False)
    for name in _parameters(fn):
        if name in hints and is_context(hints[name]):
            return name
    return None


# -- arguments -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Parameter:
    """One declared argument: a name, a type (``Any`` accepts any JSON value), a default or ``EMPTY``."""

    name: str
    annotation: Any = Any
    default: Any = EMPTY
    description: str | None = None


def model_name(name: str) -> str:
    """The arguments model's class name for a tool name (``book_details`` -> ``BookDetailsArguments``)."""
    return "".join(p.capitalize() for p in name.replace("-", "_").split("_")) + "Arguments"


def arguments_model(name: str, parameters: Iterable[Parameter]) -> type[BaseModel]:
    """A pydantic model of ``parameters`` that forbids other keys; its JSON Schema is an ``inputSchema``.

    A parameter's ``description`` wins over one its annotation carries
    (``Annotated[str, Field(description=...)]``); without one that is kept.
    """
    fields: dict[str, Any] = {}
    for p in parameters:
        default = ... if p.default is EMPTY else p.default
        if p.description is not None:
            finfo = pydantic.Field(default=default, description=p.description)
        else:
            finfo = pydantic.Field(default=default)
        fields[p.name] = (p.annotation, finfo)
    return create_model(name, __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False), **fields)


def model_parameters(model: type[BaseModel]) -> list[Parameter]:
    """The fields of a pydantic model as parameters, keeping their constraints and descriptions."""
    params: list[Parameter] = []
    for name, finfo in model.model_fields.items():
        default = EMPTY if finfo.is_required() else finfo.get_default(call_default_factory=True)
        ann = Annotated[finfo.annotation, finfo] if finfo.metadata or finfo.description else finfo.annotation
        params.append(Parameter(name, ann, default))
    return params


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The ``inputSchema`` of an arguments model: its JSON Schema without title and ``additionalProperties``."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("additionalProperties", None)
    schema.setdefault("properties", {})
    return schema


# -- output --------------------------------------------------------------------------------


def _is_content(tp: Any) -> bool:
    """A content block type, or a union/Annotated of them (e.g. ``ContentBlock``)."""
    if get_origin(tp) is Annotated:
        return _is_content(get_args(tp)[0])
    if _is_union(tp):
        return all(_is_content(a) for a in get_args(tp))
    return inspect.isclass(tp) and issubclass(tp, CONTENT_TYPES)


def _is_call_result(tp: Any) -> bool:
    return inspect.isclass(tp) and issubclass(tp, mcp_types.CallToolResult)


def wants_structure(tp: Any) -> bool:
    """Typed returns get an outputSchema, except text, bytes, None/Any, content blocks and a ``CallToolResult``.

    A ``CallToolResult`` is sent as it is (``Tool.to_result``): its own schema would describe the
    envelope, not the ``structuredContent`` in it, and clients that validate would refuse every result.
    """
    if tp in _NO_STRUCTURE or tp is EMPTY or _is_content(tp) or _is_call_result(tp):
        return False
    if _is_union(tp):
        return all(wants_structure(a) for a in get_args(tp) if a is not type(None))
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


# -- the signature -------------------------------------------------------------------------


class Signature:
    """How a tool is called and what it returns.

    ``arguments`` validates what the client sends; ``ctx_param`` receives the
    ``Context``; ``returns`` (a type) gives ``output_adapter`` and
    ``output_schema`` (wrapped as ``{"result": ...}`` when not an object, then
    ``wrap_output``). ``output_schema=`` publishes a schema of a handler that
    returns ``CallToolResult`` itself (no adapter).
    """

    def __init__(
        self,
        arguments: type[BaseModel],
        *,
        ctx_param: str | None = None,
        returns: Any = EMPTY,
        output_schema: dict[str, Any] | None = None,
        description: str | None = None,
    ) -> None:
        self.arguments = arguments
        self.ctx_param = ctx_param
        self.returns = returns
        self.description = description
        self.output_adapter: TypeAdapter[Any] | None = None
        self.wrap_output = False
        self.output_schema = output_schema
        if output_schema is None and wants_structure(returns):
            self.output_adapter = TypeAdapter(returns)
            out = self.output_adapter.json_schema(mode="serialization")
            if not _is_object_schema(out):
                self.wrap_output = True
                defs = out.pop("$defs", None)
                out = {"type": "object", "properties": {"result": out}, "required": ["result"]}
                if defs:
                    out["$defs"] = defs
            out.pop("title", None)
            self.output_schema = out

    @classmethod
    def from_callable(cls, fn: Callable[..., Any], *, name: str | None = None) -> Signature:
        """Read ``fn``: every parameter but the ``Context`` one is an argument; ``*args``/``**kwargs`` are refused.

        ``name`` (the tool's) names the model and the errors; default ``fn.__name__``.
        """
        name = str(name or getattr(fn, "__name__", type(fn).__name__))
        sig = inspect.signature(fn)
        hints = type_hints(fn)
        description, arg_docs = doc_parts(fn)
        ctx_param: str | None = None
        params: list[Parameter] = []
        for pname, param in sig.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"Tool {name!r}: *args/**kwargs cannot be described to a client")
            ann = hints.get(pname, Any)
            if is_context(ann):
                if ctx_param is not None:
                    raise TypeError(f"Tool {name!r}: more than one Context parameter")
                ctx_param = pname
                continue
            params.append(Parameter(pname, ann, param.default, arg_docs.get(pname)))
        return cls(
            arguments_model(model_name(name), params),
            ctx_param=ctx_param,
            returns=hints.get("return", EMPTY),
            description=description,
        )

    def input_schema(self) -> dict[str, Any]:
        return input_schema(self.arguments)

    def parse(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Validated arguments as keyword arguments; raises ``pydantic.ValidationError``."""
        model = self.arguments.model_validate(arguments or {})
        return dict(model.__dict__)  # the fields, and only them (extra="forbid"); no model_fields lookup per call


__all__ = [
    "EMPTY",
    "Parameter",
    "Signature",
    "arguments_model",
    "context_parameter",
    "doc_parts",
    "input_schema",
    "is_context",
    "model_parameters",
    "parse_docstring",
    "type_hints",
    "wants_structure",
]
