"""`--diff-original` of `cireil tools` / `%cireil tools`: how the tool definitions a model gets from cireil differ
from the original CireilClaw's, each difference with its spec rule. Text for the shell, escaped HTML for a notebook;
the report is runtime/toolkit/original_diff.py's dict.
"""

from __future__ import annotations

from typing import Any

from .html import FG_DIM, LINED, MONO, WARN, esc, frame, table


def _summary(report: dict[str, Any]) -> str:
    rows = report["rows"]
    head = f"{len(rows)} difference{'s' if len(rows) != 1 else ''} from the original CireilClaw's tool definitions"
    if report["agent"]:
        here = sum(1 for r in rows if r["enabled"] and r.get("applies") is not False)
        head += f" ({here} in this agent's enabled tools)"
    return f"{head}, each with its reason; everything else is the original's, byte for byte"


def _state(row: dict[str, Any]) -> str:
    """Whether the row shows in the agent: nothing without an agent."""
    if row.get("enabled") is None:
        return ""
    if row["side"] == "original only":
        return "not in cireil"
    if not row["enabled"]:
        return "disabled here"
    if row.get("applies") is False:
        return f"not here: {row['when'].split(' = ')[0]} is enabled"
    return "enabled here"


def _where(row: dict[str, Any]) -> str:
    return "whole tool" if row["where"] == "tool" else row["where"]


def text(report: dict[str, Any]) -> str:
    lines = [_summary(report) + ":"]
    for row in report["rows"]:
        state = _state(row)
        head = f"  {row['tool']} [{row['side']}] {_where(row)}" + (f" ({state})" if state else "")
        lines.append(head)
        lines.append(f"      what: {row['what']}" + (f"; only when {row['when']}" if row["when"] else ""))
        lines.append(f"      rule: {row['rule']}")
    identical = report.get("identical") or []
    if identical:
        lines.append(f"identical to the original ({len(identical)} built-ins): {', '.join(identical)}")
    return "\n".join(lines)


def html(report: dict[str, Any]) -> str:
    rows = []
    for row in report["rows"]:
        state = _state(row)
        dim = row.get("applies") is False or row.get("enabled") is False
        what = esc(row["what"]) + (
            f'<div style="color:{WARN}">only when {esc(row["when"])}</div>' if row["when"] else ""
        )
        rows.append(
            [
                (esc(row["tool"]), f"font-family:{MONO};white-space:nowrap;font-weight:600"),
                (esc(row["side"]), f"white-space:nowrap;color:{FG_DIM}"),
                (esc(_where(row)), f"font-family:{MONO};overflow-wrap:anywhere"),
                what,
                (esc(row["rule"]), f"color:{FG_DIM}"),
                *(
                    [(esc(state), f"white-space:nowrap;color:{FG_DIM if dim else 'inherit'}")]
                    if report["agent"]
                    else []
                ),
            ]
        )
    head = ("tool", "side", "where", "what differs", "spec rule", *(("here",) if report["agent"] else ()))
    body = table(rows, head=head, cell=LINED, style="border-collapse:collapse")
    identical = report.get("identical") or []
    if identical:
        body += (
            f'<div style="margin-top:4px;color:{FG_DIM}">identical to the original ({len(identical)} built-ins): '
            f"{esc(', '.join(identical))}</div>"
        )
    return frame("tooldiff", body, title=esc(_summary(report)))
