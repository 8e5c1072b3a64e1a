"""Agent skills served over MCP (the Skills extension, SEP-2640; docs/skills.md).

A skill is a folder with a ``SKILL.md`` and the files it refers to. Apps ship theirs as they ship
templates: ``<app>/skills/<name>/SKILL.md``, found in every installed app and in the folders of the
``SKILL_DIRS`` setting, served by ``django_mcp.site``. ``server.skill(...)`` declares one in code: a
folder, a text, or a Django template rendered once (so the SKILL.md can name the project's own tools).

A skill's files are read once, when it is first needed, and served from memory: the digests and sizes
that ``skills/list`` publishes are those of the bytes every later read returns, whatever happens on
disk, and only the files found under the skill's own folder exist (no path a client sends reaches the
file system). Each file is a resource: ``SKILL.md`` is listed by ``resources/list``, the others are read
through the skill's template ``skill://<path>/{+file}``; both carry the skill's access rules, so a
caller who may not use a skill finds neither it nor its files (docs/architecture.md, "Access").
"""

from __future__ import annotations

import base64
import logging
import mimetypes
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from .access import Check, Guard, hidden, visible
from .audit.declaration import REDACTED, AuditPolicy
from .conf import mcp_settings
from .exceptions import InvalidParams, MethodNotFound, ResourceNotFound
from .protocol import skills as rules
from .protocol.skills import SkillError
from .resources import Resource, ResourceTemplate

if TYPE_CHECKING:
    from .runtime.engine import Exchange
    from .server import MCPServer

logger = logging.getLogger("django_mcp")

#: What a skill folder may hold that is not one of its files: editors' and tools' droppings.
IGNORED = frozenset({"__pycache__", ".DS_Store", ".git"})
#: Characters left as they are in a file's URI (RFC 3986 ``pchar`` and ``/``); the rest is percent-encoded.
_URI_SAFE = "/-._~!$&'()*+,;=:@"


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill: its path in the skill (``references/GUIDE.md``) and its bytes."""

    path: str
    data: bytes
    mime_type: str
    #: The bytes as text when they are UTF-8 (served as ``text``), else None (served as a base64 ``blob``).
    text: str | None
    digest: str

    @classmethod
    def of(cls, path: str, data: bytes) -> SkillFile:
        rules.check_file_path(path)
        try:
            text: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if path.endswith(".md"):
            mime_type = rules.MANIFEST_MIME_TYPE
        else:
            guessed = mimetypes.guess_type(path)[0]
            mime_type = guessed or ("text/plain" if text is not None else "application/octet-stream")
        return cls(path, data, mime_type, text, rules.digest(data))

    @property
    def size(self) -> int:
        return len(self.data)


Source = Callable[[], dict[str, bytes]]
#: The rules a ``SKILL.md``'s own text breaks (the others are about the folder).
MANIFEST_RULES = frozenset({"frontmatter", "name", "description", "metadata", "manifest"})


@dataclass
class Skill(Guard):
    """A skill at ``skill://<path>/``: where its files come from, and who may use it.

    ``source()`` returns the files (path -> bytes, ``SKILL.md`` among them); it runs once.
    """

    path: str
    source: Source
    #: Where it was declared, for messages: the folder, or the template's name.
    origin: str = ""
    #: The folder it is read from (None: declared from a text or a template).
    folder: Path | None = None
    scopes: list[str] = field(default_factory=list)
    permissions: list[str] = field(default_factory=list)
    check: Check | None = None
    audit: AuditPolicy = REDACTED
    meta: dict[str, Any] | None = None
    name: str = field(init=False)
    _files: dict[str, SkillFile] | None = field(init=False, default=None, repr=False)
    _frontmatter: dict[str, Any] = field(init=False, default_factory=dict, repr=False)
    _error: SkillError | None = field(init=False, default=None, repr=False)
    #: Its ``SKILL.md`` (listed by ``resources/list``) and the template of its other files.
    manifest: SkillManifest = field(init=False, repr=False)
    files: SkillFiles = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.name = rules.check_path(self.path)
        rules.check_meta(self.meta)
        access: dict[str, Any] = dict(
            scopes=self.scopes, permissions=self.permissions, check=self.check, audit=self.audit
        )
        self.manifest = SkillManifest(  # its title names it in the admin's switches (not sent: see definition)
            uri=self.uri,
            fn=self._read_manifest,
            name=self.name,
            title=f"Skill {self.path}",
            skill=self,
            meta=self.meta,
            **access,
        )
        self.files = SkillFiles(
            uri=rules.uri(self.path, "{+file}"),
            fn=self._read_file,
            name=f"{self.name} files",
            description=f"The files of the skill {self.name}, as its entry in skills/list names them.",
            mime_type=None,
            skill=self,
            **access,
        )

    # -- identity ------------------------------------------------------------------
    @property
    def uri(self) -> str:
        """The URI of its ``SKILL.md``: what ``skills/get`` takes and a listing's entry names."""
        return rules.uri(self.path, rules.MANIFEST)

    @property
    def root(self) -> str:
        """Its root directory resource (``skill://<path>``, no trailing slash)."""
        return rules.uri(self.path)

    def file_uri(self, file_path: str) -> str:
        return rules.uri(self.path, quote(file_path, safe=_URI_SAFE))

    # -- content -------------------------------------------------------------------
    def load(self) -> dict[str, SkillFile]:
        """Its files, read (or rendered) on first use and kept; ``SkillError`` when a rule is broken.

        The first use may be a listing, in the event loop: a template skill's rendering must not query
        the database (docs/skills.md).
        """
        if self._files is not None:
            return self._files
        if self._error is not None:
            raise self._error
        try:
            raw = self.source()
            if rules.MANIFEST not in raw:
                raise SkillError("manifest", f"a skill must have a {rules.MANIFEST} at its root")
            rules.check_limits([len(b) for b in raw.values()])
            files = {
                p: SkillFile.of(p, b) for p, b in sorted(raw.items(), key=lambda i: (i[0] != rules.MANIFEST, i[0]))
            }
            manifest = files[rules.MANIFEST].text
            if manifest is None:
                raise SkillError("manifest", f"{rules.MANIFEST} must be UTF-8 text")
            data = rules.frontmatter(manifest)
            rules.check_frontmatter(data, self.name)
        except SkillError as exc:
            self._error = exc
            raise
        self._frontmatter, self._files = data, files
        return files

    def where(self, error: SkillError) -> str:
        """What ``manage.py check`` names for ``error``: the SKILL.md for a rule of its text, else the origin."""
        if self.folder is not None and error.rule in MANIFEST_RULES:
            return str(self.folder / rules.MANIFEST)
        return self.origin

    def loads(self) -> bool:
        """Whether it loads; one that does not is served as absent, logged once (``manage.py check`` says why)."""
        if self._files is not None:
            return True
        if self._error is not None:
            return False
        try:
            self.load()
        except SkillError as exc:
            logger.error("Skill %s (%s) is not served: %s", self.uri, self.origin, exc)
            return False
        return True

    @property
    def frontmatter(self) -> dict[str, Any]:
        self.load()
        return self._frontmatter

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    def entry(self) -> dict[str, Any]:
        """Its ``skills/list`` entry: the frontmatter verbatim, every file's ``uri``, ``digest`` and ``size``."""
        files = self.load()
        return {
            "uri": self.uri,
            "frontmatter": self._frontmatter,
            "resources": [{"uri": self.file_uri(f.path), "digest": f.digest, "size": f.size} for f in files.values()],
        }

    def directory(self, uri: str) -> str | None:
        """The folder (relative, ``""`` the root) that ``uri`` names in this skill, or None."""
        if uri == self.root:
            return ""
        if not uri.startswith(self.root + "/"):
            return None
        relative = unquote(uri[len(self.root) + 1 :])  # never "": a directory's URI has no trailing slash
        return relative if relative and relative in rules.directories(list(self.load())) else None

    def listing(self, directory: str) -> list[dict[str, Any]]:
        """The ``Resource`` objects of a folder's direct children; subfolders as ``inode/directory``."""
        files = self.load()
        names, folders = rules.children(list(files), directory)
        out: list[dict[str, Any]] = [
            {
                "uri": self.file_uri(p),
                "name": p.rsplit("/", 1)[-1],
                "mimeType": files[p].mime_type,
                "size": files[p].size,
            }
            for p in names
        ]
        out += [
            {"uri": self.file_uri(d), "name": d.rsplit("/", 1)[-1], "mimeType": rules.DIRECTORY_MIME_TYPE}
            for d in folders
        ]
        return out

    def contents(self, file: SkillFile) -> dict[str, Any]:
        if file.text is not None:
            return {"text": file.text, "mimeType": file.mime_type}
        return {"blob": base64.b64encode(file.data).decode("ascii"), "mimeType": file.mime_type}

    def _read_manifest(self) -> dict[str, Any]:
        if not self.loads():
            raise ResourceNotFound(self.uri)
        return self.contents(self.load()[rules.MANIFEST])

    def _read_file(self, file: str) -> dict[str, Any]:
        found = self.load().get(file) if self.loads() else None
        if found is None:
            raise ResourceNotFound(self.file_uri(file))
        return self.contents(found)


@dataclass
class SkillManifest(Resource):
    """A skill's ``SKILL.md``: its name, description and size come from the skill, once loaded."""

    skill: Any = field(default=None, repr=False, compare=False)

    def definition(self) -> dict[str, Any]:
        skill: Skill = self.skill
        files = skill.load()
        d: dict[str, Any] = {
            "uri": self.uri,
            "name": skill.name,
            "description": skill.description,
            "mimeType": rules.MANIFEST_MIME_TYPE,
            "size": files[rules.MANIFEST].size,
        }
        if self.meta:
            d["_meta"] = self.meta
        return d


@dataclass
class SkillFiles(ResourceTemplate):
    """The other files of a skill, by path: only those it was loaded with exist."""

    skill: Any = field(default=None, repr=False, compare=False)


# -- where skills come from -----------------------------------------------------------


def read_folder(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (path -> bytes), refusing what would reach outside it.

    A symbolic link is followed only when its target is inside the folder; one that leads out of it,
    or a file that is neither regular nor a folder, is a ``SkillError``. Hidden files and ``__pycache__``
    are left out. Stops early when the files exceed the limits.
    """
    root = folder.resolve()
    if not (root / rules.MANIFEST).is_file():
        raise SkillError("manifest", f"{folder} has no {rules.MANIFEST}")
    out: dict[str, bytes] = {}
    total = 0
    for current, dirnames, filenames in os.walk(root, followlinks=True):
        here = Path(current)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in IGNORED)
        for d in dirnames:
            _inside(root, here / d)
        for name in sorted(filenames):
            if name.startswith(".") or name in IGNORED:
                continue
            path = here / name
            target = _inside(root, path)
            if not target.is_file():
                raise SkillError("files", f"{path} is not a regular file")
            data = target.read_bytes()
            total += len(data)
            out[path.relative_to(root).as_posix()] = data
            if len(out) > rules.MAX_FILES or total > rules.MAX_BYTES:
                rules.check_limits([len(b) for b in out.values()])
    return out


def _inside(root: Path, path: Path) -> Path:
    target = path.resolve()
    if not target.is_relative_to(root):
        raise SkillError("files", f"{path} leads outside the skill's folder (to {target})")
    return target


def from_folder(folder: Path | str, path: str | None = None, **options: Any) -> Skill:
    """The skill in ``folder``; its path defaults to the folder's name."""
    folder = Path(folder)
    return Skill(path or folder.name, lambda: read_folder(folder), origin=str(folder), folder=folder, **options)


def from_text(path: str, text: str, files: dict[str, bytes | str] | None = None, **options: Any) -> Skill:
    """A skill whose ``SKILL.md`` is ``text`` (and whose other files are ``files``, by path)."""

    def source() -> dict[str, bytes]:
        raw = {p: (v.encode() if isinstance(v, str) else v) for p, v in (files or {}).items()}
        return {**raw, rules.MANIFEST: text.encode()}

    return Skill(path, source, origin=options.pop("origin", f"{path} (declared in code)"), **options)


def from_template(
    path: str,
    template: str,
    context: dict[str, Any] | None = None,
    files: dict[str, bytes | str] | None = None,
    **options: Any,
) -> Skill:
    """A skill whose ``SKILL.md`` is the Django template ``template``, rendered once with ``context``."""

    def source() -> dict[str, bytes]:
        from django.template import TemplateDoesNotExist, TemplateSyntaxError  # reason: templates are set up late
        from django.template.loader import render_to_string  # reason: as above

        try:
            text = render_to_string(template, context or {})
        except (TemplateDoesNotExist, TemplateSyntaxError) as exc:
            raise SkillError("template", f"the template {template!r} cannot be rendered: {exc}") from None
        raw = {p: (v.encode() if isinstance(v, str) else v) for p, v in (files or {}).items()}
        return {**raw, rules.MANIFEST: text.encode()}

    return Skill(path, source, origin=f"template {template}", **options)


def skill_folders() -> Iterator[Path]:
    """Each ``<app>/skills/<name>/`` of the installed apps, then each ``<dir>/<name>/`` of ``SKILL_DIRS``."""
    from django.apps import apps  # reason: the app registry, after it is ready

    roots = [Path(c.path) / "skills" for c in apps.get_app_configs()]
    roots += [Path(d) for d in mcp_settings.SKILL_DIRS]
    for root in roots:
        if root.is_dir():
            for child in sorted(root.iterdir()):
                if child.is_dir() and (child / rules.MANIFEST).exists():
                    yield child


#: Folders ``autodiscover`` could not serve, with why (``manage.py check`` reports them, E251).
skipped: list[tuple[Path, SkillError]] = []


def autodiscover(server: MCPServer) -> None:
    """Serve every app's and every ``SKILL_DIRS`` folder's skills on ``server``; the first of a name wins.

    A folder whose name is no skill name is skipped (and reported by ``manage.py check``) rather than
    stopping the project.
    """
    skipped.clear()
    for folder in skill_folders():
        try:
            skill = from_folder(folder)
        except SkillError as exc:
            skipped.append((folder, exc))
            continue
        if skill.uri not in server.skills:
            server.add_skill(skill)


# -- the methods ----------------------------------------------------------------------


async def visible_skills(server: MCPServer, ex: Exchange) -> list[Skill]:
    """The skills ``ex``'s caller may use (rules, kill switches) that load."""
    return [s for s in server.skills.values() if await visible(s.manifest, ex) and s.loads()]


async def find(server: MCPServer, uri: Any, ex: Exchange) -> Skill:
    """The skill whose ``SKILL.md`` is ``uri``, if the caller may use it; else -32602, as for an unknown one."""
    if not isinstance(uri, str):
        raise InvalidParams("params.uri must be a string")
    skill = server.skills.get(uri)
    if skill is None or not await visible(skill.manifest, ex) or not skill.loads():
        raise InvalidParams(f"Unknown skill: {uri}", {"uri": uri})
    return skill


def _served(server: MCPServer) -> None:
    if not server.skills:
        raise MethodNotFound("Method not found: this server serves no skills")


def _params(params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise InvalidParams("params must be an object")
    cursor = params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise InvalidParams("params.cursor must be a string")
    return params


async def list_skills(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    """``skills/list``: one entry per skill, whole (a page never splits one)."""
    _served(server)
    params = _params(params)
    entries = [s.entry() for s in await visible_skills(server, ex)]
    return server.page(entries, params, "skills", "skills")


async def get_skill(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    """``skills/get``: the entry of the skill whose ``SKILL.md`` is ``params.uri``."""
    _served(server)
    params = _params(params)
    return {"skill": (await find(server, params.get("uri"), ex)).entry()}


async def read_directory(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    """``resources/directory/read``: a skill folder's direct children; -32602 for anything else."""
    _served(server)
    params = _params(params)
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParams("params.uri must be a string")
    for skill in sorted(server.skills.values(), key=lambda s: -len(s.root)):  # the innermost skill first
        if (uri == skill.root or uri.startswith(skill.root + "/")) and await visible(skill.manifest, ex):
            if not skill.loads():
                continue
            directory = skill.directory(uri)
            if directory is None:
                break
            return server.page(skill.listing(directory), params, f"dir:{uri}"[:64], "resources")
    raise InvalidParams(f"Not a directory: {uri}", {"uri": uri})


HANDLERS = {"skills/list": list_skills, "skills/get": get_skill, "resources/directory/read": read_directory}


def target(server: MCPServer, method: str, params: dict[str, Any]) -> Resource | None:
    """The ``SKILL.md`` resource a skills request names (its scopes are checked at the door)."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        return None
    if method == "skills/get":
        skill = server.skills.get(uri)
        return skill.manifest if skill is not None else None
    for skill in server.skills.values():
        if uri == skill.root or uri.startswith(skill.root + "/"):
            return skill.manifest
    return None


def _hidden_skill(obj: Any) -> bool:
    """The ``access.hidden`` hook: a skill that does not load is absent, its ``SKILL.md`` and files too.

    Its files go with its ``SKILL.md``: what hides that (a kill switch) hides them.
    """
    if not isinstance(obj, (SkillManifest, SkillFiles)):
        return False
    if not obj.skill.loads():
        return True
    return isinstance(obj, SkillFiles) and any(hook(obj.skill.manifest) for hook in hidden if hook is not _hidden_skill)


hidden.append(_hidden_skill)


__all__ = [
    "Skill",
    "SkillError",
    "SkillFile",
    "autodiscover",
    "from_folder",
    "from_template",
    "from_text",
    "read_folder",
    "skill_folders",
]
