"""JSON Schema 2020-12 for DRF tools: serializers, django-filter filtersets and query parameters.

A published schema must be valid JSON Schema (clients compile it) and describe
what the view really emits (the SDK clients validate ``structuredContent``
against ``outputSchema``). DRF's ``AutoSchema`` writes OpenAPI 3.0 and guesses
``string`` for fields it does not know; ``Inspector`` corrects what DRF would
publish wrongly, and ``to_json_schema`` converts the rest (``nullable``,
``$ref``, Python regular expressions, ``Decimal`` bounds...). With
``drf-spectacular`` installed, its serializer introspection (``OpenApiTypes``,
``extend_schema_field``, type hints of ``SerializerMethodField`` methods) is
used instead of DRF's.
"""

from __future__ import annotations

import copy
import datetime
import decimal
import importlib.util
import logging
import re
import typing
import uuid
from typing import Any

from django import forms
from django.conf import settings
from django.core.validators import RegexValidator, URLValidator
from django.db import models
from rest_framework import serializers
from rest_framework.schemas.openapi import AutoSchema
from rest_framework.settings import api_settings

from ..conf import mcp_settings

logger = logging.getLogger("django_mcp.drf")

#: ``format`` values JSON Schema 2020-12 defines; OpenAPI's own (``decimal``, ``binary``, ``int64``...) go.
JSON_SCHEMA_FORMATS = frozenset(
    {
        "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
        "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer",
        "relative-json-pointer", "regex",
    }
)  # fmt: skip
#: OpenAPI 3.0 keywords that JSON Schema does not have (``nullable``, ``readOnly``... are handled apart).
_OPENAPI_ONLY = frozenset({"example", "discriminator", "xml", "externalDocs"})


def has_spectacular() -> bool:
    return importlib.util.find_spec("drf_spectacular") is not None


# -- Python regular expressions as ECMA-262 (what JSON Schema's ``pattern`` is) ----------------------------------

#: Escapes ECMA-262 (``u`` flag) knows outside a character class; any other ``\\x`` is a syntax error there.
_ECMA_ESCAPES = set("dDwWsSbBfnrtv0123456789")
_SYNTAX = set("^$\\.*+?()[]{}|/")


def ecma_pattern(pattern: str) -> str | None:
    """A Python ``re`` pattern as an ECMA-262 (``u`` flag) one, or None when it has no such equivalent.

    The result compiles in both ECMA-262 and Python's ``re`` (what clients'
    validators run): ``\\A`` → ``^``, ``\\Z``/``\\z`` → ``$``, ``(?P<n>...)`` → ``(...)``;
    escaped characters ECMA-262 has no escape for lose their backslash. Back-references by name,
    inline flags, comments, conditionals, possessive quantifiers and atomic groups have no such
    equivalent: the pattern is dropped (the view still validates it).
    """
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                return None
            e = pattern[i + 1]
            i += 2
            if e in "AZz" and not in_class:
                out.append("^" if e == "A" else "$")
            elif e in _ECMA_ESCAPES or e in _SYNTAX or (in_class and e == "-"):
                out.append("\\" + e)
            elif e in "xu":
                out.append("\\" + e)
            elif e == "N" or e.isalpha():
                return None  # \N{...}, \p... are not Python; other letters are not ECMA escapes
            else:
                out.append(e if in_class or e not in _SYNTAX else "\\" + e)
            continue
        if in_class:
            if c == "]":
                in_class = False
            elif c == "[" and pattern[i + 1 : i + 2] == ":":
                return None  # a POSIX-like class Python reads literally
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if pattern[i : i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i : i + 1] == "]":  # a leading "]" is literal in Python
                out.append("\\]")
                i += 1
            continue
        if c == "(" and pattern[i + 1 : i + 2] == "?":
            rest = pattern[i + 2 :]
            if rest.startswith("P<"):  # a named group: a plain one (Python's re, which validators use, has no (?<n>)
                end = pattern.find(">", i)
                if end < 0:
                    return None
                out.append("(")
                i = end + 1
                continue
            if rest[:1] in (":", "=", "!") or rest[:2] in ("<=", "<!"):
                out.append("(?")
                i += 2
                continue
            return None  # (?i), (?#...), (?(1)...), (?>...)
        if c in "*+?}" and pattern[i + 1 : i + 2] == "+":
            return None  # possessive quantifier
        if c == "{" and not re.match(r"\{\d+(,\d*)?\}", pattern[i:]):
            out.append("\\{")  # a literal brace is a syntax error under the u flag
            i += 1
            continue
        if c == "}" and not re.search(r"\{\d+(,\d*)?$", "".join(out)):
            out.append("\\}")
            i += 1
            continue
        out.append(c)
        i += 1
    if in_class:
        return None
    return "".join(out)


# -- OpenAPI 3.0 to JSON Schema 2020-12 ------------------------------------------------------------------------


def json_value(value: Any) -> Any:
    """A schema value (``default``, ``enum`` member, bound) as plain JSON, or ``_DROP`` when it has none."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else _DROP
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return _DROP
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [json_value(v) for v in value]
        return _DROP if any(v is _DROP for v in items) else items
    if isinstance(value, dict):
        pairs = {str(k): json_value(v) for k, v in value.items()}
        return _DROP if any(v is _DROP for v in pairs.values()) else pairs
    if hasattr(value, "value"):  # enum members (Django's TextChoices...)
        return json_value(value.value)
    return str(value)


_DROP: Any = object()


def to_json_schema(schema: Any, mode: str, components: dict[str, Any] | None = None) -> Any:
    """An OpenAPI 3.0 schema (DRF's or drf-spectacular's) as JSON Schema 2020-12.

    ``nullable`` becomes a ``"null"`` type (or an ``anyOf`` with null), ``oneOf``
    an ``anyOf`` (generators write it for overlapping alternatives), ``$ref``
    to ``#/components/schemas/...`` are inlined from ``components``;
    ``mode="input"`` drops read-only properties, ``mode="output"`` write-only
    ones. Patterns are translated to ECMA-262 (or dropped), ``Decimal`` bounds
    become numbers, OpenAPI-only keywords and formats go, a boolean
    ``exclusiveMaximum``/``exclusiveMinimum`` becomes the bound itself.
    """
    return _convert(schema, mode, components or {}, ())


def _convert(schema: Any, mode: str, components: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(schema, list):
        return [_convert(s, mode, components, seen) for s in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        name = ref.rsplit("/", 1)[1]
        if name in seen or name not in components:
            return {}  # a recursive serializer: anything below this depth
        target = _convert(components[name], mode, components, (*seen, name))
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        if extra:
            return {"allOf": [target], **_convert(extra, mode, components, seen)}
        return target
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("nullable", "readOnly", "writeOnly", "exclusiveMaximum", "exclusiveMinimum") or key in _OPENAPI_ONLY:
            continue
        if key.startswith("x-"):
            continue
        if key == "properties":
            skip = "readOnly" if mode == "input" else "writeOnly"
            out[key] = {
                name: _convert(sub, mode, components, seen)
                for name, sub in value.items()
                if not (isinstance(sub, dict) and sub.get(skip))
            }
        elif key == "oneOf":  # OpenAPI generators write oneOf for alternatives that overlap ("" is both)
            out.setdefault("anyOf", []).extend(_convert(value, mode, components, seen))
        elif key in ("items", "additionalProperties", "not", "allOf", "anyOf"):
            out.setdefault(key, value if key != "anyOf" else [])
            if key == "anyOf":
                out[key].extend(_convert(value, mode, components, seen))
            else:
                out[key] = _convert(value, mode, components, seen)
        elif key == "pattern":
            translated = ecma_pattern(str(value))
            if translated is not None:
                out[key] = translated
        elif key == "format":
            if value in JSON_SCHEMA_FORMATS and value != "time" and (value != "date-time" or settings.USE_TZ):
                out[key] = value  # DRF writes times without an offset, and naive datetimes without USE_TZ
        elif key == "multipleOf":
            if isinstance(value, int) or (isinstance(value, decimal.Decimal) and value == value.to_integral_value()):
                out[key] = int(value)  # a fractional step fails valid values in float arithmetic (0.07 / 0.01)
        elif key in ("default", "enum", "const", "maximum", "minimum", "examples"):
            plain = json_value(value)
            if plain is not _DROP and not (key in ("maximum", "minimum") and not isinstance(plain, (int, float))):
                out[key] = plain
        else:
            out[key] = value
    for key, bound in (("exclusiveMaximum", "maximum"), ("exclusiveMinimum", "minimum")):
        flag = schema.get(key)
        if flag is True and bound in out:
            out[key] = out.pop(bound)
        elif isinstance(flag, (int, float, decimal.Decimal)) and not isinstance(flag, bool):
            out[key] = json_value(flag)
    if "required" in out and "properties" in out:
        out["required"] = [r for r in out["required"] if r in out["properties"]]
        if not out["required"]:
            del out["required"]
    if "enum" in out and "type" in out and isinstance(out["type"], str):
        kinds = {_json_type(v) for v in out["enum"]}
        if not kinds <= {out["type"], "null"} and not (out["type"] == "number" and kinds <= {"integer", "null"}):
            del out["type"]  # e.g. a "string" enum with integer choices: the enum says it all
    if schema.get("nullable"):
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        if "type" in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            out["type"] = types if "null" in types else [*types, "null"]
        elif "enum" not in out and out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# -- DRF's inspector, corrected --------------------------------------------------------------------------------


def _drf_own(field: Any, method: str) -> bool:
    """Whether ``field``'s ``method`` is DRF's own (not a project's override that may emit anything)."""
    for klass in type(field).__mro__:
        if method in klass.__dict__:
            return klass.__module__.startswith("rest_framework.")
    return True


_HINTS: dict[Any, dict[str, Any]] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    dict: {"type": "object"},
    list: {"type": "array"},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    uuid.UUID: {"type": "string", "format": "uuid"},
    type(None): {"type": "null"},
}


def hint_schema(hint: Any) -> dict[str, Any]:
    """A return type hint as JSON Schema (``{}``, anything, when it is not one of the plain JSON types)."""
    if hint in _HINTS:
        return dict(_HINTS[hint])
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (list, tuple, set, frozenset, typing.Sequence) and args:
        return {"type": "array", "items": hint_schema(args[0])}
    if origin in (list, tuple, set, frozenset):
        return {"type": "array"}
    if origin is dict:
        return {"type": "object"}
    if origin is typing.Literal:
        return {"enum": [json_value(a) for a in args]}
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return {"anyOf": [hint_schema(a) for a in args]}
    return {}


class Inspector(AutoSchema):  # type: ignore[misc]  # DRF is untyped
    """DRF's ``AutoSchema``, describing what a field really accepts (``mode="input"``) or emits (``"output"``).

    DRF guesses ``string`` for any field it does not know; a field class that
    overrides ``to_representation`` (output) or ``to_internal_value`` (input)
    may emit or accept anything, so it is described as any JSON value.
    """

    def __init__(self, mode: str = "output") -> None:
        super().__init__()
        self.mode = mode

    def map_field(self, field: Any) -> dict[str, Any]:
        method = "to_representation" if self.mode == "output" else "to_internal_value"
        if isinstance(field, serializers.SerializerMethodField):
            getter = getattr(field.parent, field.method_name, None)
            try:
                hint = typing.get_type_hints(getter).get("return") if getter is not None else None
            except Exception:  # noqa: BLE001  # an unresolvable annotation: no hint
                hint = None
            return hint_schema(hint) if hint is not None else {}
        if isinstance(field, (serializers.JSONField, serializers.ReadOnlyField, serializers.ModelField)):
            return {}
        if isinstance(field, serializers.Serializer | serializers.ListSerializer):
            return dict(super().map_field(field))
        if not _drf_own(field, method):
            return {}
        if isinstance(field, serializers.DecimalField):
            coerce = getattr(field, "coerce_to_string", None)
            if coerce is None:
                coerce = api_settings.COERCE_DECIMAL_TO_STRING
            schema = dict(super().map_field(field))
            if self.mode == "input":  # DRF parses a number or a string
                schema["type"] = ["number", "string"] if coerce else "number"
            elif coerce:
                schema = {"type": "string", "pattern": _decimal_pattern(field)}
            return schema
        if isinstance(field, serializers.DurationField):
            return {"type": "string"}
        if isinstance(field, serializers.FileField):
            return {"type": "string"}
        if isinstance(field, serializers.ChoiceField) and not isinstance(field, serializers.MultipleChoiceField):
            schema = dict(super().map_field(field))
            if getattr(field, "allow_blank", False) and "" not in schema.get("enum", []):
                schema["enum"] = [*schema.get("enum", []), ""]
                if schema.get("type") not in (None, "string"):
                    del schema["type"]
            return schema
        if isinstance(field, serializers.DictField) and type(field) is not serializers.DictField:
            return {"type": "object"}
        if isinstance(field, serializers.HyperlinkedRelatedField):
            return {"type": "string", "format": "uri"}
        return dict(super().map_field(field))

    def map_field_validators(self, field: Any, schema: dict[str, Any]) -> None:
        """DRF's, with the pattern of the field's one plain ``RegexValidator`` only.

        DRF also publishes ``URLValidator``'s case-insensitive pattern (3.15), and the
        pattern of an inverse or flagged regex, neither of which means what it says
        without its flags.
        """
        before = schema.get("pattern")
        super().map_field_validators(field, schema)
        schema.pop("pattern", None)
        pattern = _regex_of(field)
        if pattern is not None:
            schema["pattern"] = pattern
        elif before is not None:
            schema["pattern"] = before


def _regex_of(field: Any) -> str | None:

    for v in field.validators:
        if isinstance(v, RegexValidator) and not isinstance(v, URLValidator) and not v.inverse_match:
            regex = re.compile(v.regex)
            if not regex.flags & ~re.UNICODE:
                return str(regex.pattern)
    return None


def _blank_values(serializer: Any, schema: dict[str, Any]) -> None:
    """A field that allows "" skips its validators for it: "" is valid whatever its pattern or format."""
    target = _object_part(schema)
    if target is None:
        return
    props = target.get("properties") or {}
    for name, field in serializer.fields.items():
        sub = props.get(name)
        if not isinstance(sub, dict):
            continue
        if isinstance(field, serializers.Serializer):
            _blank_values(field, sub)
        elif getattr(field, "allow_blank", False) and ("pattern" in sub or "format" in sub):
            kept = {k: v for k, v in sub.items() if k not in ("description", "title")}
            props[name] = {
                "anyOf": [kept, {"type": "string", "maxLength": 0}],
                **{k: v for k, v in sub.items() if k in ("description", "title")},
            }


def _decimal_pattern(field: Any) -> str:
    whole = field.max_whole_digits
    places = field.decimal_places
    whole_part = rf"\d{{0,{whole}}}" if whole is not None else r"\d*"
    if not places:
        return rf"^-?{whole_part}$"
    return rf"^-?{whole_part}(?:\.\d{{0,{places}}})?$"


# -- drf-spectacular ------------------------------------------------------------------------------------------


def spectacular_schema(view: Any, path: str, method: str, serializer: Any, mode: str) -> dict[str, Any]:
    """``serializer`` as drf-spectacular describes it (``direction`` request/response), components inlined."""
    from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema  # reason: optional dependency
    from drf_spectacular.plumbing import ComponentRegistry  # reason: optional dependency

    inspector = SpectacularAutoSchema()
    inspector.registry = ComponentRegistry()
    inspector.view = view
    inspector.path = path
    inspector.path_regex = path
    inspector.path_prefix = ""
    inspector.method = method.upper()
    direction: Any = "request" if mode == "input" else "response"
    component = inspector.resolve_serializer(serializer, direction)
    components = {c.name: c.schema for c in inspector.registry._components.values() if c.type == "schemas" and c.schema}
    ref = component.ref if component is not None else None
    if not ref:
        return {"type": "object"}
    return dict(to_json_schema(copy.deepcopy(ref), mode, components))


def serializer_schema(view: Any, path: str, method: str, serializer: Any, mode: str) -> dict[str, Any]:
    """JSON Schema of a serializer's body (``mode="input"``) or of what it emits (``"output"``)."""
    schema: dict[str, Any] | None = None
    if has_spectacular():
        try:
            schema = spectacular_schema(view, path, method, serializer, mode)
        except Exception:  # noqa: BLE001  # spectacular cannot read this view: DRF's inspector below
            logger.warning("drf-spectacular could not describe %s; using DRF's AutoSchema", type(serializer).__name__)
    if schema is None:
        inspector = Inspector(mode)
        inspector.view = view
        schema = dict(to_json_schema(inspector.map_serializer(serializer), mode))
    _blank_values(serializer, schema)
    if mode == "output":
        emitted_nulls(serializer, schema)
    else:
        _related_ids(serializer, schema)
    _no_bounds_beside_enum(schema)
    return schema


def _related_ids(serializer: Any, schema: dict[str, Any]) -> None:
    """Say what a related field takes: the id (or slug) of which model, where the schema says only "integer"."""
    props = (_object_part(schema) or {}).get("properties") or {}
    for name, field in serializer.fields.items():
        prop = props.get(name)
        if not isinstance(prop, dict) or prop.get("description"):
            continue
        many = isinstance(field, serializers.ManyRelatedField)
        relation = field.child_relation if many else field
        model = getattr(getattr(relation, "queryset", None), "model", None)
        if model is None or not isinstance(relation, serializers.RelatedField):
            continue
        meta = model._meta
        key = relation.slug_field if isinstance(relation, serializers.SlugRelatedField) else "id"
        if many:
            prop["description"] = f"The {key}s of {meta.verbose_name_plural}."
        else:
            prop["description"] = f"The {key} of a {meta.verbose_name}."


def _no_bounds_beside_enum(schema: Any) -> None:
    """Leave out ``minimum``/``maximum`` where an ``enum`` lists every value (a choice field's column bounds)."""
    if isinstance(schema, dict):
        if "enum" in schema:
            schema.pop("minimum", None)
            schema.pop("maximum", None)
        for value in schema.values():
            _no_bounds_beside_enum(value)
    elif isinstance(schema, list):
        for item in schema:
            _no_bounds_beside_enum(item)


def emitted_nulls(serializer: Any, schema: dict[str, Any]) -> None:
    """Mark what DRF emits as null, or leaves out, whatever the field says.

    ``Serializer.to_representation`` writes ``None`` for a field whose source
    attribute is None (a nullable foreign key under a nested serializer or a
    hyperlink), and skips a dotted source that crosses a null relation.
    """
    target = _object_part(schema)
    model = getattr(getattr(serializer, "Meta", None), "model", None)
    if target is None:
        return
    props = target.get("properties") or {}
    for name, field in serializer.fields.items():
        if name not in props or field.write_only:
            continue
        if isinstance(field, serializers.Serializer):
            emitted_nulls(field, props[name])
        if isinstance(field, serializers.FileField):  # a URL (relative without a request) or the name; None if empty
            kept = {k: v for k, v in props[name].items() if k in ("description", "title")}
            props[name] = {"type": ["string", "null"], **kept}
            continue
        if model is None or isinstance(field, (serializers.SerializerMethodField, serializers.HiddenField)):
            continue
        attrs = list(getattr(field, "source_attrs", None) or [])
        if not attrs or field.source == "*":
            continue
        nullable, skippable = _null_path(model, attrs)
        if nullable or (skippable and field.allow_null):
            props[name] = _or_null(props[name])
        elif skippable and field.default is serializers.empty and "required" in target:
            target["required"] = [r for r in target["required"] if r != name]


def _object_part(schema: dict[str, Any]) -> dict[str, Any] | None:
    if "properties" in schema:
        return schema
    for key in ("allOf", "anyOf"):
        for part in schema.get(key) or ():
            if isinstance(part, dict) and "properties" in part:
                return part
    return None


def _null_path(model: Any, attrs: list[str]) -> tuple[bool, bool]:
    """(the last attribute may be None, an attribute before it may be None) along a source path."""
    for index, attr in enumerate(attrs):
        try:
            model_field = model._meta.get_field(attr)
        except Exception:  # noqa: BLE001  # a property or method: unknown, taken as not null
            return False, False
        may_be_null = bool(getattr(model_field, "null", False)) or (
            model_field.one_to_one and model_field.auto_created and not model_field.concrete
        )
        if may_be_null:
            return index == len(attrs) - 1, index < len(attrs) - 1
        model = getattr(model_field, "related_model", None)
        if model is None:
            return False, False
    return False, False


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    if not schema:
        return schema
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        schema = {**schema, "type": types if "null" in types else [*types, "null"]}
        if "enum" in schema and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    if "enum" in schema:
        return {**schema, "enum": [*schema["enum"], None]} if None not in schema["enum"] else schema
    if {"type": "null"} in schema.get("anyOf", []):
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


# -- query parameters: filter backends (django-filter's filtersets included) and pagination --------------------


def query_parameters(view: Any, path: str, method: str, allowed: Any = None) -> list[tuple[str, dict[str, Any], bool]]:
    """``(name, schema, required)`` of each query parameter the view's filter backends read.

    django-filter's ``DjangoFilterBackend`` is read from the filterset itself
    (its schema method is gone from django-filter 25); other backends through
    ``get_schema_operation_parameters``. ``allowed`` (names) keeps only those.
    """
    params: list[tuple[str, dict[str, Any], bool]] = []
    for backend_class in getattr(view, "filter_backends", None) or ():
        if _is_django_filter(backend_class):
            params.extend(filterset_parameters(view, backend_class))
            continue
        backend = backend_class()
        describe = getattr(backend, "get_schema_operation_parameters", None)
        if describe is None:
            continue
        for param in describe(view):
            params.append(_openapi_parameter(param))
    if allowed is not None:
        keep = set(allowed)
        params = [p for p in params if p[0] in keep]
    return params


def pagination_parameters(view: Any) -> list[tuple[str, dict[str, Any], bool]]:
    paginator_class = getattr(view, "pagination_class", None)
    if paginator_class is None:
        return []
    return [_openapi_parameter(p) for p in paginator_class().get_schema_operation_parameters(view)]


def _openapi_parameter(param: dict[str, Any]) -> tuple[str, dict[str, Any], bool]:
    schema = to_json_schema(dict(param.get("schema") or {}), "input")
    if param.get("description"):
        schema["description"] = str(param["description"])
    return str(param["name"]), schema, bool(param.get("required"))


def _is_django_filter(backend_class: Any) -> bool:
    for klass in getattr(backend_class, "__mro__", ()):
        if klass.__name__ == "DjangoFilterBackend" and klass.__module__.startswith("django_filters."):
            return True
    return False


def filterset_parameters(view: Any, backend_class: Any) -> list[tuple[str, dict[str, Any], bool]]:
    """One query parameter per filter of the view's filterset (two for a range: ``x_min``/``x_max``...)."""
    backend = backend_class()
    queryset = view.get_queryset()
    filterset_class = backend.get_filterset_class(view, queryset)
    if filterset_class is None:
        return []
    filterset = filterset_class(data={}, queryset=queryset, request=getattr(view, "request", None))
    params: list[tuple[str, dict[str, Any], bool]] = []
    for name, field in filterset.form.fields.items():
        widget = field.widget
        suffixes = getattr(widget, "suffixes", None)
        if isinstance(field, forms.MultiValueField) and suffixes:
            for suffix, sub in zip(suffixes, field.fields, strict=False):
                params.append((widget.suffixed(name, suffix), _described(sub, field), False))
            continue
        params.append((name, _described(field, field), bool(field.required)))
    if not mcp_settings.DRF_FILTER_LOOKUPS:
        plain = set(filterset.form.fields)
        params = [p for p in params if not _lookup_variant(p[0], plain)]
    return params


def _lookup_variant(name: str, plain: set[str]) -> bool:
    """``name`` is ``<filter>__<lookup>`` of another filter of the set (``name__ic`` beside ``name``)."""
    base, sep, _lookup = name.rpartition("__")
    return bool(sep) and base in plain


def _described(field: Any, owner: Any) -> dict[str, Any]:
    schema = form_field_schema(field)
    text = owner.help_text or ("Comma-separated values." if _is_csv(field) else "")
    if text:
        schema["description"] = str(text)
    return schema


def _is_csv(field: Any) -> bool:
    return any(k.__name__ == "BaseCSVField" for k in type(field).__mro__)


def form_field_schema(field: Any) -> dict[str, Any]:
    """JSON Schema of what a Django form field (a filter's) takes as a query parameter."""
    if _is_csv(field):
        return {"type": "string"}
    if isinstance(field, forms.ModelMultipleChoiceField):
        return {"type": "array", "items": _pk_schema(getattr(field.queryset, "model", None))}
    if isinstance(field, forms.ModelChoiceField):
        return _pk_schema(getattr(field.queryset, "model", None))
    if isinstance(field, (forms.NullBooleanField, forms.BooleanField)):
        return {"type": "boolean"}
    if isinstance(field, forms.MultipleChoiceField):
        return {"type": "array", "items": _choices_schema(field)}
    if isinstance(field, forms.ChoiceField):
        return _choices_schema(field)
    schema: dict[str, Any]
    if isinstance(field, (forms.FloatField, forms.DecimalField)):  # both subclass IntegerField
        schema = {"type": "number"}
    elif isinstance(field, forms.IntegerField):
        schema = {"type": "integer"}
    elif isinstance(field, forms.DateTimeField):
        schema = {"type": "string", "format": "date-time"}
    elif isinstance(field, forms.DateField):
        schema = {"type": "string", "format": "date"}
    elif isinstance(field, forms.TimeField):
        schema = {"type": "string", "format": "time"}
    elif isinstance(field, forms.UUIDField):
        schema = {"type": "string", "format": "uuid"}
    else:
        schema = {"type": "string"}
    for attr, key in (("max_value", "maximum"), ("min_value", "minimum")):
        value = json_value(getattr(field, attr, None))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            schema[key] = value
    return schema


def _choices_schema(field: Any) -> dict[str, Any]:
    values: list[Any] = []
    try:
        choices = list(field.choices)
    except Exception:  # noqa: BLE001  # choices from a query that cannot run now
        return {"type": "string"}
    for key, label in choices:
        if isinstance(label, (list, tuple)):  # an option group
            values.extend(k for k, _ in label)
        else:
            values.append(key)
    plain = [json_value(v) for v in values if v not in ("", None)]
    schema: dict[str, Any] = {"enum": list(dict.fromkeys(str(v) if v is _DROP else v for v in plain))}
    kinds = {_json_type(v) for v in schema["enum"]}
    if len(kinds) == 1:
        schema["type"] = kinds.pop()
    return schema


def _pk_schema(model: Any) -> dict[str, Any]:

    if model is None:
        return {"type": "string"}
    pk = model._meta.pk
    kind = "integer" if isinstance(pk, (models.AutoField, models.IntegerField)) else "string"
    return {"type": kind, "description": f"The id of a {model._meta.verbose_name}."}


__all__ = [
    "Inspector",
    "ecma_pattern",
    "filterset_parameters",
    "form_field_schema",
    "pagination_parameters",
    "query_parameters",
    "serializer_schema",
    "to_json_schema",
]
