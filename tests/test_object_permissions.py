"""ModelResource with real object-permission backends through a live server and the official SDK client.

``tests.settings.settings_objperm`` next to Django's ``ModelBackend`` configures django-guardian's backend (per-object
grants in its tables) or django-rules' (a predicate: "view_ledger" for everyone without an object, each
ledger for its owner only). Alice owns ledgers 1-3 and bob 4-6, each with the grants; carol holds
``view_ledger`` model-wide; dave nothing. Every path a caller reads objects through is attacked:
``resources/list``, ``resources/read``, ``completion/complete``, ``resources/subscribe`` and the ``.ui``
show tool. Also: a model with custom fields whose values are not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest
from django.contrib.auth.backends import BaseBackend
from django.test import override_settings
from mcp.shared.exceptions import MCPError

from tests.support.callers import all_resources, client, read_error
from tests.support.servers import LiveServer, server_env, start_server

pytestmark = pytest.mark.filterwarnings("ignore:resources/subscribe is removed")

LEDGER = "django://objpermapp/ledger/{pk}"
GADGET = "django://objpermapp/gadget/{pk}"
REF = types.ResourceTemplateReference(type="ref/resource", uri=LEDGER)

SETUP = """
import json
from django.contrib.auth.models import Permission, User
from guardian.shortcuts import assign_perm
from tests.objpermapp.models import Gadget, Ledger, Opaque, Point

alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
carol, dave = User.objects.create_user("carol"), User.objects.create_user("dave")
carol.user_permissions.set(Permission.objects.filter(content_type__app_label="objpermapp", codename__startswith="v"))
owners = [alice] * 3 + [bob] * 3
ledgers = [Ledger.objects.create(name=f"Ledger {'ABCDEF'[i]} of {o.username}", owner=o) for i, o in enumerate(owners)]
for ledger in ledgers:
    assign_perm("objpermapp.view_ledger", ledger.owner, ledger)
compass = Gadget.objects.create(name="Compass", spot=Point(1, 2))
riddle = Gadget.objects.create(name="Riddle", spot=Point(3, 4), odd=Opaque("x"))
mine = {"alice": [x.pk for x in ledgers[:3]], "bob": [x.pk for x in ledgers[3:]]}
print(json.dumps({**mine, "gadgets": [compass.pk, riddle.pk]}))
"""


@pytest.fixture(scope="module", params=["guardian", "rules"])
def live(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Any]]:
    tmp = tmp_path_factory.mktemp(f"objperm-{request.param}")
    env = server_env(tmp, settings="tests.settings.settings_objperm", MCP_OBJPERM_BACKEND=request.param)
    server = start_server(env, tmp / "daphne.log", app="tests.settings.asgi_users:application")
    pks = json.loads(server.manage("shell", "-c", SETUP).splitlines()[-1])
    yield server, pks
    server.stop()
    log = (tmp / "daphne.log").read_text(errors="replace")
    assert "Traceback" not in log and " 500 " not in log, log


def ledger(pk: Any) -> str:
    return LEDGER.format(pk=pk)


async def ledgers_listed(c: Any) -> set[str]:
    return {r.uri for r in await all_resources(c) if r.uri.startswith("django://objpermapp/ledger/")}


@pytest.mark.version_independent  # through the network: this package's logic, on any Django
@pytest.mark.parametrize("me, them", [("alice", "bob"), ("bob", "alice")])
async def test_each_user_reaches_only_their_granted_objects(live: Any, me: str, them: str) -> None:
    """Lists, reads, completions, subscriptions and the show tool: the other tenant's ledgers do not exist."""
    server, pks = live
    mine, theirs = pks[me], pks[them]
    async with client(server.url, "legacy", me) as c, client(server.url, "legacy", them) as other:
        templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
        assert LEDGER in templates
        assert await ledgers_listed(c) == {ledger(pk) for pk in mine}
        assert await ledgers_listed(other) == {ledger(pk) for pk in theirs}  # two clients at once, each its own

        got = json.loads((await c.read_resource(ledger(mine[0]))).contents[0].text)  # type: ignore[union-attr]
        assert got["name"].endswith(f"of {me}")
        missing = await read_error(c, ledger(999999))
        for pk in theirs:  # another tenant's ledger answers exactly as one that does not exist
            err = await read_error(c, ledger(pk))
            assert (err.error.code, err.error.message, err.error.data) == (
                missing.error.code,
                f"Resource not found: {ledger(pk)}",
                {"uri": ledger(pk)},
            )

        every = (await c.complete(REF, {"name": "pk", "value": ""})).completion
        assert sorted(every.values) == sorted(str(pk) for pk in mine) and every.total == 3
        searched = (await c.complete(REF, {"name": "pk", "value": "Ledger"})).completion
        assert sorted(searched.values) == sorted(str(pk) for pk in mine)
        for pk in theirs:
            assert (await c.complete(REF, {"name": "pk", "value": str(pk)})).completion.values == []

        await c.subscribe_resource(ledger(mine[0]))
        with pytest.raises(MCPError) as info:
            await c.subscribe_resource(ledger(theirs[0]))
        assert info.value.error.code == missing.error.code

        tools = {t.name for t in (await c.list_tools()).tools}
        assert "show_ledger" in tools
        shown = await c.call_tool("show_ledger", {"pk": mine[1]})
        read = json.loads((await c.read_resource(ledger(mine[1]))).contents[0].text)  # type: ignore[union-attr]
        assert not shown.is_error and shown.structured_content == read and read["name"].endswith(f"of {me}")
        refused = await c.call_tool("show_ledger", {"pk": theirs[0]})
        unknown = await c.call_tool("show_ledger", {"pk": 999999})
        assert refused.is_error and unknown.is_error
        assert refused.content[0].text == f"No ledger with {{'pk': '{theirs[0]}'}}"  # type: ignore[union-attr]
        assert unknown.content[0].text == "No ledger with {'pk': '999999'}"  # type: ignore[union-attr]


@pytest.mark.version_independent  # through the network: this package's logic, on any Django
async def test_global_permission_sees_all_and_no_grant_sees_nothing(live: Any) -> None:
    server, pks = live
    everything = {ledger(pk) for pk in pks["alice"] + pks["bob"]}
    async with client(server.url, "legacy", "carol") as carol, client(server.url, "legacy", "dave") as dave:
        assert await ledgers_listed(carol) == everything  # the model-wide grant of ModelBackend opens every object
        assert (await carol.call_tool("show_ledger", {"pk": pks["bob"][0]})).is_error is False
        assert await ledgers_listed(dave) == set()
        for pk in pks["alice"][:1] + pks["bob"][:1]:
            err = await read_error(dave, ledger(pk))
            assert err.error.message == f"Resource not found: {ledger(pk)}"
        # The template itself: hidden where no backend says "some objects" (guardian), shown but empty (rules).
        if LEDGER in [t.uri_template for t in (await dave.list_resource_templates()).resource_templates]:
            assert (await dave.complete(REF, {"name": "pk", "value": ""})).completion.values == []
        else:
            with pytest.raises(MCPError, match="Unknown resource template"):
                await dave.complete(REF, {"name": "pk", "value": ""})


@pytest.mark.version_independent  # through the network: this package's logic, on any Django
async def test_non_json_field_values(live: Any) -> None:
    """A custom field's value is its string form; one without any is a precise error naming the field."""
    server, pks = live
    compass, riddle = pks["gadgets"]
    async with client(server.url, "legacy", "carol") as c:
        got = json.loads((await c.read_resource(GADGET.format(pk=compass))).contents[0].text)  # type: ignore[union-attr]
        assert got == {"id": compass, "name": "Compass", "spot": "POINT(1 2)", "odd": None}
        with pytest.raises(MCPError) as info:
            await c.read_resource(GADGET.format(pk=riddle))
        assert info.value.error.code == -32603
        assert "'odd' of objpermapp.Gadget cannot be serialized" in info.value.error.message
        assert info.value.error.data == {"field": "odd", "model": "objpermapp.Gadget"}


@pytest.mark.django_db
def test_a_page_examines_a_bounded_number_of_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked object by object, a page stops after MAX_SCAN rows with a cursor, however few it found."""
    from django.contrib.auth.models import AnonymousUser

    from django_mcp import ModelResource, model_resources
    from tests.modelapp.models import Shelf

    class RareShelves(ModelResource):
        model = Shelf
        object_permissions = True

        def has_permission(self, ctx: Any, obj: Any = None) -> bool:
            return obj is None or obj.name.endswith("7")

    Shelf.objects.bulk_create(Shelf(name=f"Shelf {i:02d}") for i in range(40))
    monkeypatch.setattr(model_resources, "MAX_SCAN", 15)
    resource, ctx = RareShelves(), SimpleNamespace(user=AnonymousUser())
    items, after, done = resource.page(ctx, None, 10)  # type: ignore[arg-type]
    assert [i["name"] for i in items] == ["Shelf 07"] and not done
    items, after, done = resource.page(ctx, after, 10)  # type: ignore[arg-type]
    assert [i["name"] for i in items] == ["Shelf 17", "Shelf 27"] and not done
    items, after, done = resource.page(ctx, after, 10)  # type: ignore[arg-type]
    assert [i["name"] for i in items] == ["Shelf 37"] and done


class SignInOnly(BaseBackend):
    """Signs users in, grants nothing (BaseBackend's permission methods answer from empty sets)."""


class TenantBackend(BaseBackend):
    def has_perm(self, user_obj: Any, perm: str, obj: Any = None) -> bool:
        return False


MODEL = "django.contrib.auth.backends.ModelBackend"
GUARDIAN = "guardian.backends.ObjectPermissionBackend"
RULES = "rules.permissions.ObjectPermissionBackend"


@pytest.mark.parametrize(
    "backends, on, guardian_alone",
    [
        ([MODEL], False, False),
        ([MODEL, GUARDIAN], True, True),
        ([MODEL, GUARDIAN, f"{__name__}.SignInOnly"], True, True),
        ([MODEL, GUARDIAN, RULES], True, False),
        ([MODEL, GUARDIAN, f"{__name__}.TenantBackend"], True, False),
        ([MODEL, RULES], True, False),
        ([MODEL, f"{__name__}.TenantBackend"], False, False),  # a project's own: object_permissions = True
    ],
)
def test_which_backends_turn_object_permissions_on(backends: list[str], on: bool, guardian_alone: bool) -> None:
    """Guardian narrows the queryset only where no other backend could grant what its tables do not hold."""
    from django_mcp.model_resources import object_backends

    with override_settings(AUTHENTICATION_BACKENDS=backends):
        known, alone = object_backends()
    assert (bool(known), alone) == (on, guardian_alone)
