"""One eval run opened: the checks that failed and the turns the run recorded, in the steps view
`%cireil steps` shows. The notebook grid folds a failed run open to `turns_html`; `cireil eval-show`
prints `run_text`. Text from the recording is the model's and the tools': escaped, cut by StepsView.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..runtime.base.controls import visible
from .html import FG_DIM, MONO, WARN, esc
from .recording import StepsView

if TYPE_CHECKING:
    from ..runtime.evals.worker import RunResult

PYTHON = "report.results[k].turns[i].steps[j]"  # report: run_matrix's, or EvalReport.load(FILE) of a --json file


def run_heading(run: RunResult) -> str:
    mark = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}.get(run.status, run.status.upper())
    return (
        f"{mark} {run.scenario} [{run.variant} #{run.repeat + 1}] run {run.run_id} · session {run.session_id} · "
        f"{run.steps} steps · {run.tokens:,} tok"
    )


def _turn_title(n: int, text: str, ended: str) -> str:
    said = " ".join(text.split())
    said = said if len(said) <= 80 else said[:79] + "…"
    return f"turn {n} · {said!r} · ended {ended}"


def run_text(run: RunResult) -> str:
    """The run as a terminal shows it: heading, failed checks, each recorded turn's model calls."""
    lines = [run_heading(run)]
    lines += [f"  - {f}" for f in run.failures]
    if run.passed:
        lines += ["", "passed: only failed runs keep their recorded turns"]
    elif run.recording is None:
        lines += ["", "no recorded turn: the run did not get as far as a turn"]
    elif "problem" in run.recording:
        lines += ["", f"no recorded turn: {run.recording['problem']}"]
    elif run.truncated:
        lines += ["", f"note: {run.truncated}"]
    for n, turn in enumerate(run.turns, 1):
        lines += ["", _turn_title(n, turn.text, turn.ended), StepsView(turn).text()]
    return visible("\n".join(lines))


def turns_html(run: RunResult) -> str:
    """A failed run's recorded turns, folded: one click opens them (each step folds further, as ever)."""
    turns = run.turns
    if not turns:
        why = (run.recording or {}).get("problem")
        return f'<div style="color:{FG_DIM}">no recorded turn: {esc(why)}</div>' if why else ""
    steps = sum(len(t.steps) for t in turns)
    note = f'<div style="color:{WARN}">{esc(run.truncated)}</div>' if run.truncated else ""
    body = "".join(
        f'<div style="font-family:{MONO};margin-top:4px">{esc(_turn_title(n, t.text, t.ended))}</div>'
        + StepsView(t, PYTHON).html()
        for n, t in enumerate(turns, 1)
    )
    label = "recorded turn" if len(turns) == 1 else f"recorded turns ({len(turns)})"
    return (
        '<details style="margin:2px 0 4px 14px"><summary style="cursor:pointer">'
        f"{label} · {steps} model call{'' if steps == 1 else 's'}</summary>{note}{body}</details>"
    )
