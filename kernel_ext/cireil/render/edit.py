"""edit: the patch as a colored unified diff with line numbers; a preview offers Apply and Discard."""

from __future__ import annotations

import dataclasses
import difflib
import re
from typing import TYPE_CHECKING

from . import Action
from .html import BORDER, FG_DIM, MONO, OK, WARN, code, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
# Translucent tints, not --jp-*-color3: the dark theme keeps those pale, which put its light text on
# light green/red rows (found by tests/browser). A tint over either theme's background stays readable.
ADDED_BG = "rgba(46,160,67,0.22)"
REMOVED_BG = "rgba(229,57,53,0.2)"
HUNK_FG = "var(--jp-info-color1, #0277bd)"
# JupyterLab right-aligns table cells in rendered HTML; code must read from the left (seen in tests/browser)
_CELL = "padding:0 6px;white-space:pre;text-align:left"


def _num(n: int | None) -> str:
    text = "" if n is None else str(n)
    return f'<td style="{_CELL};text-align:right;color:{FG_DIM};user-select:none">{text}</td>'


def _row(old: int | None, new: int | None, marker: str, text: str, bg: str = "") -> str:
    style = f"background:{bg};" if bg else ""
    return f'<tr style="{style}">{_num(old)}{_num(new)}<td style="{_CELL}">{esc(marker)}{esc(text)}</td></tr>'


def patch_html(patch: str) -> str:
    """Rows of the unified diff: old and new line numbers, then the line; file headers left out."""
    rows: list[str] = []
    old = new = 0
    for line in patch.splitlines():
        if line.startswith(("--- ", "+++ ")) and not rows:
            continue
        if m := _HUNK.match(line):
            old, new = int(m.group(1)), int(m.group(2))
            rows.append(
                f'<tr><td colspan="3" style="{_CELL};color:{HUNK_FG};border-top:1px solid {BORDER}">'
                f"{esc(line)}</td></tr>"
            )
        elif line.startswith("+"):
            rows.append(_row(None, new, "+", line[1:], ADDED_BG))
            new += 1
        elif line.startswith("-"):
            rows.append(_row(old, None, "-", line[1:], REMOVED_BG))
            old += 1
        elif line.startswith("\\"):
            rows.append(f'<tr><td></td><td></td><td style="{_CELL};color:{FG_DIM}">{esc(line)}</td></tr>')
        else:
            rows.append(_row(old, new, " ", line[1:]))
            old += 1
            new += 1
    return (
        f'<table style="font-family:{MONO};font-size:90%;border-collapse:collapse;margin:4px 0;'
        f'border:1px solid {BORDER}">{"".join(rows)}</table>'
    )


SHOWS_FAILURES = True  # an oldText that was not found is shown against the closest lines of the file
_EDIT_INDEX = re.compile(r"\bedits\[(\d+)\]")
_READ_LIMIT = 256 * 1024  # larger files keep the agent-facing Context only
MARK_FILE = "rgba(46,160,67,0.35)"
MARK_WANTED = "rgba(229,57,53,0.3)"


def _marked(text: str, other: str, colour: str) -> tuple[str, str]:
    """`text` as HTML with the characters that differ from `other` highlighted, and as plain text."""
    html, plain = [], []
    for op, a, b, _c, _d in difflib.SequenceMatcher(None, text, other, autojunk=False).get_opcodes():
        part = text[a:b]
        if not part:
            continue
        if op == "equal":
            html.append(esc(part))
            plain.append(part)
        else:
            html.append(f'<span style="background:{colour};border-radius:2px">{esc(part)}</span>')
            plain.append(f"[{part}]")
    return "".join(html), "".join(plain)


def _closest_view(result: ToolResult, head: str) -> tuple[str, str] | None:
    """The lines of the file most like the oldText that was not found, differences marked; None when
    the file or the oldText cannot be had (the plain error view is shown then)."""
    from ..runtime.edit.closest import closest

    found = _EDIT_INDEX.search(head)
    edits = result.args.get("edits")
    if not found or not isinstance(edits, list) or int(found.group(1)) >= len(edits) or result.agent is None:
        return None
    edit = edits[int(found.group(1))]
    old_text = edit.get("oldText") if isinstance(edit, dict) else None
    try:
        if not isinstance(old_text, str):
            return None
        from ..runtime.files.textfile import read_bytes

        # through the sandbox, never by host path: the file may have become a FIFO or a link out since
        resolved = result.agent.sandbox_paths().resolve(str(result.args.get("path", "")))
        data = read_bytes(resolved, _READ_LIMIT)
        if len(data) > _READ_LIMIT:
            return None
        near = closest(data.decode("utf-8", errors="replace"), old_text)
    except Exception:  # gone, unreadable, outside the sandbox: the error itself is still shown
        return None
    if near is None:
        return None
    text = [f"closest lines in the file (from line {near.start}, {near.score:.0%} alike; [differences] marked):"]
    rows = []
    cell = f"{_CELL};vertical-align:top"
    for n, (line, wanted) in enumerate(zip(near.lines, near.wanted, strict=False), start=near.start):
        indent = line[: len(line) - len(line.lstrip())]
        have, want = line.strip(), wanted.strip()
        if " ".join(have.split()) == " ".join(want.split()):
            rows.append(f'<tr>{_num(n)}<td style="{cell}"></td><td style="{cell}">{esc(line)}</td></tr>')
            text.append(f"{n:>6}   {line}")
            continue
        have_html, have_plain = _marked(have, want, MARK_FILE)
        want_html, want_plain = _marked(want, have, MARK_WANTED)
        rows.append(
            f'<tr>{_num(n)}<td style="{cell};color:{FG_DIM}">file</td>'
            f'<td style="{cell}">{esc(indent)}{have_html}</td></tr>'
            f'<tr>{_num(None)}<td style="{cell};color:{FG_DIM}">oldText</td>'
            f'<td style="{cell}">{esc(indent)}{want_html}</td></tr>'
        )
        text += [f"{n:>6}   {indent}{have_plain}", f"{'oldText':>6}   {indent}{want_plain}"]
    table = (
        f'<div style="color:{FG_DIM};margin-top:6px">closest lines in the file'
        f" (from line {near.start}, {near.score:.0%} alike; differences marked)</div>"
        f'<table style="font-family:{MONO};font-size:90%;border-collapse:collapse;margin:4px 0;'
        f'border:1px solid {BORDER}">{"".join(rows)}</table>'
    )
    return "\n".join(text), table


def _failure(result: ToolResult) -> tuple[str, str]:
    from .error import render as error_view

    error = str(result.data.get("error", ""))
    head, context, _excerpt = error.partition("\n\nContext:\n")
    not_found = "Could not find" in head or "was not found" in head
    shown = _closest_view(result, head) if context and not_found else None
    if shown is None:
        return error_view(result)
    # the agent got the top of the file as Context; a person gets the lines the oldText comes closest to
    text, body = error_view(dataclasses.replace(result, data={**result.data, "error": head}))
    closest_text, closest_html = shown
    return f"{text}\n{closest_text}", body.removesuffix("</div>") + closest_html + "</div>"  # inside the frame


def render(result: ToolResult) -> tuple[str, str]:
    if not result.success:
        return _failure(result)
    data = result.data
    path = str(result.args.get("path", ""))
    patch = str(data.get("patch", ""))
    detail = str(data.get("detail", ""))
    if "applyId" in data:
        head = f'<span style="color:{WARN}">◇</span> preview of {code(path)}'
        title = "edit preview (not written yet)"
    else:
        head = f'<span style="color:{OK}">✓</span> edited {code(path)}'
        title = "edit"
    body = f'<div>{head} <span style="color:{FG_DIM}">· {esc(detail)}</span></div>' + patch_html(patch)
    return (patch or detail), frame("edit", body, title=esc(title))


def dismissed(result: ToolResult) -> tuple[str, str]:
    """A preview after Discard: says so, offers nothing; the patch stays readable in a fold."""
    path = str(result.args.get("path", ""))
    patch = str(result.data.get("patch", ""))
    head = f'<span style="color:{FG_DIM}">✕</span> discarded: the preview of {code(path)} · nothing was written'
    fold = (
        f'<details><summary style="color:{FG_DIM};cursor:pointer">the discarded patch</summary>'
        f"{patch_html(patch)}</details>"
    )
    text = f"discarded: the preview of {path} · nothing was written"
    return text, frame("edit", f"<div>{head}</div>{fold}", title="edit discarded")


def actions(result: ToolResult) -> list[Action]:
    """A preview can be applied (one edit call with its applyId) or dismissed without any call."""
    apply_id = result.data.get("applyId")
    if not result.success or not apply_id:
        return []
    path = result.args.get("path", "")
    return [
        Action(
            "Apply", "edit", {"path": path, "apply": apply_id}, tooltip="Write this patch to the file", style="primary"
        ),
        Action("Discard", "", tooltip="Drop the preview; the file is left as it is"),
    ]
