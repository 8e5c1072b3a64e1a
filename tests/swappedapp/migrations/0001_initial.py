"""DOT's three token models, swapped into this app (generated, then pointed at DOT's resolved settings)."""

import uuid

import django.db.models.deletion
import oauth2_provider.models
from django.conf import settings
from django.db import migrations, models
from oauth2_provider.settings import oauth2_settings


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        migrations.swappable_dependency(oauth2_settings.APPLICATION_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="LibraryCardIDToken",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("jti", models.UUIDField(default=uuid.uuid4, editable=False, unique=True, verbose_name="JWT Token ID")),
                ("expires", models.DateTimeField(verbose_name="expires")),
                ("scope", models.TextField(blank=True, verbose_name="scope")),
                ("created", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("updated", models.DateTimeField(auto_now=True, verbose_name="updated")),
                (
                    "application",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        to=oauth2_settings.APPLICATION_MODEL,
                        verbose_name="application",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="%(app_label)s_%(class)s",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "abstract": False,
                "swappable": "OAUTH2_PROVIDER_ID_TOKEN_MODEL",
            },
        ),
        migrations.CreateModel(
            name="LibraryCardRefreshToken",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("token", models.TextField(verbose_name="token")),
                (
                    "token_checksum",
                    oauth2_provider.models.TokenChecksumField(max_length=64, verbose_name="token checksum"),
                ),
                ("token_family", models.UUIDField(blank=True, editable=False, null=True, verbose_name="token family")),
                (
                    "resource",
                    oauth2_provider.models.ResourceJSONField(blank=True, default=list, verbose_name="resource"),
                ),
                ("created", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("updated", models.DateTimeField(auto_now=True, verbose_name="updated")),
                ("revoked", models.DateTimeField(null=True, verbose_name="revoked")),
                (
                    "application",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        to=oauth2_settings.APPLICATION_MODEL,
                        verbose_name="application",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="%(app_label)s_%(class)s",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "abstract": False,
                "swappable": "OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL",
            },
        ),
        migrations.CreateModel(
            name="LibraryCardToken",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("token", models.TextField(verbose_name="token")),
                (
                    "token_checksum",
                    oauth2_provider.models.TokenChecksumField(
                        db_index=True, max_length=64, unique=True, verbose_name="token checksum"
                    ),
                ),
                ("expires", models.DateTimeField(verbose_name="expires")),
                ("scope", models.TextField(blank=True, verbose_name="scope")),
                (
                    "resource",
                    oauth2_provider.models.ResourceJSONField(blank=True, default=list, verbose_name="resource"),
                ),
                ("created", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                ("updated", models.DateTimeField(auto_now=True, verbose_name="updated")),
                ("card_number", models.CharField(blank=True, default="", max_length=20)),
                (
                    "application",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        to=oauth2_settings.APPLICATION_MODEL,
                        verbose_name="application",
                    ),
                ),
                (
                    "id_token",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="access_token",
                        to=oauth2_settings.ID_TOKEN_MODEL,
                        verbose_name="ID token",
                    ),
                ),
                (
                    "source_refresh_token",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="refreshed_access_token",
                        to=oauth2_settings.REFRESH_TOKEN_MODEL,
                        verbose_name="source refresh token",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="%(app_label)s_%(class)s",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "abstract": False,
                "swappable": "OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL",
            },
        ),
        migrations.AddField(
            model_name="librarycardrefreshtoken",
            name="access_token",
            field=models.OneToOneField(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="refresh_token",
                to=oauth2_settings.ACCESS_TOKEN_MODEL,
                verbose_name="access token",
            ),
        ),
        migrations.AddIndex(
            model_name="librarycardrefreshtoken",
            index=models.Index(fields=["token_family"], name="swappedapp__token_f_5f0537_idx"),
        ),
        migrations.AlterUniqueTogether(
            name="librarycardrefreshtoken",
            unique_together={("token_checksum", "revoked")},
        ),
    ]
