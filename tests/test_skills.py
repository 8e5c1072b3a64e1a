"""Skills (SEP-2640): the rules a skill must meet, its folder read safely, the methods in both eras.

In process through ``MCPTestClient`` (the one door every transport uses) against a server of this
module; the official suite's scenarios run against the fixture server (tests/test_conformance.py),
``manage.py check`` in a subprocess on a folder of broken skills.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_mcp import MCPServer
from django_mcp.protocol import skills as rules
from django_mcp.protocol.skills import SkillError
from django_mcp.skills import from_folder, read_folder
from django_mcp.test import MCPClientError, MCPTestClient
from tests.support.servers import ROOT

#: own_config: skills are files read once; neither the database nor the layer changes them (pg-redis skips it).
pytestmark = pytest.mark.own_config
REVISIONS = ("2025-11-25", "2026-07-28")

LENDING = """---
name: lending
description: Lend and return books of the library with its tools.
metadata:
  version: "2"
---

# Lending

Search first (`search_books`), then `lend_book`. See [returns](guides/RETURNS.md).
"""


def make_skill(folder: Path, name: str = "lending", text: str = LENDING, extra: dict[str, bytes] | None = None) -> Path:
    root = folder / name
    (root / "guides").mkdir(parents=True)
    (root / "SKILL.md").write_text(text)
    (root / "guides" / "RETURNS.md").write_text("# Returns\n\nCall `return_book`.\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    for path, data in (extra or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


@pytest.fixture
def served(tmp_path: Path) -> MCPServer:
    server = MCPServer("skills-test")
    server.skill("lending", folder=make_skill(tmp_path))
    server.skill(
        "staff/inventory",
        text="---\nname: inventory\ndescription: Count the shelves.\n---\nCount.\n",
        permissions=["auth.view_user"],
    )
    server.skill("notes", text="---\nname: notes\ndescription: Notes.\n---\n", check=lambda ctx: False)

    @server.tool
    def search_books(query: str) -> str:
        return query

    return server


def error_of(client: MCPTestClient, method: str, params: dict[str, Any]) -> MCPClientError:
    with pytest.raises(MCPClientError) as caught:
        client.request(method, params)
    return caught.value


# -- the rules -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("# no frontmatter\n", "frontmatter"),
        ("---\nname: [unclosed\n---\n", "frontmatter"),
        ("---\n- a list\n---\n", "frontmatter"),
        ("---\nname: lending\ndescription: d\ncreated: 2024-01-01\n---\n", "frontmatter"),
        ("---\ndescription: d\n---\n", "name"),
        ("---\nname: other\ndescription: d\n---\n", "name"),
        ("---\nname: lending\n---\n", "description"),
        ("---\nname: lending\ndescription: '  '\n---\n", "description"),
        ("---\nname: lending\ndescription: " + "x" * 1025 + "\n---\n", "description"),
        ("---\nname: lending\ndescription: d\nmetadata: [1]\n---\n", "metadata"),
        ("---\nname: lending\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: 1\n---\n", "metadata"),
    ],
)
def test_a_skill_md_breaking_a_rule_is_refused_with_the_rule(text: str, rule: str) -> None:
    with pytest.raises(SkillError) as caught:
        rules.check_frontmatter(rules.frontmatter(text), "lending")
    assert caught.value.rule == rule


def test_frontmatter_is_read_verbatim() -> None:
    data = rules.frontmatter("\ufeff---\r\nname: lending\r\ndescription: d\r\nlicense: MIT\r\n---\r\nbody")
    assert data == {"name": "lending", "description": "d", "license": "MIT"}
    rules.check_frontmatter(data, "lending")


@pytest.mark.parametrize("name", ["Lending", "-lending", "lending-", "len--ding", "a" * 65, "", "lend_ing"])
def test_skill_names_follow_the_agent_skills_rules(name: str) -> None:
    with pytest.raises(SkillError):
        rules.check_path(name)
    with pytest.raises(ImproperlyConfigured):
        MCPServer("x").skill(name, text="---\nname: x\ndescription: d\n---\n")


@pytest.mark.parametrize("path", ["../x", "a/../b", "/etc/passwd", "a//b", "./a", "a\\b", ""])
def test_a_file_path_never_leaves_the_skill(path: str) -> None:
    with pytest.raises(SkillError):
        rules.check_file_path(path)


def test_limits() -> None:
    rules.check_limits([1] * rules.MAX_FILES)
    with pytest.raises(SkillError, match="512 files"):
        rules.check_limits([1] * (rules.MAX_FILES + 1))
    with pytest.raises(SkillError, match="16 MiB"):
        rules.check_limits([rules.MAX_BYTES, 1])


def test_meta_keys_need_a_prefix() -> None:
    rules.check_meta({"io.modelcontextprotocol.skills/owner": "x", "com.example/y": 1})
    with pytest.raises(ImproperlyConfigured, match="reverse-domain"):
        MCPServer("x").skill("a", text="---\nname: a\ndescription: d\n---\n", meta={"owner": "x"})


# -- the folder --------------------------------------------------------------------------------


def test_a_folder_is_read_whole_without_hidden_files(tmp_path: Path) -> None:
    root = make_skill(tmp_path, extra={".secret": b"x", "__pycache__/a.pyc": b"x", ".git/config": b"x"})
    assert sorted(read_folder(root)) == ["SKILL.md", "guides/RETURNS.md", "logo.png"]


def test_a_link_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("password")
    root = make_skill(tmp_path / "skills")
    (root / "guides" / "leak.md").symlink_to(outside)
    with pytest.raises(SkillError, match="leads outside") as caught:
        read_folder(root)
    assert caught.value.rule == "files"
    (root / "guides" / "leak.md").unlink()
    (root / "up").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(SkillError, match="leads outside"):
        read_folder(root)


def test_a_link_inside_the_folder_is_a_file_of_it(tmp_path: Path) -> None:
    root = make_skill(tmp_path)
    (root / "RETURNS.md").symlink_to(root / "guides" / "RETURNS.md")
    assert read_folder(root)["RETURNS.md"] == (root / "guides" / "RETURNS.md").read_bytes()


def test_too_many_files_stop_the_read(tmp_path: Path) -> None:
    root = make_skill(tmp_path, extra={f"many/{i}.txt": b"x" for i in range(rules.MAX_FILES)})
    with pytest.raises(SkillError) as caught:
        read_folder(root)
    assert caught.value.rule == "limits"


def test_files_are_read_once_and_served_as_read(tmp_path: Path) -> None:
    root = make_skill(tmp_path)
    skill = from_folder(root)
    before = skill.entry()
    (root / "SKILL.md").write_text(LENDING + "changed\n")
    assert skill.entry() == before


# -- the methods, both eras ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("revision", REVISIONS)
def test_declared_and_listed(served: MCPServer, revision: str) -> None:
    client = MCPTestClient(served, protocol_version=revision)
    if revision == "2026-07-28":
        capabilities = client.request("server/discover")["capabilities"]
    else:
        capabilities = client.initialize().capabilities.model_dump(by_alias=True, exclude_none=True)
    assert capabilities["extensions"][rules.EXTENSION] == {"directoryRead": True}
    assert isinstance(capabilities["resources"], dict)

    listing = client.request("skills/list")
    assert [s["uri"] for s in listing["skills"]] == ["skill://lending/SKILL.md"]  # the other two are not for anonymous
    entry = listing["skills"][0]
    assert entry["frontmatter"] == {
        "name": "lending",
        "description": "Lend and return books of the library with its tools.",
        "metadata": {"version": "2"},
    }
    assert [r["uri"] for r in entry["resources"]] == [
        "skill://lending/SKILL.md",
        "skill://lending/guides/RETURNS.md",
        "skill://lending/logo.png",
    ]
    for item in entry["resources"]:  # what a host verifies: the bytes read have the listed digest and size
        (content,) = client.request("resources/read", {"uri": item["uri"]})["contents"]
        data = content["text"].encode() if "text" in content else base64.b64decode(content["blob"])
        assert item["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
        assert item["size"] == len(data)
    assert client.request("skills/get", {"uri": "skill://lending/SKILL.md"}) == {
        **({"resultType": "complete", "ttlMs": 0, "cacheScope": "private"} if revision == "2026-07-28" else {}),
        **({"_meta": client.request("skills/get", {"uri": entry["uri"]})["_meta"]} if revision == "2026-07-28" else {}),
        "skill": entry,
    }
    resources = client.list_resources().resources
    manifest = next(r for r in resources if r.uri == "skill://lending/SKILL.md")
    assert (manifest.name, manifest.mime_type) == ("lending", "text/markdown")
    assert manifest.description == entry["frontmatter"]["description"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("revision", REVISIONS)
def test_directory_read(served: MCPServer, revision: str) -> None:
    client = MCPTestClient(served, protocol_version=revision)
    root = client.request("resources/directory/read", {"uri": "skill://lending"})["resources"]
    assert {(r["uri"], r["mimeType"]) for r in root} == {
        ("skill://lending/SKILL.md", "text/markdown"),
        ("skill://lending/logo.png", "image/png"),
        ("skill://lending/guides", "inode/directory"),
    }
    guides = client.request("resources/directory/read", {"uri": "skill://lending/guides"})["resources"]
    assert [(r["uri"], r["name"]) for r in guides] == [("skill://lending/guides/RETURNS.md", "RETURNS.md")]
    for uri in (
        "skill://lending/SKILL.md",  # a file
        "skill://lending/",
        "skill://lending/nothing",
        "skill://lending/guides/..",
        "skill://lending/../staff/inventory",
        "skill://staff/inventory",  # not this caller's
        "skill://notes",
        "skill://absent",
        "file:///etc",
    ):
        assert error_of(client, "resources/directory/read", {"uri": uri}).code == -32602, uri
    for params in ({}, {"uri": 3}, {"uri": "skill://lending", "cursor": 1}, {"uri": "skill://lending", "cursor": "x"}):
        assert error_of(client, "resources/directory/read", params).code == -32602, params


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("revision", REVISIONS)
def test_unknown_and_refused_skills_are_alike(served: MCPServer, revision: str) -> None:
    client = MCPTestClient(served, protocol_version=revision)
    for uri in (
        "skill://absent/SKILL.md",
        "skill://staff/inventory/SKILL.md",
        "skill://notes/SKILL.md",
        "skill://lending",
    ):
        error = error_of(client, "skills/get", {"uri": uri})
        assert (error.code, error.message) == (-32602, f"Unknown skill: {uri}")
    for params in ({}, {"uri": None}, {"uri": ["skill://lending/SKILL.md"]}):
        assert error_of(client, "skills/get", params).code == -32602
    not_found = -32602 if revision == "2026-07-28" else -32002
    for uri in (
        "skill://staff/inventory/SKILL.md",
        "skill://lending/guides/../SKILL.md",
        "skill://lending/..%2F..%2Fetc%2Fpasswd",
        "skill://lending/guides%2F..%2F..%2Fnotes%2FSKILL.md",
        "skill://lending/absent.md",
        "skill://lending/%2e%2e/notes/SKILL.md",
    ):
        assert error_of(client, "resources/read", {"uri": uri}).code == not_found, uri


@pytest.mark.django_db(transaction=True)
def test_a_user_with_the_permission_sees_the_guarded_skill(served: MCPServer, django_user_model: Any) -> None:
    staff = django_user_model.objects.create_superuser("sue", password="pw")
    client = MCPTestClient(served, user=staff)
    uris = [s["uri"] for s in client.request("skills/list")["skills"]]
    assert uris == ["skill://lending/SKILL.md", "skill://staff/inventory/SKILL.md"]
    entry = client.request("skills/get", {"uri": "skill://staff/inventory/SKILL.md"})["skill"]
    assert entry["frontmatter"]["name"] == "inventory"
    assert client.request("resources/directory/read", {"uri": "skill://staff/inventory"})["resources"][0]["name"] == (
        "SKILL.md"
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("revision", REVISIONS)
def test_pages_never_split_a_skill(tmp_path: Path, revision: str) -> None:
    server = MCPServer("paged")
    for name in ("a", "b", "c"):
        server.skill(name, folder=make_skill(tmp_path, name, LENDING.replace("name: lending", f"name: {name}")))
    client = MCPTestClient(server, protocol_version=revision)
    with override_settings(DJANGO_MCP={"PAGE_SIZE": 2, "AUTH": "none"}):
        first = client.request("skills/list")
        second = client.request("skills/list", {"cursor": first["nextCursor"]})
        root = client.request("resources/directory/read", {"uri": "skill://a"})
        rest = client.request("resources/directory/read", {"uri": "skill://a", "cursor": root["nextCursor"]})
        wrong = error_of(client, "resources/directory/read", {"uri": "skill://b", "cursor": root["nextCursor"]})
    assert [s["uri"] for s in first["skills"] + second["skills"]] == [f"skill://{n}/SKILL.md" for n in "abc"]
    assert "nextCursor" not in second
    assert all(len(s["resources"]) == 3 for s in first["skills"] + second["skills"])
    assert len(root["resources"]) == 2 and len(rest["resources"]) == 1 and "nextCursor" not in rest
    assert wrong.code == -32602  # a cursor is bound to its directory


@pytest.mark.django_db(transaction=True)
def test_a_broken_skill_is_absent_and_the_rest_served(tmp_path: Path) -> None:
    server = MCPServer("broken")
    server.skill("lending", folder=make_skill(tmp_path))
    server.skill("bad", text="---\nname: other\ndescription: d\n---\n")
    client = MCPTestClient(server)
    assert [s["uri"] for s in client.request("skills/list")["skills"]] == ["skill://lending/SKILL.md"]
    assert error_of(client, "skills/get", {"uri": "skill://bad/SKILL.md"}).code == -32602
    assert "skill://bad/SKILL.md" not in [r.uri for r in client.list_resources().resources]
    assert error_of(client, "resources/read", {"uri": "skill://bad/SKILL.md"}).code == -32602


@pytest.mark.django_db(transaction=True)
def test_a_server_without_skills_does_not_answer_the_methods() -> None:
    server = MCPServer("plain")
    client = MCPTestClient(server)
    assert rules.EXTENSION not in client.request("server/discover")["capabilities"].get("extensions", {})
    for method in ("skills/list", "skills/get", "resources/directory/read"):
        assert error_of(client, method, {"uri": "skill://a/SKILL.md"}).code == -32601


@pytest.mark.django_db(transaction=True)
def test_a_template_skill_is_rendered_once(tmp_path: Path) -> None:
    (tmp_path / "skill.md").write_text(
        "---\nname: tools\ndescription: The {{ count }} tools of {{ site }}.\n---\n"
        "{% for t in tools %}- `{{ t }}`\n{% endfor %}"
    )
    server = MCPServer("templated")
    templates = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "DIRS": [str(tmp_path)]}]
    with override_settings(TEMPLATES=templates):
        server.skill(
            "tools",
            template="skill.md",
            context={"count": 2, "site": "the library", "tools": ["search_books", "lend_book"]},
            files={"notes/a.txt": "a"},
        )
        entry = MCPTestClient(server).request("skills/get", {"uri": "skill://tools/SKILL.md"})["skill"]
        text = MCPTestClient(server).read_resource("skill://tools/SKILL.md").contents[0]
    assert entry["frontmatter"]["description"] == "The 2 tools of the library."
    assert getattr(text, "text", "").endswith("- `search_books`\n- `lend_book`\n")
    assert [r["uri"] for r in entry["resources"]] == ["skill://tools/SKILL.md", "skill://tools/notes/a.txt"]


# -- manage.py check ----------------------------------------------------------------------------


def test_check_names_the_file_and_the_rule(tmp_path: Path) -> None:
    folder = tmp_path / "skills"
    make_skill(folder, "good")
    (folder / "good" / "SKILL.md").write_text(LENDING.replace("name: lending", "name: good"))
    make_skill(folder, "mismatch")
    make_skill(folder, "Bad_Name", LENDING.replace("name: lending", "name: Bad_Name"))
    make_skill(folder, "nodesc", "---\nname: nodesc\n---\n")
    settings_file = tmp_path / "skills_settings.py"
    settings_file.write_text(
        "from tests.settings import *  # noqa\n"
        "from tests.settings import DJANGO_MCP as BASE\n"
        f"DJANGO_MCP = {{**BASE, 'SKILL_DIRS': [{str(folder)!r}]}}\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "skills_settings", "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", "django", "check"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert out.count("django_mcp.E251") == 3, out
    assert f"{folder / 'mismatch'}/SKILL.md: the frontmatter's name 'lending' must equal" in out
    assert "(rule: name)" in out and "(rule: description)" in out
    assert "'Bad_Name' must be 1-64 lowercase letters" in out
    assert "good" not in out.replace("goodbye", "")


# -- kill switches ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("revision", REVISIONS)
def test_a_switched_off_skill_is_gone_with_its_files(served: MCPServer, revision: str) -> None:
    from django_mcp.switches import board, switch_off, switch_on

    board.reset()
    client = MCPTestClient(served, protocol_version=revision)
    try:
        switch_off("resource", "skill://lending/SKILL.md", reason="rewriting it")
        assert client.request("skills/list")["skills"] == []
        error = error_of(client, "skills/get", {"uri": "skill://lending/SKILL.md"})
        assert (error.code, error.message) == (
            -32602,
            "Resource 'skill://lending/SKILL.md' is disabled by the site's operators",
        )
        assert error_of(client, "resources/read", {"uri": "skill://lending/guides/RETURNS.md"}).code in (-32602, -32002)
        assert error_of(client, "resources/directory/read", {"uri": "skill://lending"}).code == -32602
        switch_on("resource", "skill://lending/SKILL.md")
        assert [s["uri"] for s in client.request("skills/list")["skills"]] == ["skill://lending/SKILL.md"]
        assert client.request("resources/read", {"uri": "skill://lending/guides/RETURNS.md"})["contents"]
    finally:
        board.reset()


@pytest.mark.django_db(transaction=True)
def test_staff_see_a_skill_beside_the_tools_in_the_admin_and_switch_it_off(tmp_path: Path) -> None:
    from django.contrib.auth.models import User
    from django.test import Client

    from django_mcp import site
    from django_mcp.models import MCPSwitch
    from django_mcp.switches import board

    saved = site._registry
    site.skill("lending", folder=make_skill(tmp_path))
    board.reset()
    try:
        browser = Client()
        browser.force_login(User.objects.create_superuser("ops", password="pw"))
        page = browser.get("/admin/django_mcp/mcpswitch/?q=skill")
        assert page.status_code == 200 and b"Skill lending" in page.content
        row = MCPSwitch.objects.get(kind="resource", name="skill://lending/SKILL.md")
        assert MCPSwitch.objects.filter(kind="template", name="skill://lending/{+file}").exists()
        client = MCPTestClient()
        assert [s["uri"] for s in client.request("skills/list")["skills"]] == ["skill://lending/SKILL.md"]
        action = {"action": "disable_selected", "_selected_action": [str(row.pk)], "index": "0"}
        assert browser.post("/admin/django_mcp/mcpswitch/", action).status_code == 302
        assert client.request("skills/list")["skills"] == []
        assert error_of(client, "resources/read", {"uri": "skill://lending/guides/RETURNS.md"}).code == -32602
    finally:
        site._registry = saved
        board.reset()


def test_runserver_watches_the_skill_folders(tmp_path: Path) -> None:
    """A skill's files are read once: the autoreloader restarts the server when one changes."""
    from django_mcp import apps

    app = tmp_path / "books"
    make_skill(app / "skills")
    extra = tmp_path / "more"
    extra.mkdir()
    watched: list[tuple[Path, str]] = []

    class Reloader:
        def watch_dir(self, path: Path, glob: str) -> None:
            watched.append((path, glob))

    saved = list(apps._app_dirs)
    apps._app_dirs[:] = [app]
    try:
        with override_settings(DJANGO_MCP={"SKILL_DIRS": [str(extra), str(tmp_path / "absent")]}):
            apps.watch_mcp_modules(Reloader())
    finally:
        apps._app_dirs[:] = saved
    assert (app / "skills", "**/*") in watched and (extra, "**/*") in watched
    assert all(path != tmp_path / "absent" for path, _ in watched)


def test_strict_mode_names_a_skill_without_rules_once(tmp_path: Path) -> None:
    from django_mcp import public, strict

    server = MCPServer("strict-skills")
    server.skill("lending", folder=make_skill(tmp_path))
    server.skill("ruled", text="---\nname: ruled\ndescription: d\n---\n", check=public)
    with override_settings(DJANGO_MCP={"REQUIRE_ACCESS_RULES": True}):
        (error,) = strict.errors([server])
    assert error.id == "django_mcp.E182"
    assert error.msg.startswith("Skill 'lending' declares no access rule") and "site.skill(" in error.hint


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("revision", REVISIONS)
def test_a_token_without_the_skills_scope_neither_sees_nor_reads_it(
    tmp_path: Path, revision: str, django_user_model: Any
) -> None:
    """Two clients of one user: the token granting ``desk`` gets the skill; the one without it is refused."""
    server = MCPServer("scoped")
    server.skill(
        "desk", folder=make_skill(tmp_path, "desk", LENDING.replace("name: lending", "name: desk")), scopes=["desk"]
    )
    user = django_user_model.objects.create_user("ann")
    desk = MCPTestClient(server, protocol_version=revision)
    desk.force_authenticate(user, scopes=["mcp", "desk"], client_id="desk-app")
    phone = MCPTestClient(server, protocol_version=revision)
    phone.force_authenticate(user, scopes=["mcp"], client_id="phone-app")
    assert [s["uri"] for s in desk.request("skills/list")["skills"]] == ["skill://desk/SKILL.md"]
    assert desk.request("resources/read", {"uri": "skill://desk/guides/RETURNS.md"})["contents"]
    assert phone.request("skills/list")["skills"] == []
    for method, uri in (
        ("skills/get", "skill://desk/SKILL.md"),
        ("resources/directory/read", "skill://desk/guides"),
        ("resources/read", "skill://desk/SKILL.md"),
        ("resources/read", "skill://desk/guides/RETURNS.md"),
    ):
        error = error_of(phone, method, {"uri": uri})
        assert (error.status, (error.data or {}).get("error")) == (403, "insufficient_scope"), (method, uri)


@pytest.mark.django_db(transaction=True)
def test_file_names_are_percent_encoded_in_uris(tmp_path: Path) -> None:
    server = MCPServer("names")
    server.skill("lending", folder=make_skill(tmp_path, extra={"my notes/été #1?.md": b"accents"}))
    client = MCPTestClient(server)
    (entry,) = client.request("skills/list")["skills"]
    uri = "skill://lending/my%20notes/%C3%A9t%C3%A9%20%231%3F.md"
    assert uri in [r["uri"] for r in entry["resources"]]
    assert client.request("resources/read", {"uri": uri})["contents"][0]["text"] == "accents"
    folder = client.request("resources/directory/read", {"uri": "skill://lending/my%20notes"})["resources"]
    assert [(r["uri"], r["name"]) for r in folder] == [(uri, "été #1?.md")]
