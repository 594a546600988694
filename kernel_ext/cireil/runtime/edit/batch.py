"""A batch of edits against one text: resolve every edit on the original, refuse overlaps, splice once."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from ..base.errors import ToolError
from . import near as near_mod
from . import tiers
from .reindent import carry_counts, replacement
from .text import Lines, snippet_lines


@dataclass(frozen=True)
class Site:
    edit_index: int
    match: tiers.Match
    text: str  # what replaces the matched span


@dataclass(frozen=True)
class Outcome:
    new_text: str
    sites: list[Site]
    metadata: list[dict[str, int]]

    def new_bytes(self, original: bytes, front: str, encoding: str, errors: str) -> bytes:
        """The edited file as bytes, `front` (the frontmatter kept before the body) included.

        In an ASCII file str offsets are byte offsets, so only the replacement texts are encoded and
        spliced into the original bytes; any other file is encoded whole."""
        if not original.isascii():
            return (front + self.new_text).encode(encoding, errors)
        offset = len(front)
        pieces, pos = [], 0
        for s in self.sites:
            pieces += [original[pos : offset + s.match.start], s.text.encode(encoding, errors)]
            pos = offset + s.match.end
        pieces.append(original[pos:])
        return b"".join(pieces)

    def spans(self) -> list[tuple[int, int, int, int]]:
        """Where the body changed, as (old start, old end, new start, new end): what the diffs start from."""
        out, delta = [], 0
        for s in self.sites:
            start = s.match.start + delta
            out.append((s.match.start, s.match.end, start, start + len(s.text)))
            delta += len(s.text) - (s.match.end - s.match.start)
        return out


def _context(body: str) -> str:
    return "\n\nContext:\n" + body[:500] + ("..." if len(body) > 500 else "")


def _marked(lines: Lines, matches: list[tiers.Match]) -> str:
    """Each candidate's line with two lines either side, the match bracketed by >>> and <<<."""
    blocks = []
    for m in matches:
        first, last = lines.line_of(m.start), lines.line_of(max(m.start, m.end - 1))
        out = []
        for n in range(max(1, first - 2), min(lines.count, last + 2) + 1):
            text = lines.content(n)
            if n == last:
                col = min(len(text), m.end - lines.start(n))
                text = text[:col] + "<<<" + text[col:]
            if n == first:
                text = text[: m.start - lines.start(n)] + ">>>" + text[m.start - lines.start(n) :]
            out.append(f"  line {n}: {text}")
        blocks.append("\n".join(out))
    return "\n\n".join(blocks)


def _already_there(body: str, lines: Lines, new: str) -> str:
    if not new.strip():
        return ""
    hits = tiers.find(body, new)
    if not hits:
        return ""
    where = ", ".join(str(lines.line_of(m.start)) for m in hits[:5])
    return (
        f" Its newText is already present (line {where}): the edit may already have been applied; "
        "read the file again before retrying."
    )


def _not_found(index: int, body: str, lines: Lines, edit: dict, window: near_mod.Window | None) -> ToolError:
    where = f"edits[{index}]"
    present = _already_there(body, lines, edit["newText"])
    if window is None:
        return ToolError(f"Could not find {where} in the file.{present}{_context(body)}")
    a, b = window.ranges[0]
    excerpt = "\n".join(lines.content(n) for n in range(a, b + 1))
    if window.landmark is not None and window.radius is not None:
        head = (
            f'Found "near" for {where} at line {window.landmark}, but "oldText" was not found within '
            f"{window.radius} lines of it."
        )
    else:
        head = f'Found "near" anchor for {where}, but "oldText" was not found within the resulting window.'
    return ToolError(f"{head}{present}\n\nContext:\n{excerpt}")


def resolve_edit(index: int, edit: dict[str, Any], body: str, lines: Lines, path: str) -> list[tiers.Match]:
    old = edit["oldText"]
    where = f"edits[{index}]"
    if not old.strip():
        raise ToolError(f"{where}.oldText must not be empty or whitespace-only in {path}.")
    window = near_mod.resolve(edit.get("near"), body, lines, where)
    matches = tiers.find(body, old) if window is None else tiers.find_in(body, old, window.spans(lines))
    if not matches:
        raise _not_found(index, body, lines, edit, window)
    if len(matches) > 1 and not edit.get("all"):
        raise ToolError(
            f'Found {len(matches)} matches for {where}. Set "all: true" to replace all, add "near" to target a '
            f"specific one, or make oldText more specific.\n\nContext:\n{_marked(lines, matches)}"
        )
    return matches


def apply_edits(body: str, edits: list[dict[str, Any]], path: str) -> Outcome:
    """Resolve all edits on the original body; raises ToolError for anything it will not do."""
    lines = Lines(body)
    sites: list[Site] = []
    for index, edit in enumerate(edits):
        if edit["oldText"] == edit["newText"]:
            continue  # nothing to do; if every edit is like this the batch reports no change
        for m in resolve_edit(index, edit, body, lines, path):
            sites.append(Site(index, m, replacement(body, m, edit["oldText"], edit["newText"])))
    sites.sort(key=lambda s: (s.match.start, s.match.end))
    for a, b in pairwise(sites):
        if a.match.end > b.match.start:
            raise ToolError(
                f"edits[{a.edit_index}] and edits[{b.edit_index}] overlap in {path}. "
                "Merge them into one edit or target disjoint regions."
            )
    pieces, pos = [], 0
    for s in sites:
        pieces += [body[pos : s.match.start], s.text]
        pos = s.match.end
    new_body = "".join(pieces) + body[pos:]
    if new_body == body:
        raise ToolError(f"No changes made to {path}. The replacements produced identical content.")
    outcome = Outcome(new_body, sites, _metadata(body, lines, sites))
    carry_counts(body, new_body, outcome.spans())
    return outcome


def _metadata(body: str, lines: Lines, sites: list[Site]) -> list[dict[str, int]]:
    out, delta = [], 0
    for s in sites:
        replaced = snippet_lines(body[s.match.start : s.match.end])
        added = snippet_lines(s.text)
        start = lines.line_of(s.match.start) + delta
        out.append(
            {
                "editIndex": s.edit_index,
                "endLine": start + max(0, added - 1),
                "newLines": added,
                "replacedLines": replaced,
                "startLine": start,
            }
        )
        delta += added - replaced
    return out
