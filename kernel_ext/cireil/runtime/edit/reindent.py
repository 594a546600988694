"""The text that replaces a matched span, in the file's own style.

An exact match is replaced by newText as given (line endings aside). A forgiving match means the
model's whitespace differs from the file's, so newText is translated: lines newText keeps from
oldText are copied from the file byte for byte, other lines get the file's indentation (same offset
from the matched lines, the file's tabs or spaces), and line breaks follow the file.
"""

from __future__ import annotations

import re
from collections import Counter
from difflib import SequenceMatcher
from functools import lru_cache
from itertools import pairwise

from .diffs import common_prefix, common_suffix
from .text import to_eol, uses_crlf
from .tiers import EXACT, Match


def _lead(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _key(line: str) -> tuple[str, str]:
    return (_lead(line) if line.strip() else "", " ".join(line.split()))


def _space_step(leads: list[str], fallback: int) -> int:
    """The indentation step of space-indented lines: the smallest gap between their depths."""
    depths = sorted({len(w) for w in leads if "\t" not in w})
    gaps = [b - a for a, b in pairwise(depths) if b > a]
    step = min(gaps) if gaps else fallback
    return step if 2 <= step <= 8 else fallback


_FIRST_LEAD = re.compile(r"([ \t]+)\S")  # the indentation of the first line, if it has one
_NEXT_LEADS = re.compile(r"\n([ \t]+)\S")  # of every later line


def _counted(text: str, start: int, end: int) -> Counter[str]:
    """Indentations of the lines that begin in [start, end): `start` is 0 or a line break, `end` a
    line break or the end of the text, so every line counted lies inside."""
    counts = Counter(_NEXT_LEADS.findall(text, start, end))
    if start == 0:
        first = _FIRST_LEAD.match(text, 0, end)
        if first is not None:
            counts[first.group(1)] += 1
    return counts


# The last text whose indentations were counted. An agent edits one file again and again, and each
# edit changes a few lines: the next count starts from this one and recounts only those lines.
_last_counted: tuple[str, Counter[str]] | None = None


def _lead_counts(text: str) -> Counter[str]:
    """How many lines have each indentation (leading spaces and tabs before a non-space)."""
    global _last_counted
    last = _last_counted  # one read: another thread may replace it meanwhile, never change it
    if last is not None and last[0] is text:
        return last[1]
    if last is None or last[0] == text:
        counts = last[1] if last is not None else _counted(text, 0, len(text))
    else:
        old, known = last
        same_start = common_prefix(old, text)
        same_end = common_suffix(old, text, min(len(old), len(text)) - same_start)
        start = max(0, old.rfind("\n", 0, same_start))  # the break before the first line that changed
        old_end, new_end = old.find("\n", len(old) - same_end), text.find("\n", len(text) - same_end)
        old_end = len(old) if old_end < 0 else old_end
        new_end = len(text) if new_end < 0 else new_end
        counts = known.copy()
        counts.subtract(_counted(old, start, old_end))
        counts.update(_counted(text, start, new_end))
        counts = +counts  # drops the indentations no line has any more
    _last_counted = (text, counts)
    return counts


def carry_counts(old: str, new: str, spans: list[tuple[int, int, int, int]]) -> None:
    """After an edit turned `old` into `new` (at `spans`: old start, old end, new start, new end),
    keep the indentation counts current if they were `old`'s: the next edit of the file starts
    from `new`, and between two re-indented edits there may be others, anywhere in the file."""
    global _last_counted
    last = _last_counted
    if last is None or not (last[0] is old or last[0] == old):
        return
    regions: list[list[int]] = []  # [old start, old end, new start, new end] of the lines touched
    for os_, oe, ns, ne in sorted(spans):
        old_start = max(0, old.rfind("\n", 0, os_))
        old_end, new_end = old.find("\n", oe), new.find("\n", ne)
        old_end = len(old) if old_end < 0 else old_end
        new_end = len(new) if new_end < 0 else new_end
        if regions and old_start < regions[-1][1]:  # shares a line with the previous place
            regions[-1][1], regions[-1][3] = old_end, new_end
        else:
            regions.append([old_start, old_end, old_start + ns - os_, new_end])
    counts = last[1].copy()
    for old_start, old_end, new_start, new_end in regions:
        counts.subtract(_counted(old, old_start, old_end))
        counts.update(_counted(new, new_start, new_end))
    _last_counted = (new, +counts)


def file_style(text: str) -> tuple[bool, int]:
    """(indents with tabs?, spaces per level) as most of the file does it.

    Counted per distinct indentation, found by searching for line breaks (a literal the regex
    engine skips to) rather than trying `^` at every character, and for a file edited again only
    where it changed: on a 10,000-line file a re-indented edit no longer rescans every line."""
    counts = _lead_counts(text)
    tabs = sum(n for lead, n in counts.items() if lead.startswith("\t"))
    widths: Counter[int] = Counter()
    for lead, n in counts.items():
        if lead.startswith(" ") and "\t" not in lead:
            widths[len(lead)] += n
    total = sum(widths.values())
    for unit in (4, 2, 3, 8):
        if total and sum(n for width, n in widths.items() if width % unit == 0) >= 0.9 * total:
            return tabs > total, unit
    return tabs > total, 4


class _Indenter:
    def __init__(self, pairs: list[tuple[str, str]], old_leads: list[str], haystack: str) -> None:
        self.known: dict[str, str] = {}
        for old, new in pairs:
            self.known.setdefault(old, new)
        self.base_old, self.base_file = pairs[0] if pairs else ("", "")
        self._pairs, self._old_leads, self._haystack = pairs, old_leads, haystack
        self._style: tuple[bool, int, int] | None = None

    def _settle_style(self) -> tuple[bool, int, int]:
        """(file indents with tabs, file spaces per level, model spaces per level), worked out only when
        a line needs an indentation the matched lines do not show (a whole-file scan on big files)."""
        if self._style is None:
            file_leads = [f for _, f in self._pairs]
            if len({len(f) for f in file_leads}) < 2:  # the matched lines alone do not show the step
                tabs, unit = file_style(self._haystack)
            else:
                tabs, unit = False, _space_step(file_leads, 4)
            if any(file_leads):  # the lines being edited say best which character indents here
                tabs = any("\t" in f for f in file_leads)
            self._style = (tabs, unit, _space_step(self._old_leads, unit))
        return self._style

    def _levels(self, ws: str, unit: int) -> float:
        return ws.count("\t") + ws.count(" ") / unit

    def __call__(self, ws: str) -> str:
        if ws in self.known:
            return self.known[ws]
        file_tabs, file_unit, old_unit = self._settle_style()
        target = self._levels(self.base_file, file_unit) + (
            self._levels(ws, old_unit) - self._levels(self.base_old, old_unit)
        )
        target = max(0.0, target)
        if file_tabs:
            whole = int(target + 1e-9)
            return "\t" * whole + " " * round((target - whole) * file_unit)
        return " " * round(target * file_unit)


@lru_cache(maxsize=1)  # as file_style: thousands of sites of one edit must not each count the whole file
def _file_crlf(haystack: str) -> bool:
    return uses_crlf(haystack)


def replacement(haystack: str, match: Match, old: str, new: str) -> str:
    span = haystack[match.start : match.end]
    crlf = span.count("\r\n") * 2 > span.count("\n") if "\n" in span else _file_crlf(haystack)
    if match.tier == EXACT:
        return to_eol(new, crlf)
    eol = "\r\n" if crlf else "\n"
    span_lines = [line[:-1] if line.endswith("\r") else line for line in span.split("\n")]
    old_lines = old.replace("\r\n", "\n").split("\n")
    new_lines = new.replace("\r\n", "\n").split("\n")
    mid_line = not match.from_line_start
    if len(span_lines) != len(old_lines):  # the tiers keep line structure; never guess if that ever breaks
        raise AssertionError("matched span and oldText have different line counts")

    pairs: list[tuple[str, str]] = []
    for i, (o, f) in enumerate(zip(old_lines, span_lines, strict=True)):
        if o.strip() and not (i == 0 and mid_line):
            pairs.append((_lead(o), _lead(f)))
    if mid_line and not pairs:
        # only a fragment of one line matched: that line's own indentation is the base for new lines
        line_start = haystack.rfind("\n", 0, match.start) + 1
        pairs.append((_lead(old_lines[0]), _lead(haystack[line_start : match.start])))
    same_indent = all(o == f for o, f in pairs)
    indent = _Indenter(pairs, [_lead(x) for x in old_lines + new_lines if x.strip()], haystack)

    kept: dict[int, int] = {}  # new line -> old line it repeats (copied from the file verbatim)
    # a line counts as kept only with the same indentation too: moved deeper, it must be re-indented
    matcher = SequenceMatcher(None, [_key(x) for x in old_lines], [_key(x) for x in new_lines], autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            kept[block.b + k] = block.a + k

    out: list[str] = []
    for j, line in enumerate(new_lines):
        if j in kept:
            out.append(span_lines[kept[j]])
        elif j == 0 and mid_line:
            prefix = _lead(old_lines[0])
            out.append(line[len(prefix) :] if prefix and line.startswith(prefix) else line.lstrip(" \t"))
        elif not line.strip():
            out.append("")
        elif same_indent:
            out.append(line.rstrip(" \t\r"))
        else:
            out.append(indent(_lead(line)) + line.strip(" \t\r"))
    return eol.join(out)
