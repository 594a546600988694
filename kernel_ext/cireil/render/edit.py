"""edit: the patch as a colored unified diff with line numbers; a preview offers Apply and Discard."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from . import Action
from .html import BORDER, FG_DIM, MONO, OK, WARN, esc, frame

if TYPE_CHECKING:
    from ..runtime.result import ToolResult

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


def render(result: ToolResult) -> tuple[str, str]:
    data = result.data
    path = str(result.args.get("path", ""))
    patch = str(data.get("patch", ""))
    detail = str(data.get("detail", ""))
    if "applyId" in data:
        head = f'<span style="color:{WARN}">◇</span> preview of <code style="font-family:{MONO}">{esc(path)}</code>'
        title = "edit preview (not written yet)"
    else:
        head = f'<span style="color:{OK}">✓</span> edited <code style="font-family:{MONO}">{esc(path)}</code>'
        title = "edit"
    body = f'<div>{head} <span style="color:{FG_DIM}">· {esc(detail)}</span></div>' + patch_html(patch)
    return (patch or detail), frame("edit", body, title=esc(title))


def dismissed(result: ToolResult) -> tuple[str, str]:
    """A preview after Discard: says so, offers nothing; the patch stays readable in a fold."""
    path = str(result.args.get("path", ""))
    patch = str(result.data.get("patch", ""))
    head = (
        f'<span style="color:{FG_DIM}">✕</span> discarded: the preview of '
        f'<code style="font-family:{MONO}">{esc(path)}</code> · nothing was written'
    )
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
