"""Views of recorded turns: each model call folded open to its request and its diff against the one
before (under a finished turn), `%cireil usage`, and `%cireil prompt --diff`.

Every text from a recording (messages, tool results, model output) is escaped; big requests are cut
in the view, never in the recording (`agent.turns()[-1].steps[i].request` has all of it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..runtime.base.names import escape
from .html import BORDER, FG_DIM, MONO, WARN, code_block, esc, frame
from .safe import safe_bundle, visible

if TYPE_CHECKING:
    from ..runtime.recorder.diff import StepDiff
    from ..runtime.recorder.model import RecordedStep, RecordedTurn, ToolCallRecord
    from ..runtime.recorder.settings import Price

VIEW_LIMIT = 20_000  # characters of one message or body shown; the rest is named, not drawn
STEP_LIMIT = 6_000  # a request under a turn: a 50-step turn stays a few hundred KB of HTML


def _cut(text: str, limit: int = VIEW_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… {len(text) - limit:,} more characters (the recording keeps all of them)"


def _details(summary: str, body: str) -> str:
    return (
        f'<details style="margin:3px 0;border-left:2px solid {BORDER};padding-left:6px">'
        f'<summary style="cursor:pointer">{summary}</summary>{body}</details>'
    )


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _tokens(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


# step mode: how a call the person reviewed is marked (an approved call is not: it ran as asked)
REVIEW_MARKS = {"edited": "edited", "skipped": "skipped", "mocked": "mocked", "refused": "refused by the hook"}


def _review_mark(call: ToolCallRecord | None) -> str:
    mark = REVIEW_MARKS.get(call.action or "") if call is not None else None
    return f" ({mark})" if mark else ""


def step_summary(step: RecordedStep) -> str:
    """One line: tokens in/out, time to first token, latency, what the model called (and, in step mode,
    which calls the person edited, skipped or mocked)."""
    ran = {c.position: c for c in step.calls}
    calls = ", ".join((c.get("name") or "?") + _review_mark(ran.get(i)) for i, c in enumerate(step.tool_calls))
    what = f"retried: {step.reply.get('error', '')}" if step.retried else (f"called {calls}" if calls else "no call")
    return (
        f"step {step.n} · {_tokens(step.tokens_in)} in / {_tokens(step.tokens_out)} out · "
        f"first token {_seconds(step.ttft)} · {_seconds(step.latency)} · {what}"
    )


def call_line(call: ToolCallRecord, limit: int = 200) -> str:
    """A tool call of a step as one line: name, arguments, and whether it succeeded."""
    arguments = " ".join(json.dumps(call.arguments, ensure_ascii=False, default=str).split())
    if len(arguments) > limit:
        arguments = arguments[: limit - 1] + "…"
    outcome = "ok" if call.success else f"failed: {' '.join(str(call.result.get('error') or '').split())[:limit]}"
    return f"→ {call.name} {arguments}: {outcome}{_review_mark(call)}"


def diff_html(diff: StepDiff) -> str:
    if diff.empty:
        return f'<div style="color:{FG_DIM}">(no change)</div>'
    rows = []
    for m in diff.added:
        rows.append(_details(f"+ added · {esc(diff.kind(m))}", code_block(_cut(_json(m)))))
    for m in diff.removed:
        rows.append(_details(f"− left the window · {esc(diff.kind(m))}", code_block(_cut(_json(m)))))
    for c in diff.changed:
        what = "stubbed by pruning" if c.stubbed else "re-rendered" if c.kind == "opened files" else "changed"
        body = "<div>before</div>" + code_block(_cut(_json(c.before))) + "<div>after</div>"
        rows.append(_details(f"~ {esc(c.kind)} {what}", body + code_block(_cut(_json(c.after)))))
    for name in diff.tools_disabled:
        rows.append(f'<div style="color:{WARN}">✕ tool disabled by the breaker: <code>{esc(name)}</code></div>')
    for name in diff.tools_enabled:
        rows.append(f"<div>+ tool offered again: <code>{esc(name)}</code></div>")
    return "".join(rows)


def calls_html(step: RecordedStep) -> str:
    """Each tool call of a step: what ran, its result, and in step mode what the person did."""
    rows = []
    for call in step.calls:
        body = ""
        if call.action == "edited":
            body += "<div>the model asked for</div>" + code_block(_cut(_json((call.review or {}).get("asked"))))
            body += "<div>ran with (edited)</div>"
        body += code_block(_cut(_json(call.arguments)))
        body += f"<div>{'result given instead of running it' if call.action in ('skipped', 'mocked') else 'result'}"
        body += "</div>" + code_block(_cut(_json(call.result)))
        marked = "✓" if call.success else "✖"
        summary = f'{marked} <span style="font-family:{MONO}">{esc(call.name)}</span>{esc(_review_mark(call))}'
        rows.append(_details(summary, body))
    return "".join(rows)


NO_DIFF = "(no diff: a recorded request is not in the shape cireil writes; the file was edited)"


def _diff(step: RecordedStep, prev: RecordedStep | None) -> StepDiff | None:
    """The step's diff, or None when a hand-edited request has shapes the diff cannot read."""
    try:
        return step.diff(prev)
    except (AttributeError, TypeError, KeyError, ValueError):
        return None


def _plain(text: str) -> str:
    """Text for a terminal or text/plain: model text, tool and session names carry no live control sequence."""
    return visible(escape(text))


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _rebuilt(turn: Any) -> str:
    """What a reconstructed turn (rebuilt from sessions.db, runtime/attach/reconstruct.py) says beside its id."""
    if getattr(turn, "reconstructed", False) is True:
        return " (reconstructed from sessions.db: each request rebuilt by cireil, not the bytes that were sent)"
    return ""


@dataclass
class StepsView:
    """Under a finished turn: every model call, folded; open one for its diff and its exact request."""

    turn: RecordedTurn
    python: str = "agent.turns()[-1].steps[i]"  # where the same steps are, from Python

    def text(self) -> str:
        lines = [f"recorded turn {self.turn.id}: {len(self.turn.steps)} model calls{_rebuilt(self.turn)}"]
        lines += [f"  ⚠ {p}" for p in self.turn.problems]
        prev = None
        for step in self.turn.steps:
            lines.append("  " + step_summary(step))
            diff = _diff(step, prev)
            lines += ["    " + line for line in (diff.lines()[:20] if diff is not None else [NO_DIFF])]
            lines += ["    " + call_line(c) for c in step.calls]
            prev = step
        # also printed by `cireil eval-show` (render/evalrun.py), where no bundle filter runs
        return _plain("\n".join(lines))

    def html(self) -> str:
        rows = []
        prev = None
        sent = "request as cireil rebuilds it, not as sent" if _rebuilt(self.turn) else "request as POSTed"
        for step in self.turn.steps:
            diff = _diff(step, prev)
            body = _cut(_json(step.request), STEP_LIMIT)
            reply = _cut(_json(step.reply))
            shown = diff_html(diff) if diff is not None else f'<div style="color:{WARN}">{esc(NO_DIFF)}</div>'
            inner = (
                _details(f"diff against {'step ' + str(prev.n) if prev else 'nothing (first call)'}", shown)
                + (_details(f"tool calls ({len(step.calls)})", calls_html(step)) if step.calls else "")
                + _details(f"{sent} ({len(step.request.get('messages', []))} messages)", code_block(body))
                + _details("reply as the model sent it", code_block(reply))
            )
            rows.append(_details(f'<span style="font-family:{MONO}">{esc(step_summary(step))}</span>', inner))
            prev = step
        head = (
            f'<div style="color:{FG_DIM};font-size:90%">recorded turn {self.turn.id}{esc(_rebuilt(self.turn))} · '
            f"<code>{esc(self.python)}</code> has each call from Python</div>"
        )
        head += "".join(f'<div style="color:{WARN}">⚠ {esc(p)}</div>' for p in self.turn.problems)
        return frame("recording", head + "".join(rows), title=f"model calls ({len(rows)})")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return safe_bundle({"text/plain": self.text(), "text/html": self.html()})


@dataclass
class PromptDiffView:
    """`%cireil prompt --diff`: the next request against the last one sent in this session."""

    diff: StepDiff
    last: str  # which recorded step it compares with

    def text(self) -> str:
        return _plain(f"next request vs {self.last}:\n{self.diff}")

    def html(self) -> str:
        head = f'<div style="color:{FG_DIM};font-size:90%">next request vs {esc(self.last)}</div>'
        return frame("prompt-diff", head + diff_html(self.diff), title="what the next request changes")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return safe_bundle({"text/plain": self.text(), "text/html": self.html()})


def cost(usage: dict, price: Price | None) -> float | None:
    if price is None:
        return None
    return (usage.get("prompt_tokens", 0) * price.input + usage.get("completion_tokens", 0) * price.output) / 1e6


@dataclass
class UsageView:
    """`%cireil usage`: tokens, model time and (with prices in config/cireil.toml) cost, per turn and in total."""

    turns: list[RecordedTurn]
    prices: dict[str, Price]
    scope: str

    def rows(self) -> list[dict]:
        out = []
        for t in self.turns:
            usage = t.usage or {}
            out.append(
                {
                    "turn": t.id,
                    "session": t.session_id,
                    "when": t.when,
                    "model": t.model,
                    "steps": t.step_count,
                    "in": usage.get("prompt_tokens", 0),
                    "out": usage.get("completion_tokens", 0),
                    "seconds": t.seconds or 0.0,
                    "cost": cost(usage, self.prices.get(t.model)),
                }
            )
        return out

    def totals(self) -> dict:
        rows = self.rows()
        costs = [r["cost"] for r in rows]
        return {
            "turns": len(rows),
            "steps": sum(r["steps"] for r in rows),
            "in": sum(r["in"] for r in rows),
            "out": sum(r["out"] for r in rows),
            "seconds": sum(r["seconds"] for r in rows),
            "cost": sum(c for c in costs if c is not None) if any(c is not None for c in costs) else None,
            "unpriced": sorted({r["model"] for r in rows if r["cost"] is None}),
        }

    @staticmethod
    def _money(value: float | None) -> str:
        return "–" if value is None else f"${value:.4f}"

    def text(self) -> str:
        total = self.totals()
        lines = [f"usage of {self.scope}: {total['turns']} recorded turns"]
        for r in self.rows():
            lines.append(
                f"  turn {r['turn']:>4} {r['when']} {r['session']} {r['model']}: {r['steps']} steps, "
                f"{r['in']:,} in / {r['out']:,} out, {r['seconds']:.1f} s, {self._money(r['cost'])}"
            )
        lines.append(
            f"total: {total['steps']} steps, {total['in']:,} in / {total['out']:,} out, "
            f"{total['seconds']:.1f} s, {self._money(total['cost'])}"
        )
        if total["unpriced"]:
            lines.append(f'no price for: {", ".join(total["unpriced"])} ([prices."MODEL"] in config/cireil.toml)')
        return _plain("\n".join(lines))

    def html(self) -> str:
        total = self.totals()
        cells = 'style="padding:1px 8px;text-align:right"'
        head = "".join(
            f"<th {cells}>{h}</th>" for h in ("turn", "when", "session", "model", "steps", "in", "out", "time", "cost")
        )
        body = "".join(
            "<tr>"
            + "".join(
                f"<td {cells}>{esc(v)}</td>"
                for v in (
                    r["turn"],
                    r["when"],
                    r["session"],
                    r["model"],
                    r["steps"],
                    f"{r['in']:,}",
                    f"{r['out']:,}",
                    f"{r['seconds']:.1f} s",
                    self._money(r["cost"]),
                )
            )
            + "</tr>"
            for r in self.rows()
        )
        foot = (
            f"<tr style='font-weight:600'><td {cells}>total</td><td {cells}></td><td {cells}></td><td {cells}></td>"
            f"<td {cells}>{total['steps']}</td><td {cells}>{total['in']:,}</td><td {cells}>{total['out']:,}</td>"
            f"<td {cells}>{total['seconds']:.1f} s</td><td {cells}>{esc(self._money(total['cost']))}</td></tr>"
        )
        note = ""
        if total["unpriced"]:
            note = (
                f'<div style="color:{FG_DIM};font-size:90%">no price for {esc(", ".join(total["unpriced"]))}: '
                'add <code>[prices."MODEL"] input = …, output = …</code> (USD per million tokens) to '
                "<code>config/cireil.toml</code></div>"
            )
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}{foot}</tbody></table>"
        return frame("usage", table + note, title=f"usage of {esc(self.scope)}")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return safe_bundle({"text/plain": self.text(), "text/html": self.html()})
