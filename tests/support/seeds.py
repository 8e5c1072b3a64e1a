"""Data for a live server's database, each a ``manage.py shell -c`` script (``LiveServer.manage``)."""

#: Callers with identities (DRF/view tools, per-user visibility, atomic calls): alice is staff with every drfapp
#: permission, bob a plain user; carol and dave are the throttle test's own callers.
USERS_SETUP = """
from django.contrib.auth.models import Permission, User
from tests.drfapp.models import Item
Item.objects.all().delete()
alice, _ = User.objects.update_or_create(username="alice", defaults={"is_staff": True})
alice.user_permissions.set(Permission.objects.filter(content_type__app_label="drfapp"))
bob, _ = User.objects.update_or_create(username="bob", defaults={"is_staff": False})
bob.user_permissions.clear()
for name in ("carol", "dave"):  # the throttle test's own callers (throttles count per user)
    User.objects.update_or_create(username=name)
"""

#: alice (may view groups, a Reader) and bob (a Reviewer), each signed in: prints their ``sessionid`` cookies as JSON.
SESSIONS_SETUP = """
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import Group, Permission, User
from django.contrib.sessions.backends.db import SessionStore

readers, reviewers, _ = (Group.objects.get_or_create(name=n)[0] for n in ("Readers", "Reviewers", "Staff"))
alice = User.objects.create_user("alice")
alice.user_permissions.add(Permission.objects.get(codename="view_group"))
alice.groups.add(readers)
bob = User.objects.create_user("bob")
bob.groups.add(reviewers)
keys = {}
for user in (alice, bob):
    s = SessionStore()
    s[SESSION_KEY] = str(user.pk)
    s[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    s[HASH_SESSION_KEY] = user.get_session_auth_hash()
    s.create()
    keys[user.username] = s.session_key
print(json.dumps(keys))
"""

#: The ``tests.drfbig`` catalog: publishers, tags and gadgets with fixed ids (the DRF tool tests read them back).
CATALOG_SETUP = """
import datetime
from decimal import Decimal
from tests.drfbig.models import Gadget, Publisher, Tag
Gadget.objects.all().delete(); Publisher.objects.all().delete(); Tag.objects.all().delete()
acme = Publisher.objects.create(id=1, name="Acme", country="fr")
Publisher.objects.create(id=2, name="Globex", country="de")
red, blue = Tag.objects.create(id=1, slug="red-ish"), Tag.objects.create(id=2, slug="blue-ish")
common = dict(code="AB-123", slug="g", uid="12345678-1234-5678-1234-567812345678")
a = Gadget.objects.create(
    id=1, name="Anvil", price=Decimal("9.50"), weight=Decimal("12.250"), status="live", size=2, stock=4,
    email="a@example.com", website="https://example.com/a", ip="10.0.0.1", active=True,
    made_at=datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc), made_on=datetime.date(2025, 1, 2),
    opens=datetime.time(9, 30), warranty=datetime.timedelta(days=365), colours=["red"], labels=["heavy"],
    specs={"kg": 12}, extra={"any": [1, "two"]}, manual="manuals/anvil.pdf", publisher=acme, **common)
a.tags.set([red, blue])
Gadget.objects.create(id=2, name="Rocket", price=Decimal("1500.00"), status="live", active=False, publisher=None,
    extra=[1, 2, 3], **common)
Gadget.objects.create(id=3, name="Magnet", price=Decimal("3.10"), status="draft", size=1, **common)
Gadget.objects.create(id=4, name="Old trap", price=Decimal("20.00"), status="retired", **common)
Gadget.objects.create(id=5, name="Doomed", price=Decimal("1.00"), status="draft", **common)
Gadget.objects.create(id=6, name="Doomed too", price=Decimal("1.00"), status="draft", **common)
# Rows made with explicit ids: PostgreSQL's sequences must move past them before a tool creates one.
from django.core.management.color import no_style
from django.db import connection
with connection.cursor() as cursor:
    for statement in connection.ops.sequence_reset_sql(no_style(), [Gadget, Publisher, Tag]):
        cursor.execute(statement)
"""
