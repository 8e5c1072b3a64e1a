"""1,000 items, each with a publisher (the foreign key both sides ``select_related``)."""

from __future__ import annotations

from django.db import models


class Publisher(models.Model):
    name = models.CharField(max_length=100)

    def __str__(self) -> str:
        return self.name


class Item(models.Model):
    title = models.CharField(max_length=200)
    publisher = models.ForeignKey(Publisher, on_delete=models.CASCADE, related_name="items")
    isbn = models.CharField(max_length=13)
    published = models.DateField()
    price = models.DecimalField(max_digits=8, decimal_places=2)
    pages = models.PositiveIntegerField()
    in_stock = models.BooleanField(default=True)

    def __str__(self) -> str:
        return f"{self.title} ({self.publisher.name})"  # needs the join: select_related on both sides
