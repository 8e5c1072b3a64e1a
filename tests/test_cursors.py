"""Every paginated list refuses a cursor it did not make with -32602, never -32603 or a logged traceback.

In process, through the one door (``MCPTestClient``), in both eras: ``tools/list``,
``resources/list`` (static resources and ``ModelResource`` objects, one signed cursor),
``resources/templates/list``, ``prompts/list`` and the 2025-11-25 ``tasks/list``, which
hands its offset to a database query (an offset of 10**30 once made it -32603).
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core import signing

from django_mcp import site
from django_mcp.model_resources import encode_cursor
from django_mcp.protocol import cursor
from django_mcp.tasks import EXTENSION
from django_mcp.test import MCPClientError, MCPTestClient

KINDS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "templates",
    "prompts/list": "prompts",
    "tasks/list": "tasks",
}


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def forged(kind: str) -> list[Any]:
    """Cursors a client could send: well-formed for ``kind`` but out of range or of the wrong type, and junk."""
    made = [
        cursor.encode(10**30, kind),  # past any database's OFFSET
        cursor.encode(2**63, kind),
        cursor.encode(-1, kind),
        b64(json.dumps([kind, True]).encode()),  # a bool is no offset
        b64(json.dumps([kind, 1.5]).encode()),
        b64(json.dumps([kind, "10"]).encode()),
        b64(json.dumps([kind, None]).encode()),
        b64(json.dumps([kind, 1, 2]).encode()),
        b64(json.dumps({kind: 1}).encode()),
        b64(json.dumps(kind).encode()),
        b64(("[" * 5000).encode()),  # nesting deep enough to exhaust a recursive decoder
        b64(f'["{kind}", {"9" * 5000}]'.encode()),  # more digits than int() takes
        b64(b"\xff\xfe"),  # not UTF-8
        cursor.encode(0, "elsewhere"),  # another list's cursor
        "!!!",
        "a",
        "",
        "x" * 100_000,
    ]
    wrong_types: list[Any] = [7, -1, 10**30, 1.5, True, [], ["tools", 0], {}, {"offset": 0}]
    return made + wrong_types


def client(revision: str, user: Any = None) -> MCPTestClient:
    made = MCPTestClient(site, protocol_version=revision, capabilities={"extensions": {EXTENSION: {}}})
    if user is not None:
        made.force_authenticate(user)
    return made


def refused(c: MCPTestClient, method: str, value: Any) -> MCPClientError:
    with pytest.raises(MCPClientError) as caught:
        c.request(method, {"cursor": value})
    return caught.value


#: Every list of each era (2026-07-28 has no ``tasks/list``).
LISTS = [(r, m) for r in ("2025-11-25", "2026-07-28") for m in KINDS if (r, m) != ("2026-07-28", "tasks/list")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("revision", "method"), LISTS)
def test_every_list_refuses_forged_cursors_as_invalid_params(
    revision: str, method: str, caplog: pytest.LogCaptureFixture
) -> None:
    c = client(revision)
    kind = KINDS[method]
    caplog.set_level(logging.INFO, logger="django_mcp")
    first = c.request(method)  # the list itself answers
    assert isinstance(first, dict)
    for value in forged(kind):
        error = refused(c, method, value)
        assert error.code == -32602, (value if len(str(value)) < 80 else str(value)[:80], error)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_cursor_this_server_made_still_pages() -> None:
    """The refusals leave real cursors working: the largest offset a cursor may carry is an empty page."""
    c = client("2025-11-25")
    for method, kind in KINDS.items():
        if method == "resources/list":
            continue  # signed cursors of its own (below)
        page = c.request(method, {"cursor": cursor.encode(cursor.MAX_OFFSET, kind)})
        listed = page[
            {"tools": "tools", "templates": "resourceTemplates", "prompts": "prompts", "tasks": "tasks"}[kind]
        ]
        assert listed == [] and "nextCursor" not in page, (method, page)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_model_resource_list_refuses_cursors_it_did_not_sign(revision: str, caplog: pytest.LogCaptureFixture) -> None:
    """``resources/list`` pages through ModelResource objects with a signed cursor: unsigned or misfit ones are -32602.

    Misfit: a cursor this server signed for another list of sources (the caller's visible resources changed
    between two pages) can hold a key of another type for the source it now names.
    """
    reader = User.objects.create_user("reader", is_staff=True)
    reader.user_permissions.set(
        Permission.objects.filter(codename__startswith="view_", content_type__app_label="modelapp")
    )
    reader = User.objects.get(pk=reader.pk)
    c = client(revision, reader)
    caplog.set_level(logging.INFO, logger="django_mcp")
    assert c.request("resources/list")["resources"] is not None
    signed_misfits = [
        encode_cursor(1, "not-a-key"),  # a string key for a model whose keys are integers
        encode_cursor(1, [1]),
        encode_cursor(1, {"pk": 1}),
        signing.dumps([True, None], salt="django_mcp.resources.cursor", compress=True),  # a bool is no source
        signing.dumps(["1", None], salt="django_mcp.resources.cursor", compress=True),
        signing.dumps("x", salt="django_mcp.resources.cursor", compress=True),
        signing.dumps([1], salt="django_mcp.resources.cursor", compress=True),
    ]
    unsigned = [
        encode_cursor(1, 0)[:-3] + "abc",  # tampered signature
        signing.dumps([1, 0], salt="another.salt"),
        cursor.encode(0, "resources"),  # the other lists' kind of cursor
    ]
    for value in [*signed_misfits, *unsigned, *forged("resources")]:
        error = refused(c, "resources/list", value)
        assert error.code == -32602, (str(value)[:80], error)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], caplog.text
    # A cursor it made still pages on.
    assert c.request("resources/list", {"cursor": encode_cursor(1, None)})["resources"] is not None
