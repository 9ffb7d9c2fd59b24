"""'Did you mean' hints for unknown names, as ClickHouse's NamePrompter gives them.

ClickHouse (``src/Common/NamePrompter.h``, after Clang's typo corrector)
compares names case-insensitively by Levenshtein distance and offers those
within ``(len(name) + 2) // 3`` edits, closest first, at most two.
"""
from __future__ import annotations

from typing import Iterable

__all__ = ["levenshtein", "similar_names", "did_you_mean"]


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute one character)."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def similar_names(name: str, known: Iterable[str], limit: int = 2) -> list[str]:
    """The known names a mistyped `name` most likely meant (closest first)."""
    low = name.lower()
    factor = (len(name) + 2) // 3
    scored = []
    for k in dict.fromkeys(known):
        if k == name:
            continue
        gap = abs(len(k) - len(name))
        if gap > 0 and len(name) // gap < 3:
            continue
        if len(k) <= len(name) + factor and len(k) + factor >= len(name):
            d = levenshtein(k.lower(), low)
            if d <= factor:
                scored.append((d, k))
    scored.sort(key=lambda x: (x[0], x[1]))
    return [k for _, k in scored[:limit]]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; maybe you meant 'x'"`` (or two names), or '' when nothing is close."""
    names = similar_names(name, known)
    if not names:
        return ""
    return "; maybe you meant " + " or ".join(f"'{n}'" for n in names)
