"""The fixture server the official MCP conformance suite drives.

``@modelcontextprotocol/conformance`` names the tools, resources and prompts its
scenarios call, and what each must answer; this module declares exactly those,
with the public API only. One server serves both wires: the 2025-11-25
handshake (server->client requests on the POST's SSE stream) and 2026-07-28
(the same ``Context`` calls become ``input_required`` results).
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from django_mcp import Context, MCPError, MCPServer, content, user
from django_mcp.protocol.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY

server = MCPServer("django-mcp-conformance")

# A 1x1 PNG and a minimal WAV file.
IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _answer(result: Any) -> str:
    return f"action={result.action}, content={json.dumps(result.content, sort_keys=True)}"


# -- tools: content (both wires; test_simple_text must come first) ----------------------


@server.tool
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@server.tool
def test_image_content() -> content.ContentBlock:
    """Returns an image."""
    return content.image(IMAGE, "image/png")


@server.tool
def test_audio_content() -> content.ContentBlock:
    """Returns audio."""
    return content.audio(AUDIO, "audio/wav")


@server.tool
def test_embedded_resource() -> content.ContentBlock:
    """Returns an embedded resource."""
    return content.embedded_resource(
        "test://embedded-resource", text="This is an embedded resource content.", mime_type="text/plain"
    )


@server.tool
def test_multiple_content_types() -> list[content.ContentBlock]:
    """Returns text, an image and an embedded resource."""
    return [
        content.text("Multiple content types test:"),
        content.image(IMAGE, "image/png"),
        content.embedded_resource(
            "test://mixed-content-resource", text='{"test":"data","value":123}', mime_type="application/json"
        ),
    ]


@server.tool
def test_error_handling() -> Any:
    """Always fails with an isError result."""
    from django_mcp import ToolError

    raise ToolError("This tool intentionally returns an error for testing")


# -- tools: notifications ----------------------------------------------------------------


@server.tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Logs three messages while it runs."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50, 100 of 100."""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await asyncio.sleep(0.05)
    return "Progress test completed"


@server.tool
async def test_reconnection(ctx: Context) -> str:
    """Closes its SSE stream mid-call; the client resumes with Last-Event-ID (SEP-1699)."""
    await ctx.close_stream()
    await asyncio.sleep(0.1)
    return (
        "Reconnection test completed successfully. If you received this, "
        "the client properly reconnected after stream closure."
    )


# -- tools: asking the client -------------------------------------------------------------


@server.tool
async def test_sampling(
    ctx: Context, prompt: Annotated[str, Field(description="The prompt to send to the LLM")]
) -> str:
    """Asks the client's model."""
    reply = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {getattr(reply.content, 'text', '')}"


@server.tool
async def test_elicitation(
    ctx: Context, message: Annotated[str, Field(description="The message to show the user")]
) -> str:
    """Asks the user for a username and an email address."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return f"User response: {_answer(await ctx.elicit(message, schema))}"


@server.tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits a form whose fields all have defaults (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "required": [],
    }
    result = await ctx.elicit("Please review and update the form fields with defaults", schema)
    return f"Elicitation completed: {_answer(result)}"


@server.tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits every enum form of SEP-1330."""
    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Select one option", "enum": options},
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": options},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
        "required": [],
    }
    result = await ctx.elicit("Please select options from the enum fields", schema)
    return f"Elicitation completed: {_answer(result)}"


# -- tools: JSON Schema 2020-12 and custom headers -----------------------------------------

JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, str] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> str:
    """Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)."""
    args = {"name": name, "address": address, "contactMethod": contactMethod, "phone": phone, "email": email}
    given = {k: v for k, v in args.items() if v is not None}
    return f"JSON Schema 2020-12 tool called with: {json.dumps(given, sort_keys=True)}"


@server.tool
def test_custom_header(
    region: Annotated[str, Field(description="Region", json_schema_extra={"x-mcp-header": "Region"})],
) -> str:
    """Echoes a region the client also mirrors into the Mcp-Param-Region header (SEP-2243)."""
    return f"Region: {region}"


# -- tools: 2026-07-28 diagnostics ---------------------------------------------------------


@server.tool
def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability; fails with -32021 without it."""
    if "sampling" not in ctx.client_capabilities:
        raise MCPError(
            "The client did not declare the 'sampling' capability",
            {"requiredCapabilities": {"sampling": {}}},
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        )
    return "Success"


@server.tool
def test_streaming_elicitation() -> str:
    """Answers without sending any request on the response stream."""
    return "Streaming test completed"


@server.tool
async def test_logging_tool(ctx: Context) -> str:
    """Logs only when the request asked for a log level."""
    await ctx.info("test_logging_tool ran")
    return "Logging test completed"


@server.tool
async def test_trigger_tool_change() -> str:
    """Announces a tools list change to every listener (the list itself stays the same)."""
    await server.notify_list_changed("tools")
    return "Tools list change announced"


@server.tool
async def test_trigger_prompt_change() -> str:
    """Announces a prompts list change to every listener (the list itself stays the same)."""
    await server.notify_list_changed("prompts")
    return "Prompts list change announced"


# -- tools: multi round-trip requests (SEP-2322) ------------------------------------------


@server.tool
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name (elicitation)."""
    result = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {(result.content or {}).get('name', 'stranger')}!"


@server.tool
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's model a question (sampling)."""
    reply = await ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
    return f"Sampling result: {getattr(reply.content, 'text', '')}"


@server.tool
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Asks for the client's roots."""
    roots = await ctx.list_roots(key="client_roots")
    return f"Found {len(roots)} root(s): {', '.join(str(r.uri) for r in roots)}"


@server.tool
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks for a confirmation; the answer comes back with the signed requestState."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    result = await ctx.elicit("Please confirm", schema, key="confirm")
    return f"state-ok: confirmed={(result.content or {}).get('ok')}"


@server.tool
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Asks for a name, a greeting and the roots in one round."""
    name, greeting, roots = await ctx.gather(
        ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name"),
        ctx.sample("Generate a greeting", max_tokens=50, key="greeting"),
        ctx.list_roots(key="client_roots"),
    )
    text = getattr(greeting.content, "text", "")
    return f"{text} {(name.content or {}).get('name')} ({len(roots)} root(s))"


@server.tool
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Asks two questions, one round each."""
    name = await ctx.elicit("Step 1: What is your name?", NAME_SCHEMA, key="step1")
    color_schema = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
    color = await ctx.elicit("Step 2: What is your favorite color?", color_schema, key="step2")
    return f"{(name.content or {}).get('name')} likes {(color.content or {}).get('color')}"


@server.tool
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Like request_state: a retry with a forged requestState is rejected."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    result = await ctx.elicit("Please confirm", schema, key="confirm")
    return f"state-ok: confirmed={(result.content or {}).get('ok')}"


@server.tool
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only for what the client declared it can answer."""
    caps = ctx.client_capabilities
    if "elicitation" in caps:
        result = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        return f"Elicited: {_answer(result)}"
    if "sampling" in caps:
        reply = await ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
        return f"Sampled: {getattr(reply.content, 'text', '')}"
    if "roots" in caps:
        return f"Roots: {len(await ctx.list_roots(key='client_roots'))}"
    return "The client declared no capability to ask with"


# -- resources --------------------------------------------------------------------------------


@server.resource(
    "test://static-text",
    name="static-text",
    title="Static Text Resource",
    description="A static text resource for testing",
    mime_type="text/plain",
)
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource(
    "test://static-binary",
    name="static-binary",
    title="Static Binary Resource",
    description="A static binary resource (image) for testing",
    mime_type="image/png",
)
def static_binary() -> bytes:
    return base64.b64decode(IMAGE)


@server.resource(
    "test://watched-resource",
    name="watched-resource",
    title="Watched Resource",
    description="A resource for subscription testing",
    mime_type="text/plain",
)
def watched_resource() -> str:
    return "Watched resource content"


@server.resource(
    "test://template/{id}/data",
    name="template",
    title="Template Resource",
    description="A resource template with parameter substitution",
    mime_type="application/json",
)
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


# -- prompts ----------------------------------------------------------------------------------


@server.prompt
def test_simple_prompt() -> str:
    """A simple prompt without arguments"""
    return "This is a simple prompt for testing."


@server.prompt
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with required arguments"""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
    """A prompt that includes an embedded resource"""
    return [
        user(
            content.embedded_resource(
                resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
            )
        ),
        user("Please process the embedded resource above."),
    ]


@server.prompt
def test_prompt_with_image() -> list[Any]:
    """A prompt that includes an image"""
    return [user(content.image(IMAGE, "image/png")), user("Please analyze the image above.")]


@server.prompt
async def test_input_required_result_prompt(ctx: Context) -> str:
    """MRTR: prompt that requires elicitation input"""
    schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    result = await ctx.elicit("What context should the prompt use?", schema, key="user_context")
    return f"Prompt with context: {(result.content or {}).get('context')}"


# -- tools: the tasks extension (SEP-2663, 2026-07-28) ------------------------------------


@server.tool
def greet(name: str) -> str:
    """Greets by name (never a task)."""
    return f"Hello, {name}!"


@server.tool(task="optional")
async def slow_compute(seconds: float, label: str = "") -> str:
    """Sleeps ``seconds`` then answers; a task for clients that support them, cancellable while it sleeps."""
    await asyncio.sleep(seconds)
    return f"computed {label} after {seconds}s"


@server.tool(task="required")
async def failing_job() -> str:
    """Fails as a tool (``isError``) after about a second."""
    await asyncio.sleep(1)
    from django_mcp import ToolError

    raise ToolError("failing_job always fails")


@server.tool(task="optional")
async def protocol_error_job() -> str:
    """Ends in a JSON-RPC error: the task fails."""
    raise MCPError("protocol_error_job hit an internal error")


@server.tool(task="optional")
async def confirm_delete(ctx: Context, filename: str) -> str:
    """Asks for confirmation, then 'deletes'."""
    answer = await ctx.elicit(
        f"Delete {filename}?", {"type": "object", "properties": {"confirm": {"type": "boolean"}}}, key="confirm"
    )
    return f"{filename}: {answer.action}"


@server.tool(task="optional")
async def multi_input(ctx: Context) -> str:
    """Asks two questions at once."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}}
    first, second = await ctx.gather(
        ctx.elicit("First?", schema, key="first"), ctx.elicit("Second?", schema, key="second")
    )
    return f"first={first.action}, second={second.action}"


@server.tool(task="required", ask_first=True)
async def test_tool_with_task(ctx: Context) -> str:
    """Asks for a name in the request (multi round-trip), then runs as a task that greets it."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    await ctx.begin_task()
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


# The Skills extension (SEP-2640): a skill with a subfolder, for the suite's sep-2640-* scenarios.
server.skill("conformance-guide", folder=Path(__file__).parent / "skills" / "conformance-guide")
