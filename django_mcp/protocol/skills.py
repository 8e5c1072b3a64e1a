"""The Skills extension (SEP-2640, ``io.modelcontextprotocol/skills``): its names, limits and rules.

A skill is a folder whose ``SKILL.md`` starts with YAML frontmatter (``name``, ``description``, the
Agent Skills specification's format). Each file of it is a resource ``skill://<skill-path>/<file>``;
``skills/list`` and ``skills/get`` publish each skill's entry: its frontmatter verbatim and every file's
``uri``, ``digest`` (``sha256:<hex>`` of the raw bytes) and ``size``, which hosts verify what they read
against. Pure: what a skill's bytes must satisfy, not where they come from (``django_mcp.skills``).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from typing import Any

import yaml

EXTENSION = "io.modelcontextprotocol/skills"
SCHEME = "skill"
MANIFEST = "SKILL.md"
MANIFEST_MIME_TYPE = "text/markdown"
#: The MIME type of a directory resource (``resources/directory/read``).
DIRECTORY_MIME_TYPE = "inode/directory"
#: ``_meta`` keys on skill resources carry this prefix.
META_PREFIX = "io.modelcontextprotocol.skills/"
#: Keys of the frontmatter's ``metadata`` under this prefix are reserved for MCP extensions (none defined yet).
RESERVED_METADATA_PREFIX = "io.modelcontextprotocol/"
#: Servers SHOULD NOT serve a skill with more files or more bytes than this (SKILL.md included).
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024
#: The Agent Skills specification's limits on the frontmatter.
MAX_DESCRIPTION = 1024
#: 1-64 lowercase letters, digits and hyphens; no leading, trailing or doubled hyphen.
NAME = re.compile(r"^(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
#: A prefix segment of a skill path: an RFC 3986 reg-name/segment without percent-escapes.
SEGMENT = re.compile(r"^[A-Za-z0-9._~-]+$")
_FRONTMATTER = re.compile(r"^---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)

METHODS = frozenset({"skills/list", "skills/get", "resources/directory/read"})


class SkillError(ValueError):
    """A skill breaks a rule: ``rule`` names it (``"frontmatter"``, ``"name"``, ``"limits"``...)."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


def digest(data: bytes) -> str:
    """``sha256:<64 lowercase hex>`` of the raw bytes: what a host verifies a read against."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def uri(skill_path: str, file_path: str = "") -> str:
    """``skill://<skill-path>/<file>``, or the skill's root directory (no trailing slash) without a file."""
    return f"{SCHEME}://{skill_path}/{file_path}" if file_path else f"{SCHEME}://{skill_path}"


def check_path(skill_path: str) -> str:
    """The skill's name (the last segment) once ``skill_path`` is a valid ``a/b/name``; else ``SkillError``."""
    segments = skill_path.split("/")
    name = segments[-1]
    if not NAME.match(name):
        raise SkillError(
            "name",
            f"skill name {name!r} must be 1-64 lowercase letters, digits and hyphens, "
            "without a leading, trailing or doubled hyphen",
        )
    for segment in segments[:-1]:
        if not SEGMENT.match(segment):
            raise SkillError("path", f"skill path segment {segment!r} must be letters, digits, '.', '_', '~' or '-'")
    return name


def frontmatter(text: str) -> dict[str, Any]:
    """The YAML frontmatter that opens a ``SKILL.md``, as a JSON object; ``SkillError`` when there is none."""
    match = _FRONTMATTER.match(text[1:] if text.startswith("\ufeff") else text)
    if match is None:
        raise SkillError("frontmatter", "SKILL.md must begin with YAML frontmatter between two '---' lines")
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise SkillError("frontmatter", f"the frontmatter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SkillError("frontmatter", "the frontmatter must be a YAML mapping (name: ..., description: ...)")
    if not _is_json(data):
        raise SkillError("frontmatter", "the frontmatter must hold only strings, numbers, booleans, lists and maps")
    return data


def _is_json(value: Any) -> bool:
    """Whether a YAML value maps to JSON unchanged (no dates, no non-string keys): hosts compare it field by field."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def check_frontmatter(data: dict[str, Any], name: str) -> None:
    """The rules the entry must meet: ``name`` equals the path's last segment, a ``description``, reserved keys."""
    declared = data.get("name")
    if not isinstance(declared, str) or not declared:
        raise SkillError("name", "the frontmatter must have a 'name'")
    if declared != name:
        raise SkillError("name", f"the frontmatter's name {declared!r} must equal the skill's folder name {name!r}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError("description", "the frontmatter must have a non-empty 'description'")
    if len(description) > MAX_DESCRIPTION:
        raise SkillError("description", f"the description must be at most {MAX_DESCRIPTION} characters")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise SkillError("metadata", "'metadata' must be a mapping")
    reserved = sorted(k for k in metadata or {} if k.startswith(RESERVED_METADATA_PREFIX))
    if reserved:
        raise SkillError("metadata", f"metadata keys under {RESERVED_METADATA_PREFIX!r} are reserved: {reserved}")


def check_file_path(file_path: str) -> None:
    """A file's path inside its skill: relative, ``/``-separated, no ``.``/``..`` segment, no empty segment."""
    if (
        not file_path
        or file_path.startswith("/")
        or "\\" in file_path
        or any(s in ("", ".", "..") for s in file_path.split("/"))
        or posixpath.normpath(file_path) != file_path
    ):
        raise SkillError("path", f"file path {file_path!r} must be relative, '/'-separated, without '.' or '..'")


def check_limits(sizes: list[int]) -> None:
    """At most ``MAX_FILES`` files and ``MAX_BYTES`` bytes in all."""
    if len(sizes) > MAX_FILES:
        raise SkillError("limits", f"a skill may hold at most {MAX_FILES} files, not {len(sizes)}")
    total = sum(sizes)
    if total > MAX_BYTES:
        raise SkillError("limits", f"a skill may hold at most {MAX_BYTES} bytes (16 MiB), not {total}")


def check_meta(meta: dict[str, Any] | None) -> None:
    """``_meta`` keys of a skill's resources carry a reverse-domain prefix (``io.modelcontextprotocol.skills/``)."""
    loose = sorted(k for k in meta or {} if not re.match(r"^[a-z0-9-]+(\.[a-z0-9-]+)+/", k, re.IGNORECASE))
    if loose:
        raise SkillError("meta", f"_meta keys must carry a reverse-domain prefix such as {META_PREFIX!r}: {loose}")


def directories(file_paths: list[str]) -> set[str]:
    """Every directory of a skill, relative to its root (``""`` is the root itself)."""
    found = {""}
    for path in file_paths:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            found.add("/".join(parts[:i]))
    return found


def children(file_paths: list[str], directory: str) -> tuple[list[str], list[str]]:
    """The direct children of ``directory`` (relative, ``""`` the root): its files and its subdirectories."""
    prefix = f"{directory}/" if directory else ""
    files, subdirectories = [], set()
    for path in file_paths:
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix) :]
        head, sep, _ = rest.partition("/")
        if sep:
            subdirectories.add(prefix + head)
        else:
            files.append(path)
    return files, sorted(subdirectories)


__all__ = [
    "DIRECTORY_MIME_TYPE",
    "EXTENSION",
    "MANIFEST",
    "MANIFEST_MIME_TYPE",
    "MAX_BYTES",
    "MAX_FILES",
    "META_PREFIX",
    "METHODS",
    "SkillError",
    "check_file_path",
    "check_frontmatter",
    "check_limits",
    "check_meta",
    "check_path",
    "children",
    "digest",
    "directories",
    "frontmatter",
    "uri",
]
