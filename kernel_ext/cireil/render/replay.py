"""`%cireil replay`: each step of a replayed turn, its tool calls, and where a result is not the recorded one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .html import ERROR, FG_DIM, MONO, OK, WARN, code_block, esc, frame
from .recording import VIEW_LIMIT, _cut, _details, _plain
from .safe import safe_bundle

if TYPE_CHECKING:
    from ..runtime.recorder.replay import ComparedCall, ReplayResult


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _call_line(call: ComparedCall) -> str:
    args = json.dumps(call.arguments, ensure_ascii=False, default=str)
    args = args if len(args) <= 100 else args[:99] + "…"
    if call.replayed is None:
        mark = "≠ not called in the replay"
    elif call.recorded is None:
        mark = "≠ a call the recording does not have"
    else:
        mark = "≠ result differs" if call.differs else "= as recorded"
    source = f" [MCP {call.mcp}]" if call.mcp else ""  # "from recording" or "live"
    return f"{call.name} {args} {mark}{source}"


@dataclass
class ReplayView:
    result: ReplayResult

    def text(self) -> str:
        r = self.result
        lines = [r.summary()]
        lines += [f"  ⚠ {why}" for why in r.invalid]
        for step in r.steps:
            lines.append(f"  {'≠' if step.differs else '='} step {step.n}")
            lines += [f"      {_call_line(c)}" for c in step.calls]
        return _plain("\n".join(lines))

    def html(self) -> str:
        r = self.result
        color = OK if r.same else WARN
        rows = [f'<div style="color:{color}">{esc(r.summary())}</div>']
        rows += [f'<div style="color:{ERROR}">⚠ {esc(why)}</div>' for why in r.invalid]
        for step in r.steps:
            calls = []
            for c in step.calls:
                line = f'<span style="font-family:{MONO}">{esc(_call_line(c))}</span>'
                if c.invalid:
                    line += f'<div style="color:{ERROR};font-size:90%">{esc(c.invalid)}</div>'
                if c.differs:
                    body = (
                        "<div>recorded</div>"
                        + code_block(_cut(_json(c.recorded), VIEW_LIMIT))
                        + "<div>replayed</div>"
                        + code_block(_cut(_json(c.replayed), VIEW_LIMIT))
                    )
                    calls.append(_details(line, body))
                else:
                    calls.append(f"<div>{line}</div>")
            mark = f'<b style="color:{WARN}">≠</b>' if step.differs else f'<span style="color:{FG_DIM}">=</span>'
            rows.append(
                f'<div style="margin:3px 0">{mark} step {step.n}'
                f'<div style="margin-left:14px">{"".join(calls)}</div></div>'
            )
        return frame("replay", "".join(rows), title=f"replay of turn {r.turn_id}", failed=bool(r.invalid))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return safe_bundle({"text/plain": self.text(), "text/html": self.html()})
