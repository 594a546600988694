"""The cell form of edit: `%%cireil_edit PATH [--dry-run] [--all]` and SEARCH/REPLACE blocks as the body.

    %%cireil_edit /workspace/app.py --dry-run
    <<<<<<< SEARCH
    def greet(name):
        return "hi " + name
    =======
    def greet(name: str) -> str:
        return f"hi {name}"
    >>>>>>> REPLACE

Each block replaces whole lines: the lines between the markers are oldText and newText, each line
with its line break. An empty REPLACE part deletes the lines. Blank lines between blocks are
ignored; any other text outside a block is refused so a typo in a marker never goes unnoticed.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"
# IPython strips a leading `>>> ` (a pasted Python prompt) before a cell magic sees its body, so the
# REPLACE marker arrives as `>>>> REPLACE`: accept 3 to 7 angle brackets on both markers.
_SEARCH = re.compile(r"<{3,7} ?SEARCH")
_REPLACE = re.compile(r">{3,7} ?REPLACE")


def _marker(line: str) -> str:
    text = line.rstrip("\r\n").rstrip()
    if _SEARCH.fullmatch(text):
        return SEARCH
    if _REPLACE.fullmatch(text):
        return REPLACE
    return text


FLAGS = {"--dry-run": "dryRun", "--all": "all"}


def parse_line(line: str) -> tuple[str, set[str]]:
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise ValueError(f"cannot read the magic's line: {exc}") from None
    paths = [w for w in words if not w.startswith("--")]
    unknown = [w for w in words if w.startswith("--") and w not in FLAGS]
    if unknown:
        raise ValueError(f"unknown option {unknown[0]} (options: {', '.join(FLAGS)})")
    if len(paths) != 1:
        raise ValueError("give exactly one path: %%cireil_edit /workspace/file.py [--dry-run] [--all]")
    return paths[0], {FLAGS[w] for w in words if w in FLAGS}


def parse_blocks(body: str) -> list[dict[str, str]]:
    edits: list[dict[str, str]] = []
    state, old, new = "outside", [], []
    for n, raw in enumerate(body.splitlines(keepends=True), start=1):
        marker = _marker(raw)
        if state == "outside":
            if marker == SEARCH:
                state, old, new = "search", [], []
            elif marker:
                raise ValueError(f"line {n}: text outside a block; each block starts with {SEARCH!r}")
        elif state == "search":
            if marker == DIVIDER:
                state = "replace"
            elif marker in (SEARCH, REPLACE):
                raise ValueError(f"line {n}: {marker!r} inside a SEARCH part; expected {DIVIDER!r} first")
            else:
                old.append(raw if raw.endswith("\n") else raw + "\n")
        elif marker == REPLACE:
            edits.append({"oldText": "".join(old), "newText": "".join(new)})
            state = "outside"
        elif marker in (SEARCH, DIVIDER):
            raise ValueError(f"line {n}: {marker!r} inside a REPLACE part; expected {REPLACE!r}")
        else:
            new.append(raw if raw.endswith("\n") else raw + "\n")
    if state != "outside":
        raise ValueError(f"the last block is not closed; it must end with {REPLACE!r}")
    if not edits:
        raise ValueError(
            f"no edit blocks in the cell; write {SEARCH!r}, old lines, {DIVIDER!r}, new lines, {REPLACE!r}"
        )
    return edits


def parse_cell(line: str, body: str) -> dict[str, Any]:
    """PATH [--dry-run] [--all], then blocks of `<<<<<<< SEARCH`, old lines, `=======`, new lines,
    `>>>>>>> REPLACE` (whole lines; an empty new part deletes). ValueError says what is malformed."""
    path, flags = parse_line(line)
    edits = parse_blocks(body)
    if "all" in flags:
        for edit in edits:
            edit["all"] = True  # type: ignore[assignment]
    args: dict[str, Any] = {"path": path, "edits": edits}
    if "dryRun" in flags:
        args["dryRun"] = True
    return args
