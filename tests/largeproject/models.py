"""The project's own user model: no ``is_staff`` (nor ``first_name``...), as many large projects have it."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models


class PersonManager(BaseUserManager["Person"]):
    def create_user(self, username: str, password: str | None = None, **extra: Any) -> Person:
        user = self.model(username=username, **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user


class Person(AbstractBaseUser, PermissionsMixin):
    username = models.CharField(max_length=150, unique=True)
    is_active = models.BooleanField(default=True)

    USERNAME_FIELD = "username"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    objects = PersonManager()

    def __str__(self) -> str:
        return self.username
