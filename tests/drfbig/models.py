from __future__ import annotations

import uuid

from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models


class Publisher(models.Model):
    name = models.CharField(max_length=80, help_text="Trading name of the publisher.")
    country = models.CharField(max_length=2, choices=[("fr", "France"), ("de", "Germany"), ("gb", "United Kingdom")])

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name


class Tag(models.Model):
    slug = models.SlugField(unique=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.slug


class Gadget(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        LIVE = "live", "Live"
        RETIRED = "retired", "Retired"

    class Size(models.IntegerChoices):
        SMALL = 1, "Small"
        LARGE = 2, "Large"

    name = models.CharField(max_length=60, help_text="What the gadget is called.")
    # Python-only anchors (\A ... \Z) and a named group: published as ECMA-262.
    code = models.CharField(
        max_length=6, validators=[RegexValidator(r"\A(?P<family>[A-Z]{2})-\d{3}\Z", "Two capitals, a dash, 3 digits.")]
    )
    slug = models.SlugField(max_length=40)
    email = models.EmailField(blank=True)
    website = models.URLField(blank=True)
    uid = models.UUIDField(default=uuid.uuid4)
    ip = models.GenericIPAddressField(null=True, blank=True)
    stock = models.IntegerField(default=0, validators=[MinValueValidator(0), MaxValueValidator(10_000)])
    ratio = models.FloatField(default=0.5)
    price = models.DecimalField(max_digits=7, decimal_places=2, validators=[MinValueValidator(0)])
    weight = models.DecimalField(max_digits=6, decimal_places=3, null=True, blank=True)
    active = models.BooleanField(default=True)
    made_at = models.DateTimeField(null=True, blank=True)
    made_on = models.DateField(null=True, blank=True)
    opens = models.TimeField(null=True, blank=True)
    warranty = models.DurationField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    size = models.IntegerField(choices=Size.choices, default=Size.SMALL)
    colours = models.JSONField(default=list, blank=True)
    labels = models.JSONField(default=list, blank=True)
    specs = models.JSONField(default=dict, blank=True)
    extra = models.JSONField(null=True, blank=True)
    manual = models.FileField(upload_to="manuals/", blank=True)
    photo = models.FileField(upload_to="photos/", blank=True)
    origin = models.CharField(max_length=20, default="", blank=True)
    publisher = models.ForeignKey(Publisher, null=True, blank=True, on_delete=models.SET_NULL, related_name="gadgets")
    tags = models.ManyToManyField(Tag, blank=True, related_name="gadgets")

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name
