"""Definition lint findings (runtime/engine/toollint.py) as text and escaped HTML.

Shown by dry-run and `%cireil tools --lint`. Findings about cireil's built-in tools are left out unless asked for
(`--builtins`): `hidden` counts them, so the summary says they exist and how to see them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...render.html import ERROR, FG_DIM, MONO, OK, WARN, esc, frame
from .base import View

if TYPE_CHECKING:
    from ...runtime.engine.toollint import Finding

_MARK = {"error": ("✖", ERROR), "warning": ("⚠", WARN), "info": ("ℹ", FG_DIM)}
_CELL = "padding:1px 8px;text-align:left;vertical-align:top"


def hidden_note(hidden: int) -> str:
    """The line saying how many findings about built-in tools were left out; empty when none were."""
    if not hidden:
        return ""
    return (
        f"{hidden} finding{'s' if hidden != 1 else ''} about cireil's built-in tools not shown (they send the "
        "original CireilClaw's definitions as they are; --builtins shows them)"
    )


def lint_summary(findings: list[Finding], hidden: int = 0) -> str:
    from ...runtime.engine.toollint import lint_counts

    note = f"; {hidden_note(hidden)}" if hidden else ""
    if not findings:
        return f"tool definition lint: nothing to report{note}"
    counts = ", ".join(f"{n} {k}{'s' if n != 1 and k != 'info' else ''}" for k, n in lint_counts(findings).items() if n)
    return f"tool definition lint: {counts} (reported only: the agent stays valid){note}"


def lint_text(findings: list[Finding], hidden: int = 0) -> str:
    lines = [lint_summary(findings, hidden)]
    lines += [f"  {f.severity:<7} {f.tool}  {f.where}: {f.message}\n          fix: {f.fix}" for f in findings]
    return "\n".join(lines)


def lint_html(findings: list[Finding], hidden: int = 0) -> str:
    head = f'<div class="cireil-lint" style="font-weight:600;margin-top:6px">{esc(lint_summary(findings))}</div>'
    if hidden:
        head += f'<div class="cireil-lint-hidden" style="color:{FG_DIM}">{esc(hidden_note(hidden))}</div>'
    if not findings:
        return head.replace("font-weight:600", f"font-weight:600;color:{OK}")
    rows = []
    for f in findings:
        mark, colour = _MARK.get(f.severity, ("•", FG_DIM))
        rows.append(
            f'<tr><td style="{_CELL};color:{colour};white-space:nowrap;width:1%">{mark} {esc(f.severity)}</td>'
            f'<td style="{_CELL};font-family:{MONO};white-space:nowrap;width:1%">{esc(f.tool)}'
            f'<div style="color:{FG_DIM};font-size:90%">{esc(f.where)}</div></td>'
            f'<td style="{_CELL};white-space:normal;overflow-wrap:break-word">{esc(f.message)}'
            f'<div style="color:{FG_DIM}">fix: {esc(f.fix)}</div></td></tr>'
        )
    table = (
        '<table class="cireil-lint-table" style="border-collapse:collapse;width:100%;table-layout:auto">'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return head + table


@dataclass
class LintView(View):
    """`%cireil tools --lint` when shown on its own."""

    slug: str
    findings: list[Finding]
    hidden: int = 0  # findings about built-in tools left out (shown with --builtins)

    def text(self) -> str:
        return f"agent '{self.slug}': " + lint_text(self.findings, self.hidden)

    def html(self) -> str:
        return frame("lint", lint_html(self.findings, self.hidden), title=f"lint · {esc(self.slug)}")
