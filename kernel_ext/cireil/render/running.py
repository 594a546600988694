"""The neutral line shown while a tool without live output runs: its name and the time so far.

Tools whose view module has `live_bundle` (exec) show a live panel instead; see kernel/views/live.py.
"""

from __future__ import annotations

from typing import Any

from .html import FG_DIM, WARN, esc, frame


def running_bundle(tool: str, elapsed_s: float, *, ended: str | None = None, hint: str = "") -> dict[str, Any]:
    """`running read … 2.1 s` while the call runs; `read interrupted after 2.1 s` once `ended` says how it ended."""
    if ended is None:
        line = f"running {tool} … {elapsed_s:.1f} s"
        mark, colour = "⏳", FG_DIM
    else:
        line = f"{tool} {ended} after {elapsed_s:.1f} s"
        mark, colour = "⏹", WARN
    text = f"{line} · {hint}" if hint and ended is None else line
    extra = f' <span style="color:{FG_DIM}">· {esc(hint)}</span>' if hint and ended is None else ""
    body = f'<div style="color:{colour}">{mark} {esc(line)}{extra}</div>'
    return {"text/plain": text, "text/html": frame("running", body)}
