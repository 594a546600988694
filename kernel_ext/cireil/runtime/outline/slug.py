"""Section ids: short, stable, unique within a file."""

from __future__ import annotations

import re

# Unicode-aware on purpose: the upstream ASCII-only rule turns "Über uns" into "ber-uns" and a
# heading in any non-Latin script into an empty id nobody can pass to open-file.
_SEPARATORS = re.compile(r"[\W_]+")


def to_slug(label: str) -> str:
    """lowercase, trim, every run of non-alphanumeric characters becomes '-', no '-' at either end."""
    return _SEPARATORS.sub("-", label.strip().lower()).strip("-")


def unique_ids(slugs: list[str]) -> list[str]:
    """`x`, `x-1`, `x-2` for repeats; a generated id never collides with a literal one either.

    Each base remembers the last number it gave out: ids are only ever added, so the first free
    number never goes down, and 10,000 equal headings cost 10,000 steps instead of 50 million."""
    seen: set[str] = set()
    last: dict[str, int] = {}
    out: list[str] = []
    for slug in slugs:
        base = slug or "section"
        n = last.get(base, 0)
        candidate = f"{base}-{n}" if n else base
        while candidate in seen:
            n += 1
            candidate = f"{base}-{n}"
        last[base] = n
        seen.add(candidate)
        out.append(candidate)
    return out
