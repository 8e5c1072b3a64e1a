"""``django_mcp.signature``: the Context parameter, the arguments model and the output schema (in process)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import pydantic
import pytest
from pydantic import BaseModel, Field

from django_mcp import Context
from django_mcp.prompts import Prompt
from django_mcp.resources import Resource
from django_mcp.signature import (
    EMPTY,
    Parameter,
    Signature,
    arguments_model,
    context_parameter,
    input_schema,
    is_context,
    parse_docstring,
)
from django_mcp.tools import Tool

if TYPE_CHECKING:
    from tests.nowhere import Missing  # type: ignore[import-not-found]  # never importable at run time


class MyContext(Context):
    pass


# -- the Context parameter -----------------------------------------------------------------------------


def by_string(ctx: Context, x: int) -> None: ...  # a string annotation here (from __future__ import annotations)


def quoted(ctx: "Context") -> None: ...  # noqa: UP037  # explicitly quoted


def optional(x: int, ctx: Optional[Context] = None) -> None: ...  # noqa: UP045


def pep604(x: int, ctx: Context | None = None) -> None: ...


def annotated(context: Annotated[Context, "injected"]) -> None: ...


def subclass(request_context: MyContext, x: int = 1) -> None: ...


def not_named_ctx(x: int, c: Context) -> None: ...


def no_context(ctx: int, x: str = "") -> None: ...


def unannotated(ctx, x):  # type: ignore[no-untyped-def]
    return None


def unresolvable(thing: Missing, ctx: Context) -> None: ...


def unresolvable_optional(thing: Missing, ctx: Optional[Context]) -> None: ...  # noqa: UP045


def real_class(ctx, x):  # type: ignore[no-untyped-def]
    return None


real_class.__annotations__ = {"ctx": Context, "x": int}


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (by_string, "ctx"),
        (quoted, "ctx"),
        (optional, "ctx"),
        (pep604, "ctx"),
        (annotated, "context"),
        (subclass, "request_context"),
        (not_named_ctx, "c"),
        (real_class, "ctx"),
        (no_context, None),
        (unannotated, None),
        (unresolvable, "ctx"),
        (unresolvable_optional, "ctx"),
    ],
)
def test_context_parameter(fn: Any, expected: str | None) -> None:
    assert context_parameter(fn) == expected


def test_is_context() -> None:
    from django.template import Context as TemplateContext

    assert is_context(Context) and is_context(MyContext) and is_context(Optional[Context])  # noqa: UP045
    assert is_context(Context | None) and is_context(Annotated[Context | None, "x"])
    assert is_context("Context") and is_context("django_mcp.Context | None") and is_context("Optional[Context]")
    assert not is_context(TemplateContext) and not is_context(Context | int) and not is_context("ContextVar")
    assert not is_context(int) and not is_context(Any) and not is_context(list[Context])


def test_same_rule_for_tools_resources_and_prompts() -> None:
    for fn in (by_string, optional, pep604, not_named_ctx, subclass):
        expected = context_parameter(fn)
        assert Tool(fn, name="t").ctx_param == expected
        assert Resource(uri="x://y", fn=fn, name="r").ctx_param == expected
        prompt = Prompt(fn, name="p")
        assert prompt.ctx_param == expected
        assert expected not in {a["name"] for a in prompt.arguments}
    tool = Tool(optional, name="optional")
    assert list(tool.input_schema["properties"]) == ["x"] and tool.input_schema["required"] == ["x"]


@pytest.mark.django_db  # the user pool's thread recycles its connections around a sync handler
async def test_resources_and_prompts_receive_the_context() -> None:
    got: list[Any] = []

    def read(item_id: str, c: Optional[Context] = None) -> str:  # noqa: UP045
        got.append(c)
        return item_id

    async def render(topic: str, where: Annotated[Context, "x"]) -> str:
        got.append(where)
        return topic

    ctx = object.__new__(Context)
    contents = await Resource(uri="x://{item_id}", fn=read, name="r").read("x://7", {"item_id": "7"}, ctx)
    assert contents == [{"uri": "x://7", "text": "7"}]
    result = await Prompt(render, name="p").render({"topic": "t"}, ctx)
    assert result["messages"][0]["content"]["text"] == "t"
    assert got == [ctx, ctx]


def test_tool_refuses_two_contexts_and_var_arguments() -> None:
    def two(a: Context, b: Context) -> None: ...

    def star(*args: int) -> None: ...

    with pytest.raises(TypeError, match="more than one Context"):
        Tool(two, name="two")
    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs"):
        Tool(star, name="star")


# -- arguments ---------------------------------------------------------------------------------------


def described(
    ctx: Context,
    name: str,
    size: Annotated[int, Field(ge=0, description="from the annotation")] = 3,
    both: Annotated[str, Field(description="loses")] = "x",
    anything=None,  # type: ignore[no-untyped-def]
) -> None:
    """Summary line.

    More text.

    Args:
        name: the name,
            on two lines
        both (str): the docstring wins
        missing: not a parameter

    Returns:
        nothing
    """


def test_arguments_model_defaults_required_and_descriptions() -> None:
    sig = Signature.from_callable(described)
    assert sig.ctx_param == "ctx" and sig.arguments.__name__ == "DescribedArguments"
    assert sig.description == "Summary line.\n\nMore text.\n\n    nothing"  # as before: the heading ends Args
    schema = sig.input_schema()
    assert list(schema["properties"]) == ["name", "size", "both", "anything"]
    assert schema["required"] == ["name"]
    props = schema["properties"]
    assert props["name"]["description"] == "the name, on two lines"
    assert props["size"] == {
        "default": 3,
        "description": "from the annotation",
        "minimum": 0,
        "title": "Size",
        "type": "integer",
    }
    assert props["both"]["description"] == "the docstring wins"
    assert props["anything"] == {"default": None, "title": "Anything"}
    assert "title" not in schema and "additionalProperties" not in schema
    assert sig.parse({"name": "n"}) == {"name": "n", "size": 3, "both": "x", "anything": None}
    with pytest.raises(pydantic.ValidationError):
        sig.parse({"name": "n", "other": 1})
    with pytest.raises(pydantic.ValidationError):
        sig.parse({"size": -1, "name": "n"})
    with pytest.raises(pydantic.ValidationError):
        sig.parse(None)


def test_parse_docstring() -> None:
    assert parse_docstring(None) == (None, {})
    assert parse_docstring("Only a line.") == ("Only a line.", {})
    doc = "Top.\n\nArguments:\n    a (int): first\n    b: second\n        more\n\nRaises:\nAfter."
    assert parse_docstring(doc) == ("Top.\n\nAfter.", {"a": "first", "b": "second more"})


def test_explicit_arguments_model() -> None:
    model = arguments_model(
        "ExplicitArguments",
        [Parameter("pk", int), Parameter("note", str, "", "a note"), Parameter("raw", Any, None)],
    )
    schema = input_schema(model)
    assert schema["required"] == ["pk"] and schema["properties"]["note"]["description"] == "a note"
    sig = Signature(model, ctx_param="mcp", returns=dict[str, int])
    assert sig.parse({"pk": "3"}) == {"pk": 3, "note": "", "raw": None}

    async def fn(**kwargs: Any) -> Any:
        return kwargs

    tool = Tool(fn, name="explicit", signature=sig, description="Given.")
    assert tool.ctx_param == "mcp" and tool.input_schema == schema and tool.description == "Given."
    assert tool.output_schema == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert Parameter("x").annotation is Any and Parameter("x").default is EMPTY


# -- output ---------------------------------------------------------------------------------------


class Out(BaseModel):
    n: int


WRAPPED = {"items": {"type": "integer"}, "type": "array"}


@pytest.mark.parametrize(
    ("returns", "schema", "wrapped"),
    [
        (Out, {"properties": {"n": {"title": "N", "type": "integer"}}, "required": ["n"], "type": "object"}, False),
        (
            list[int],
            {
                "type": "object",
                "properties": {"result": {"items": {"type": "integer"}, "type": "array"}},
                "required": ["result"],
            },
            True,
        ),
        (str, None, False),
        (type(None), None, False),
        (Any, None, False),
        (EMPTY, None, False),
    ],
)
def test_output_schema(returns: Any, schema: dict[str, Any] | None, wrapped: bool) -> None:
    sig = Signature(arguments_model("A", []), returns=returns)
    assert sig.output_schema == schema and sig.wrap_output is wrapped
    assert (sig.output_adapter is None) is (schema is None)


def test_explicit_output_schema_has_no_adapter() -> None:
    published = {"type": "object", "properties": {"id": {"type": "integer"}}}
    sig = Signature(arguments_model("A", []), returns=Any, output_schema=published)
    assert sig.output_schema is published and sig.output_adapter is None and not sig.wrap_output
