"""The caller's language for one request.

HTTP clients say which language they read in ``Accept-Language``; the transport
hands the raw header to the engine, which activates the best supported language
(``LANGUAGES``, with installed translations) while the handler runs, exactly as
``LocaleMiddleware`` does for a view. Without a usable header nothing is
activated and ``LANGUAGE_CODE`` applies. No MCP revision defines a locale in
``_meta``, so the header is the only source.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.conf import settings
from django.utils import translation
from django.utils.translation.trans_real import language_code_re, parse_accept_lang_header


def language_from_header(accept_language: str) -> str | None:
    """The best supported language for an ``Accept-Language`` value, or None (both steps are cached by Django)."""
    for lang, _q in parse_accept_lang_header(accept_language):
        if lang == "*":
            break
        if not language_code_re.search(lang):
            continue
        try:
            return translation.get_supported_language_variant(lang)
        except LookupError:
            continue
    return None


@contextlib.contextmanager
def language(accept_language: str | None) -> Iterator[str | None]:
    """Activate the caller's language (if any) for the duration of the block."""
    code = language_from_header(accept_language) if accept_language and settings.USE_I18N else None
    if code is None:
        yield None
        return
    with translation.override(code):
        yield code


__all__ = ["language", "language_from_header"]
