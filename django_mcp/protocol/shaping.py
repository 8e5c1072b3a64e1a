"""Shape a result for the revision a client negotiated.

Results are built once with every feature of the newest revision; each older
client then receives exactly the members its own schema defines. Content blocks
of a kind its revision lacks (``resource_link`` before 2025-06-18, ``audio``
before 2025-03-26) are dropped from the list. The shapes are generated from the
official ``schema.json`` files (see ``_shapes``).
"""

from __future__ import annotations

from typing import Any

from ._shapes import ROOTS, SHAPES
from .versions import ALL_REVISIONS, STATELESS_REVISIONS

_CACHE_KEYS = ("resultType", "ttlMs", "cacheScope")


def _prune(value: Any, shape: Any, defs: dict[str, Any]) -> Any:
    while isinstance(shape, str):
        if shape == "*":
            return value
        shape = defs.get(shape[1:], "*")
    if "o" in shape:
        if not isinstance(value, dict):
            return value
        props = shape["o"]
        return {k: _prune(v, props[k], defs) for k, v in value.items() if k in props}
    if "a" in shape:
        if not isinstance(value, list):
            return value
        inner = shape["a"]
        out = []
        for item in value:
            pruned = _prune(item, inner, defs)
            if pruned is not _DROP:
                out.append(pruned)
        return out
    if "u" in shape:
        if not isinstance(value, dict):
            return value
        branch = shape["u"].get(value.get("type"))
        if branch is None:
            return _DROP
        return _prune(value, branch, defs)
    return value


_DROP: Any = object()


def shape_for(kind: str, revision: str, body: dict[str, Any]) -> dict[str, Any]:
    """Prune ``body`` (a result, or a notification/request's params) for ``revision``.

    ``kind`` is a method name from ``ROOTS``; unknown kinds pass through. The
    newest revisions skip the walk: nothing we build is unknown to them, so only
    the stateless-era members are added or removed.
    """
    if revision in STATELESS_REVISIONS:
        return body
    if revision == ALL_REVISIONS[-2]:
        if any(k in body for k in _CACHE_KEYS):
            body = {k: v for k, v in body.items() if k not in _CACHE_KEYS}
        return body
    root = ROOTS.get(kind)
    defs = SHAPES.get(revision)
    if root is None or defs is None:
        return body
    if kind.startswith(("notifications/", "elicitation/", "sampling/")):
        shape = defs.get(root, "*")
        params_shape = shape["o"].get("params", "*") if isinstance(shape, dict) and "o" in shape else "*"
        return _prune(body, params_shape, defs)  # type: ignore[no-any-return]
    return _prune(body, "#" + root, defs)  # type: ignore[no-any-return]
