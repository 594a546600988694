"""The two views of a change (reference §4.10): the numbered `diff` for reading and the unified `patch`.

Both are built from the places that changed, never from a diff of the whole file: the edit knows
which spans it replaced (`Span`s; without them one span is found by trimming the common prefix and
suffix). Each span is widened to whole lines and trimmed of the lines equal at its edges; difflib
then runs on a window around each change: the change plus some of the equal lines on either side.
A whole-file difflib matches the longest equal run first, so what it shows for a change depends
on how long the runs around it are (where an inserted copy of a neighbouring line appears, say);
the window keeps those runs' lengths as far as any comparison a change of its size can make, so
the output is the whole-file diff's, byte for byte (tests/runtime/edit/test_edit_diffs.py). The
rest of the file costs a few C-speed scans (`count`, `find`); difflib's work grows with the change
only, and a change whose lines are so alike that difflib would take minutes is shown as one block
out, one in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher

CONTEXT = 4

Span = tuple[int, int, int, int]  # old start, old end, new start, new end: str offsets; all else is equal
Opcode = tuple[str, int, int, int, int]

_CHUNK = 1 << 15
_FEW = 32  # changed places up to which the lines around each are fetched one by one


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix, compared in C-speed chunks."""
    n = min(len(a), len(b))
    lo = 0
    while lo < n:  # whole chunks at C speed, then a binary search inside the first unequal one
        hi = min(n, lo + _CHUNK)
        if a[lo:hi] != b[lo:hi]:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if a[lo:mid] == b[lo:mid]:
                    lo = mid
                else:
                    hi = mid
            return lo if a[lo] != b[lo] else hi
        lo = hi
    return n


def common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most `limit`."""
    n = min(len(a), len(b), limit)
    done = 0
    while done < n:
        step = min(n - done, _CHUNK)
        if a[len(a) - done - step : len(a) - done] != b[len(b) - done - step : len(b) - done]:
            lo, hi = 0, step  # lo chars known equal from the end of this chunk, hi not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if a[len(a) - done - mid : len(a) - done] == b[len(b) - done - mid : len(b) - done]:
                    lo = mid
                else:
                    hi = mid
            last = a[len(a) - done - hi] == b[len(b) - done - hi]
            return done + (hi if last else lo)
        done += step
    return n


def span_of(old: str, new: str) -> list[Span]:
    """The single span outside which `old` and `new` are equal (none if they are equal)."""
    if old == new:
        return []
    p = common_prefix(old, new)
    s = common_suffix(old, new, min(len(old), len(new)) - p)
    return [(p, len(old) - s, p, len(new) - s)]


class _Side:
    """One text seen as `\\n`-separated parts, of which only the parts near a change are split out
    (all of them only if a diff ever reaches further, which takes long runs of repeated lines)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.last = 0  # index of the last part, set by `_groups`
        self.parts: dict[int, str] | list[str] = {}

    def take(self, first: int, start: int, end: int) -> None:
        """Store the parts of text[start:end], which begins at a part boundary with part `first`."""
        parts = self.parts
        assert isinstance(parts, dict)
        for k, part in enumerate(self.text[start:end].split("\n"), first):
            parts[k] = part

    def __getitem__(self, k: int) -> str:
        try:
            return self.parts[k]
        except KeyError:
            self.parts = self.text.split("\n")
            return self.parts[k]


def _line_start(text: str, offset: int, back: int) -> tuple[int, int]:
    """Offset of the start of the line holding `offset`, moved up to `back` lines up; and how many it moved."""
    start = text.rfind("\n", 0, offset) + 1
    moved = 0
    while moved < back and start > 0:
        start = text.rfind("\n", 0, start - 1) + 1
        moved += 1
    return start, moved


def _line_end(text: str, offset: int, ahead: int) -> int:
    """Offset of the end (the `\\n`, or the end of text) of the line holding `offset`, `ahead` lines on."""
    end = text.find("\n", offset)
    for _ in range(ahead):
        if end < 0:
            break
        end = text.find("\n", end + 1)
    return len(text) if end < 0 else end


def _reach(changed: int) -> int:
    """How many equal lines on each side of a change take part in its diff (see `_opcodes`): more
    than any run of equal lines inside or next to a change of this size is likely to be long."""
    return 32 + 2 * changed


def _groups(
    old: _Side, new: _Side, spans: Sequence[Span], first_line: int | None = None
) -> list[tuple[int, int, int, int]]:
    """Inclusive part ranges (old first, old last, new first, new last) that may differ; the parts in
    each range and the lines around it that its diff will look at are fetched into the sides.

    Line numbers come from one scan of the old text and of the replaced spans: between spans the
    two texts are equal, so the new text's line breaks there need not be counted again."""
    groups: list[list[int]] = []
    o_pos = o_line = shift = 0  # shift: new line number minus old line number, past the spans so far
    spans = sorted(spans)
    if first_line is not None and spans:  # the caller counted the lines before the first span already
        o_pos, o_line = spans[0][0], first_line
    for os_, oe, ns, ne in spans:
        la = o_line = o_line + old.text.count("\n", o_pos, os_)
        lb = la + old.text.count("\n", os_, oe)
        na = la + shift
        nb = na + new.text.count("\n", ns, ne)
        shift = nb - lb
        o_pos = os_
        if groups and la <= groups[-1][1] + 1:  # shares or touches a line: no equal line between
            groups[-1][1], groups[-1][3] = max(groups[-1][1], lb), max(groups[-1][3], nb)
            groups[-1][5], groups[-1][7] = max(groups[-1][5], oe), max(groups[-1][7], ne)
        else:
            groups.append([la, lb, na, nb, os_, oe, ns, ne])
    old.last = o_line + old.text.count("\n", o_pos)
    new.last = old.last + shift
    if len(groups) > _FEW:  # many places (`all: true`): one split of each text beats fetching around each
        old.parts, new.parts = old.text.split("\n"), new.text.split("\n")
        return [(g[0], g[1], g[2], g[3]) for g in groups]
    out = []
    for la, lb, na, nb, os_, oe, ns, ne in groups:
        margin = CONTEXT + 2 * _reach(lb - la + nb - na + 2)
        for side, first, a, b in ((old, la, os_, oe), (new, na, ns, ne)):
            start, moved = _line_start(side.text, a, margin)
            side.take(first - moved, start, _line_end(side.text, b, margin))
        out.append((la, lb, na, nb))
    return out


# difflib compares every line of one side with every equal line of the other: a change spanning
# thousands of lines of which many are alike (blank lines, a hostile file) would take minutes.
_DIFF_BUDGET = 2_000_000


def _affordable(a: list[str], b: list[str]) -> bool:
    """Whether difflib's work on these lines stays within budget: the pairs of equal lines bound it."""
    if len(a) * len(b) <= _DIFF_BUDGET:
        return True
    counts = Counter(b)
    return sum(counts.get(line, 0) for line in a) <= _DIFF_BUDGET


def _clip(left: int, right: int, reach: int) -> tuple[int, int]:
    """How much of the equal runs left and right of a change to diff with it.

    difflib over the whole file matches the longest equal run first, so which of the two runs around
    a change wins (and so where an inserted copy of a neighbouring line is shown) depends on their
    lengths. Cutting both by the same amount and capping the longer one keeps every comparison a
    change of this size can take part in, without diffing the whole file."""
    cut = max(0, min(left, right) - reach)
    left, right = left - cut, right - cut
    left = min(left, right + reach)
    return left, min(right, left + reach)


def _opcodes(
    groups: list[tuple[int, int, int, int]],
    old: Callable[[int], str],
    new: Callable[[int], str],
    n_old: int,
    n_new: int,
) -> list[Opcode]:
    """difflib's opcodes over the whole sequences (lengths n_old, n_new), running difflib only on
    windows around the changes: each change with the equal lines around it that can affect it."""
    cores: list[tuple[int, int, int, int]] = []
    for la, lb, na, nb in groups:
        a1, a2, b1, b2 = la, min(lb + 1, n_old), na, min(nb + 1, n_new)
        while a1 < a2 and b1 < b2 and old(a1) == new(b1):
            a1, b1 = a1 + 1, b1 + 1
        while a2 > a1 and b2 > b1 and old(a2 - 1) == new(b2 - 1):
            a2, b2 = a2 - 1, b2 - 1
        if a1 < a2 or b1 < b2:
            cores.append((a1, a2, b1, b2))
    windows: list[list[int]] = []
    for a1, a2, b1, b2 in cores:
        if windows:
            w = windows[-1]
            if a1 - w[1] < 4 * _reach(w[1] - w[0] + w[3] - w[2] + a2 - a1 + b2 - b1):
                w[1], w[3] = a2, b2
                continue
        windows.append([a1, a2, b1, b2])
    raw: list[Opcode] = []
    i = j = changed_to = 0  # changed_to: where the previous window's changes end (its run starts)
    for k, (a1, a2, b1, b2) in enumerate(windows):
        after = (windows[k + 1][0] if k + 1 < len(windows) else n_old) - a2
        left, right = _clip(a1 - changed_to, after, _reach(a2 - a1 + b2 - b1))
        changed_to = a2
        wa1, wa2, wb1, wb2 = a1 - left, a2 + right, b1 - left, b2 + right
        raw.append(("equal", i, wa1, j, wb1))
        a_lines, b_lines = [old(x) for x in range(wa1, wa2)], [new(y) for y in range(wb1, wb2)]
        if _affordable(a_lines, b_lines):
            matcher = SequenceMatcher(None, a_lines, b_lines, autojunk=False)
            raw += [(t, x1 + wa1, x2 + wa1, y1 + wb1, y2 + wb1) for t, x1, x2, y1, y2 in matcher.get_opcodes()]
        else:  # one block out, one block in: still a true diff, in linear time
            tag = "replace" if a1 < a2 and b1 < b2 else "delete" if a1 < a2 else "insert"
            raw += [("equal", wa1, a1, wb1, b1), (tag, a1, a2, b1, b2), ("equal", a2, wa2, b2, wb2)]
        i, j = wa2, wb2
    raw.append(("equal", i, n_old, j, n_new))
    ops: list[Opcode] = []
    for op in raw:
        if op[1] == op[2] and op[3] == op[4]:
            continue
        if ops and op[0] == "equal" and ops[-1][0] == "equal":
            ops[-1] = ("equal", ops[-1][1], op[2], ops[-1][3], op[4])
        else:
            ops.append(op)
    return ops


class Change:
    """Two versions of a text and where they differ, scanned once for both views.

    `spans` are the replaced places, if the caller knows them (outside them the texts must be
    equal); without them the texts are compared."""

    def __init__(
        self, old_text: str, new_text: str, spans: Sequence[Span] | None = None, *, first_line: int | None = None
    ) -> None:
        """`first_line`: the 0-based line of the first span's start, when the caller knows it."""
        self.old, self.new = _Side(old_text), _Side(new_text)
        chosen = span_of(old_text, new_text) if spans is None else spans
        self.groups = _groups(self.old, self.new, chosen, first_line if spans is not None else None)

    def numbered(self) -> tuple[str, int | None]:
        return _numbered(self.old, self.new, self.groups)

    def unified(self, path: str) -> str:
        return _unified(path, self.old, self.new, self.groups)


def numbered(old_text: str, new_text: str, spans: Sequence[Span] | None = None) -> tuple[str, int | None]:
    """(diff, firstChangedLine): marker, right-aligned line number, text; long unchanged runs elided."""
    return Change(old_text, new_text, spans).numbered()


def unified(path: str, old_text: str, new_text: str, spans: Sequence[Span] | None = None) -> str:
    """A standard unified diff with 4 lines of context and `\\ No newline at end of file` markers."""
    return Change(old_text, new_text, spans).unified(path)


def _numbered(old: _Side, new: _Side, groups: list[tuple[int, int, int, int]]) -> tuple[str, int | None]:
    width = len(str(max(old.last, new.last) + 1))
    o, n = old, new
    ops = _opcodes(groups, lambda k: o[k].rstrip("\r"), lambda k: n[k].rstrip("\r"), old.last + 1, new.last + 1)
    out: list[str] = []
    first: int | None = None
    elision = " " + " " * width + " ..."

    def same(i: int) -> str:
        return f" {i + 1:>{width}} {o[i].rstrip(chr(13))}"

    changes = [k for k, op in enumerate(ops) if op[0] != "equal"]
    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            if not changes:
                continue
            if k < changes[0]:  # leading context
                if i2 - i1 > CONTEXT:
                    out.append(elision)
                out += [same(i) for i in range(max(i1, i2 - CONTEXT), i2)]
            elif k > changes[-1]:  # trailing context
                out += [same(i) for i in range(i1, min(i2, i1 + CONTEXT))]
                if i2 - i1 > CONTEXT:
                    out.append(elision)
            elif i2 - i1 <= 2 * CONTEXT:
                out += [same(i) for i in range(i1, i2)]
            else:
                out += [same(i) for i in range(i1, i1 + CONTEXT)] + [elision]
                out += [same(i) for i in range(i2 - CONTEXT, i2)]
            continue
        if first is None:
            first = j1 + 1
        out += [f"-{i + 1:>{width}} {o[i].rstrip(chr(13))}" for i in range(i1, i2)]
        out += [f"+{j + 1:>{width}} {n[j].rstrip(chr(13))}" for j in range(j1, j2)]
    return "\n".join(out), first


def _range(start: int, length: int) -> str:
    if length == 1:
        return str(start)
    return f"{start if length else start - 1 if start else 0},{length}"


def _lf_lines(side: _Side) -> tuple[Callable[[int], str], int]:
    """The side as lines that keep their `\\n` (only `\\n` ends a line, so a stray `\\r` stays inside
    its line as in the file); an empty last part is no line."""
    last = side.last

    def line(k: int) -> str:
        return side[k] if k == last else side[k] + "\n"

    return line, (last if side.text.endswith("\n") or not side.text else last + 1)


def _unified(path: str, old_side: _Side, new_side: _Side, groups: list[tuple[int, int, int, int]]) -> str:
    old, n_old = _lf_lines(old_side)
    new, n_new = _lf_lines(new_side)
    name = path.lstrip("/")
    out = [f"--- a/{name}\n", f"+++ b/{name}\n"]
    for group in _grouped(_opcodes(groups, old, new, n_old, n_new), CONTEXT):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1 + 1, i2 - i1)} +{_range(j1 + 1, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += _marked(" ", [old(k) for k in range(a1, a2)])
                continue
            out += _marked("-", [old(k) for k in range(a1, a2)])
            out += _marked("+", [new(k) for k in range(b1, b2)])
    return "".join(out) if len(out) > 2 else ""


def _grouped(codes: list[Opcode], n: int) -> list[list[Opcode]]:
    """difflib's `get_grouped_opcodes`, over opcodes made elsewhere."""
    if not codes:
        codes = [("equal", 0, 1, 0, 1)]
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    nn = n + n
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > nn:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _marked(marker: str, lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(marker + line)
        else:
            out.append(marker + line + "\n\\ No newline at end of file\n")
    return out
