"""Forms whose fields become prompt arguments."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import Group
from django.utils.translation import gettext_lazy as _


class ReviewForm(forms.Form):
    book = forms.CharField(label=_("Book"), help_text=_("The title of the book to review."))
    tone = forms.ChoiceField(
        choices=[("friendly", "Friendly"), ("critical", "Critical"), ("academic", "Scholarly")],
        required=False,
        initial="friendly",
        help_text="How the review should sound.",
    )
    words = forms.IntegerField(min_value=50, max_value=1000, required=False, initial=200)
    club = forms.ModelChoiceField(queryset=Group.objects.all(), to_field_name="name", required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("tone") == "critical" and data.get("words") and data["words"] < 100:
            raise forms.ValidationError("A critical review needs at least 100 words.", code="too_short")
        return data


class OwnGroupForm(forms.Form):
    """A form whose queryset depends on the caller: completion must only offer the caller's groups."""

    club = forms.ModelChoiceField(queryset=Group.objects.none(), to_field_name="name")

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["club"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = (
            Group.objects.filter(user=user) if user is not None and user.is_authenticated else Group.objects.none()
        )
