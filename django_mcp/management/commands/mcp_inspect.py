"""``manage.py mcp_inspect``: what an MCP server exposes, as a table or as JSON.

The JSON form holds the exact definitions clients receive from ``tools/list``,
``resources/list``, ``resources/templates/list`` and ``prompts/list`` (newest
revision), and the ``skills/list`` entries, so it can be diffed in CI. ``--user`` shows what one user may see
(Django permissions, ``check`` callables, DRF permission classes; OAuth scopes
need a token and are only listed).
"""

from __future__ import annotations

import json
from typing import Any, cast

from asgiref.sync import async_to_sync
from django.core.management.base import BaseCommand, CommandParser

from ...context import Context, Runtime
from ...protocol.skills import SkillError
from ...server import MCPServer
from ..users import active_user
from .mcp_stdio import Command as StdioCommand

KINDS = ("tools", "resources", "resourceTemplates", "prompts")
WIDTH = 60


class _Caller:
    """The part of a request ``permits`` looks at: who is asking."""

    def __init__(self, user: Any) -> None:
        self.user = user


def _short(text: str | None, width: int = WIDTH) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def _schema_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"array[{_schema_type(schema['items'])}]"
    if kind:
        return str(kind)
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return "|".join(_schema_type(s) for s in schema["anyOf"])
    if "enum" in schema:
        return "enum"
    return "any"


def _arguments(schema: dict[str, Any]) -> str:
    required = set(schema.get("required") or [])
    props = schema.get("properties") or {}
    return ", ".join(f"{name}{'*' if name in required else ''}: {_schema_type(sub)}" for name, sub in props.items())


def _access(obj: Any) -> str:
    parts = [f"scope:{s}" for s in obj.scopes] + [f"perm:{p}" for p in obj.permissions]
    if obj.check is not None:
        parts.append("check")
    if getattr(obj, "view_class", None) is not None:
        parts.append("DRF permission classes")
    return ", ".join(parts) or "-"


def _skill_row(skill: Any) -> list[str]:
    """A skill's row; one that breaks a rule says so (it is not served)."""
    if not skill.loads():
        try:
            skill.load()
        except SkillError as exc:
            return [skill.uri, "-", "-", _access(skill), _short(f"NOT SERVED ({exc.rule}): {exc}")]
    files = skill.load()
    size = sum(f.size for f in files.values())
    return [skill.uri, str(len(files)), str(size), _access(skill), _short(skill.description)]


def _task_mode(tool: Any) -> str:
    """How the tool runs as an MCP task: ``optional``, ``required``, or ``-`` (never: it answers in the request)."""
    return str(tool.task_support or "-")


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Print the tools, resources, resource templates, prompts and skills an MCP server exposes (table or JSON)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--server", metavar="DOTTED.PATH", help="An MCPServer instance instead of django_mcp.site.")
        parser.add_argument("--format", choices=["table", "json"], default="table", help="Output format.")
        parser.add_argument("--user", metavar="USERNAME", help="Only what this user may see and use.")

    def handle(self, *args: Any, **options: Any) -> None:
        loader = StdioCommand()
        server = loader.load_server(options.get("server"))
        username = options.get("user")
        user = active_user(username) if username else None
        objects = self.collect(server, user, username is not None)
        if options["format"] == "json":
            data: dict[str, Any] = {"server": server.server_info()}
            if server.instructions:
                data["instructions"] = server.instructions
            data.update({kind: [o.definition() for o in objects[kind]] for kind in KINDS})
            data["skills"] = [s.entry() for s in objects["skills"] if s.loads()]
            self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str))
            return
        self.stdout.write(self.render(server, objects))

    def collect(self, server: MCPServer, user: Any, filtered: bool) -> dict[str, list[Any]]:
        everything: dict[str, list[Any]] = {
            "tools": list(server.tools.values()),
            "resources": list(server.resources.values()),
            "resourceTemplates": list(server.templates.values()),
            "prompts": list(server.prompts.values()),
            "skills": list(server.skills.values()),
        }
        if not filtered:
            return everything
        ctx = Context(cast(Runtime, _Caller(user)))

        async def keep() -> dict[str, list[Any]]:
            return {kind: [o for o in objs if await o.permits(ctx)] for kind, objs in everything.items()}

        return async_to_sync(keep)()

    def render(self, server: MCPServer, objects: dict[str, list[Any]]) -> str:
        info = server.server_info()
        out = [f"MCP server {info['name']!r} (version {info['version']})", ""]
        tools = [t.definition() | {"_obj": t} for t in objects["tools"]]
        out += [
            f"Tools ({len(tools)})",
            _table(
                ["NAME", "ARGUMENTS (* required)", "OUTPUT", "TASK", "ACCESS", "DESCRIPTION"],
                [
                    [
                        d["name"],
                        _arguments(d["inputSchema"]),
                        ", ".join((d.get("outputSchema") or {}).get("properties", {})) or "-",
                        _task_mode(d["_obj"]),
                        _access(d["_obj"]),
                        _short(d.get("description")),
                    ]
                    for d in tools
                ],
            ),
            "",
        ]
        for kind, title, key in (
            ("resources", "Resources", "uri"),
            ("resourceTemplates", "Resource templates", "uriTemplate"),
        ):
            defs = [(o.definition(), o) for o in objects[kind]]
            out += [
                f"{title} ({len(defs)})",
                _table(
                    ["URI", "NAME", "MIME TYPE", "ACCESS", "DESCRIPTION"],
                    [
                        [d[key], d["name"], d.get("mimeType", "-"), _access(o), _short(d.get("description"))]
                        for d, o in defs
                    ],
                ),
                "",
            ]
        prompts = [(p.definition(), p) for p in objects["prompts"]]
        out += [
            f"Prompts ({len(prompts)})",
            _table(
                ["NAME", "ARGUMENTS (* required)", "ACCESS", "DESCRIPTION"],
                [
                    [
                        d["name"],
                        ", ".join(f"{a['name']}{'*' if a.get('required') else ''}" for a in d.get("arguments", [])),
                        _access(p),
                        _short(d.get("description")),
                    ]
                    for d, p in prompts
                ],
            ),
        ]
        skills = objects["skills"]
        out += [
            "",
            f"Skills ({len(skills)})",
            _table(
                ["URI", "FILES", "BYTES", "ACCESS", "DESCRIPTION"],
                [_skill_row(s) for s in skills],
            ),
        ]
        return "\n".join(out)
