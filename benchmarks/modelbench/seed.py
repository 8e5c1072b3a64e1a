"""Fill the benchmark database: 20 publishers, 1,000 items (idempotent)."""

from __future__ import annotations

import datetime
from decimal import Decimal

from .models import Item, Publisher

ITEMS = 1000


def main() -> None:
    if Item.objects.count() == ITEMS:
        return
    Item.objects.all().delete()
    Publisher.objects.all().delete()
    publishers = Publisher.objects.bulk_create(Publisher(name=f"Publisher {i}") for i in range(20))
    Item.objects.bulk_create(
        Item(
            title=f"Item number {i}",
            publisher=publishers[i % len(publishers)],
            isbn=f"978{i:010d}",
            published=datetime.date(2000, 1, 1) + datetime.timedelta(days=i),
            price=Decimal(f"{10 + i % 90}.{i % 100:02d}"),
            pages=100 + i,
            in_stock=i % 3 != 0,
        )
        for i in range(ITEMS)
    )
