"""The two views of a change (reference §4.10): the numbered `diff` for reading and the unified `patch`."""

from __future__ import annotations

from difflib import SequenceMatcher

CONTEXT = 4


def _opcodes(old: list[str], new: list[str]) -> list[tuple[str, int, int, int, int]]:
    return SequenceMatcher(None, old, new, autojunk=False).get_opcodes()


def numbered(old_text: str, new_text: str) -> tuple[str, int | None]:
    """(diff, firstChangedLine): marker, right-aligned line number, text; long unchanged runs elided."""
    old, new = old_text.split("\n"), new_text.split("\n")
    width = len(str(max(len(old), len(new))))
    ops = _opcodes([x.rstrip("\r") for x in old], [x.rstrip("\r") for x in new])
    out: list[str] = []
    first: int | None = None
    elision = " " + " " * width + " ..."

    def same(i: int) -> str:
        return f" {i + 1:>{width}} {old[i].rstrip(chr(13))}"

    changes = [k for k, op in enumerate(ops) if op[0] != "equal"]
    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            run = list(range(i1, i2))
            if not changes:
                continue
            if k < changes[0]:  # leading context
                if len(run) > CONTEXT:
                    out.append(elision)
                out += [same(i) for i in run[-CONTEXT:]]
            elif k > changes[-1]:  # trailing context
                out += [same(i) for i in run[:CONTEXT]]
                if len(run) > CONTEXT:
                    out.append(elision)
            elif len(run) <= 2 * CONTEXT:
                out += [same(i) for i in run]
            else:
                out += [same(i) for i in run[:CONTEXT]] + [elision] + [same(i) for i in run[-CONTEXT:]]
            continue
        if first is None:
            first = j1 + 1
        out += [f"-{i + 1:>{width}} {old[i].rstrip(chr(13))}" for i in range(i1, i2)]
        out += [f"+{j + 1:>{width}} {new[j].rstrip(chr(13))}" for j in range(j1, j2)]
    return "\n".join(out), first


def _split_lf(text: str) -> list[str]:
    # only `\n` ends a line here, so a stray `\r` stays inside its line as in the file
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    return out + ([parts[-1]] if parts[-1] else [])


def _range(start: int, length: int) -> str:
    if length == 1:
        return str(start)
    return f"{start if length else start - 1 if start else 0},{length}"


def unified(path: str, old_text: str, new_text: str) -> str:
    """A standard unified diff with 4 lines of context and `\\ No newline at end of file` markers."""
    old, new = _split_lf(old_text), _split_lf(new_text)
    name = path.lstrip("/")
    out = [f"--- a/{name}\n", f"+++ b/{name}\n"]
    for group in SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(CONTEXT):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1 + 1, i2 - i1)} +{_range(j1 + 1, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += _marked(" ", old[a1:a2])
                continue
            out += _marked("-", old[a1:a2])
            out += _marked("+", new[b1:b2])
    return "".join(out) if len(out) > 2 else ""


def _marked(marker: str, lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(marker + line)
        else:
            out.append(marker + line + "\n\\ No newline at end of file\n")
    return out
