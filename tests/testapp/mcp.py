"""Tools, resources and prompts the test suite drives through real clients."""

from __future__ import annotations

import asyncio
from typing import Annotated

from pydantic import BaseModel, Field

from django_mcp import Context, ToolError, content, site


class Sum(BaseModel):
    total: int
    terms: list[int]


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)


@site.tool(annotations={"readOnlyHint": True}, title="Add numbers")
def add(a: int, b: int) -> Sum:
    """Add two integers.

    Args:
        a: the first term
        b: the second term
    """
    return Sum(total=a + b, terms=[a, b])


@site.tool
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


@site.tool
def square(x: float) -> float:
    """Square a number (a non-object return is wrapped as {"result": ...})."""
    return x * x


@site.tool
def describe(person: Person) -> str:
    """Uses a nested model (JSON Schema $defs)."""
    return f"{person.name} is {person.age}"


@site.tool
async def count(ctx: Context, steps: int = 3) -> str:
    """Report progress and log at each step."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
        await ctx.info(f"counted {i}")
    return f"counted to {steps}"


@site.tool
async def sleepy(ctx: Context, seconds: float = 30) -> str:
    """Sleeps (cancellable)."""
    await ctx.report_progress(0.5, 1)
    await asyncio.sleep(seconds)
    return "woke up"


@site.tool
async def ask_name(ctx: Context) -> str:
    """Elicit a name from the user."""

    class Answer(BaseModel):
        name: str

    result = await ctx.elicit("What is your name?", Answer)
    if result.action != "accept" or not result.content:
        return f"no name ({result.action})"
    return f"Hello, {result.content['name']}!"


@site.tool
async def ask_model(ctx: Context, question: str) -> str:
    """Ask the client's model."""
    reply = await ctx.sample(question, max_tokens=50)
    return f"model said: {getattr(reply.content, 'text', '')}"


@site.tool
async def roots(ctx: Context) -> list[str]:
    """List the client's roots."""
    return [str(r.uri) for r in await ctx.list_roots()]


@site.tool
def fail(kind: Annotated[str, Field(description="tool or crash")] = "tool") -> str:
    """Fails on purpose."""
    if kind == "tool":
        raise ToolError("this tool failed on purpose")
    raise RuntimeError("secret internal detail")


@site.tool
def picture() -> list[content.ContentBlock]:
    """Returns mixed content."""
    return [
        content.text("a red pixel"),
        content.image(b"\x89PNG\r\n\x1a\n", "image/png"),
        content.resource_link("test://static/hello", "hello"),
    ]


@site.resource("test://static/hello", mime_type="text/plain", title="Hello")
def hello() -> str:
    """A static text resource."""
    return "Hello, world!"


@site.resource("test://items/{item_id}", mime_type="application/json", complete={"item_id": ["1", "2", "10"]})
def item(item_id: str) -> str:
    """An item by id."""
    if not item_id.isdigit():
        from django_mcp.exceptions import ResourceNotFound

        raise ResourceNotFound(f"test://items/{item_id}")
    return f'{{"id": {item_id}}}'


@site.prompt(title="Greeting", complete={"style": ["formal", "casual", "pirate"]})
def greet(name: str, style: str = "casual") -> str:
    """Greet someone."""
    return f"Please greet {name} in a {style} style."


@site.tool
async def slow_count(ctx: Context, steps: int = 3, delay: float = 0.3) -> str:
    """Progress with pauses between steps (for resumption tests)."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps)
        await asyncio.sleep(delay)
    return f"slowly counted to {steps}"


@site.tool
async def touch(uri: str = "test://static/hello") -> str:
    """Announce that the tool list and a resource changed (drives notification tests)."""
    await site.notify_list_changed("tools")
    await site.notify_resource_updated(uri)
    return "touched"


@site.tool
async def queries() -> int:
    """How many SQL statements this server process has run so far (hot-path tests).

    Async so that the call itself runs no SQL (a sync tool's ATOMIC_TOOL_CALLS savepoint would).
    """
    from tests.testapp.apps import QUERIES

    return next(QUERIES)


@site.tool
async def survey(ctx: Context) -> dict[str, str]:
    """Asks two questions; in the stateless era both go out in one input_required round trip."""

    class Colour(BaseModel):
        colour: str

    answer, roots_list = await ctx.gather(ctx.elicit("Favourite colour?", Colour, key="colour"), ctx.list_roots())
    return {"colour": str((answer.content or {}).get("colour")), "roots": ",".join(str(r.uri) for r in roots_list)}


@site.tool
async def polled(ctx: Context) -> str:
    """Closes its SSE stream early; the rest is fetched by reconnecting with Last-Event-ID."""
    await ctx.report_progress(1, 2)
    await ctx.close_stream()
    await asyncio.sleep(0.3)
    await ctx.report_progress(2, 2)
    return "polled result"


@site.tool
def whoami(ctx: Context) -> str:
    """The caller as the tool sees it."""
    return f"{ctx.user!s} authenticated={ctx.user.is_authenticated}"


# -- engine security: the batch cap and URI template values ---------------------------------------

_recorded: list[str] = []


@site.tool
async def record(tag: str) -> str:
    """Remember that it ran (the batch-cap test counts how many calls of a batch ran)."""
    _recorded.append(tag)
    return tag


@site.tool
async def recorded(tag: str) -> int:
    """How many ``record`` calls with this tag ran in this server process."""
    return _recorded.count(tag)


@site.resource("sec://echo/{name}", mime_type="text/plain")
def sec_echo(name: str) -> str:
    """Echoes the decoded ``{name}`` value (a simple variable: one path segment)."""
    return f"name={name}"


@site.resource("sec://files/{+path}", mime_type="text/plain")
def sec_files(path: str) -> str:
    """Echoes the decoded ``{+path}`` value (reserved expansion: may span segments)."""
    return f"path={path}"


# -- the sync pool and database faults (tests/test_sync_pool.py, tests/production, benchmarks/sync_pool.py) --


@site.tool
def sync_sleep(seconds: float = 3) -> str:
    """A slow sync tool: holds one sync pool thread for ``seconds``."""
    import time

    time.sleep(seconds)
    return f"slept {seconds}"


@site.tool
def sync_db() -> int:
    """A sync tool that needs the database (one query)."""
    from django.contrib.auth import get_user_model

    return int(get_user_model().objects.count())


@site.tool
async def async_db() -> int:
    """An async tool that needs the database (one async ORM query)."""
    from django.contrib.auth import get_user_model

    return int(await get_user_model().objects.acount())


@site.tool
def sync_language() -> str:
    """The language active in the sync pool thread (set from the caller's Accept-Language)."""
    from django.utils import translation

    return str(translation.get_language())


@site.tool
def sync_progress(ctx: Context) -> str:
    """Reports progress from a sync tool through async_to_sync, back on the server's event loop."""
    from asgiref.sync import async_to_sync

    async_to_sync(ctx.report_progress)(1, 2)
    async_to_sync(ctx.report_progress)(2, 2)
    return "reported"


@site.tool
def pg_sleep(seconds: float = 0.02) -> str:
    """Waits ``seconds`` inside PostgreSQL (the sync pool benchmark)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_sleep(%s)", [seconds])
    return "ok"


# -- tasks (tests/test_tasks.py): run by a real db_worker -----------------------------------------


def _append(path: str, line: str) -> None:
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


@site.tool(task="optional")
async def task_sleep(ctx: Context, seconds: float = 3, marker: str = "") -> str:
    """Sleeps ``seconds`` (cancellable); logs each run's start to ``marker``.runs and writes ``marker`` when done."""
    _append(marker + ".runs" if marker else "", "run")
    await asyncio.sleep(seconds)
    _append(marker, "done")
    return f"slept {seconds}"


@site.tool(task="optional")
async def task_ask(ctx: Context) -> str:
    """Asks for a name during the task, then greets it."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    answer = await ctx.elicit("What is your name?", schema, key="name")
    if answer.action != "accept":
        return f"no name ({answer.action})"
    return f"Hello, {(answer.content or {}).get('name')}!"


@site.tool(task="optional")
async def task_progress(ctx: Context, steps: int = 3, delay: float = 0.4) -> str:
    """Reports a progress message at each step (the task's statusMessage)."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
        await asyncio.sleep(delay)
    return f"{steps} steps done"


@site.tool(task="optional")
def task_sync_steps(ctx: Context, steps: int = 8, delay: float = 0.25, marker: str = "") -> str:
    """A sync task tool: progress and a cancel check at each step; writes ``marker`` only when it ran to the end."""
    import time

    from asgiref.sync import async_to_sync

    for i in range(1, steps + 1):
        ctx.check_cancelled()
        async_to_sync(ctx.report_progress)(i, steps, f"sync step {i} of {steps}")
        time.sleep(delay)
    _append(marker, "done")
    return f"{steps} sync steps done"


@site.tool(task="optional")
async def task_fail() -> str:
    """A task tool that fails as a tool (``isError``)."""
    raise ToolError("task_fail failed on purpose")


@site.tool(task="required")
async def task_only(text: str = "") -> str:
    """Runs only as a task."""
    return f"task only: {text}"
