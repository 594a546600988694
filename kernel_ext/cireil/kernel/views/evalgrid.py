"""`%cireil eval`: scenario evals from the notebook, with a grid that fills in as runs finish.

The grid is one display updated in place (a display handle): a row per scenario, a column per variant,
each cell the passes so far and, opened, the runs behind it with the checks that failed; a failed run's
recorded turn is one more click (render/evalrun.py), drawn once the eval has ended. Imported only
when `%cireil eval` runs; the evals package itself loads only then too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...render.html import BORDER, ERROR, FG, FG_DIM, MONO, OK, WARN, code, esc, frame
from .base import View

if TYPE_CHECKING:
    from ...runtime.evals.report import Cell, EvalReport
    from ...runtime.evals.worker import RunResult

_CELL = f"padding:3px 8px;border-top:1px solid {BORDER};text-align:left;vertical-align:top"
# characters of recorded-turn HTML in one grid: past it a failed run says where its turn is instead
TURNS_LIMIT = 2_000_000


@dataclass
class EvalGrid(View):
    """The grid of one eval, as far as it got; text/plain is what the CLI prints."""

    report: EvalReport
    # --min-pass as given; None: nobody set a threshold, so nothing is judged against one (a demo whose
    # point is a failing variant is not shown as a failed eval), the cells show their figures only
    min_pass: float | None = None

    def _verdict(self) -> str:
        r = self.report
        done = len(r.results)
        if done < r.total and not r.interrupted:
            return f"running: {done}/{r.total} runs finished, {r.passed} passed"
        line = r.summary()
        if done and not r.interrupted and self._below():
            line += f"; below --min-pass {self.min_pass:.0%}"
        return line

    def _below(self) -> bool:
        return self.min_pass is not None and self.report.below(self.min_pass)

    def _colour(self, cell: Cell) -> str:
        """A cell's passes in red or green only against a --min-pass given (red: even the top of its 95%
        interval is below it, as the eval's own verdict); with none, in the text's colour."""
        if self.min_pass is None:
            return FG
        return ERROR if cell.interval.high < self.min_pass else OK

    def _compared(self) -> str:
        """The paired comparison of the variants with the baseline, once the eval has ended."""
        if not self._finished():
            return ""
        return "\n".join(p for p in (self.report.comparison_text(), self.report.undecided_text()) if p)

    def text(self) -> str:
        parts = [self.report.grid_text(), self.report.failures_text(), self._compared(), self._verdict()]
        return "\n\n".join(p for p in parts if p)

    def _finished(self) -> bool:
        return self.report.interrupted or len(self.report.results) >= self.report.total

    def _turn(self, run: RunResult, room: list[int]) -> str:
        """A failed run's recorded turn, folded; drawn once the eval ends (the live grid is redrawn per run)."""
        from ...render.evalrun import turns_html

        if run.passed or run.recording is None:
            return ""
        dim = f'<div style="color:{FG_DIM};margin-left:14px">'
        if not self._finished():
            return f"{dim}its recorded turn opens here when the eval ends</div>"
        if room[0] <= 0:
            return (
                f"{dim}recorded turn not drawn: the grid holds enough of them; <code>cireil eval-show FILE "
                f"{esc(run.run_id)}</code> opens it from a <code>--json FILE</code></div>"
            )
        drawn = turns_html(run)
        room[0] -= len(drawn)
        return drawn

    def _cell(self, cell: Cell, total: int, room: list[int]) -> str:
        from ...runtime.evals.verdicts import interval_text, percent

        if not cell.runs:
            return f'<span style="color:{FG_DIM}">{f"0/{total}" if total else "0"}…</span>'
        colour = self._colour(cell)
        k = self.report.k
        # compact: "7/10 · 70% [40–89%] · flaky"; pass@k, pass^k, tokens and seconds one click away
        head = (
            f'<span style="color:{colour};font-weight:600">{cell.passed}/{len(cell.runs)}</span>'
            f" · {percent(cell.rate)} {interval_text(cell.interval)}"
            + (f' · <span style="color:{WARN}">flaky</span>' if cell.flaky else "")
            + f'<span style="color:{FG_DIM}">{f" · of {total}" if len(cell.runs) < total else ""}</span>'
        )
        figures = (
            f'<div style="color:{FG_DIM}">pass@1 {percent(cell.pass_at(1))} · pass@{k} {percent(cell.pass_at(k))}'
            f" · pass^{k} {percent(cell.pass_hat(k))} · 95% Wilson interval · {cell.tokens:,.0f} tok ·"
            f" {cell.latency_s:.1f}s per run</div>"
        )
        runs = [figures]
        for r in sorted(cell.runs, key=lambda r: r.repeat):
            mark = "✓" if r.passed else "✖"
            where = f" · kept at {esc(r.agent_dir)}" if r.agent_dir else ""
            items = "".join(f"<li>{esc(f)}</li>" for f in r.failures)
            runs.append(
                f'<div style="font-family:{MONO};margin-top:2px">{mark} #{r.repeat + 1} run {esc(r.run_id)}'
                f" · session {esc(r.session_id)} · {r.steps} steps · {r.tokens:,} tok{where}</div>"
                + (f'<ul style="margin:0;color:{ERROR}">{items}</ul>' if items else "")
                + self._turn(r, room)
            )
        return f"<details><summary>{head}</summary>{''.join(runs)}</details>"

    def html(self) -> str:
        r = self.report
        # --until-decided: a cell runs as many rounds as its comparison needs, so no "of N"
        per_cell = 0 if r.sequential else r.total // max(1, len(r.scenarios) * len(r.variants))
        head = "".join(f'<th style="{_CELL}">{esc(v)}</th>' for v in r.variants)
        rows = []
        room = [TURNS_LIMIT]
        for s in r.scenarios:
            cells = "".join(f'<td style="{_CELL}">{self._cell(r.cell(s, v), per_cell, room)}</td>' for v in r.variants)
            rows.append(f'<tr><th style="{_CELL}">{esc(s)}</th>{cells}</tr>')
        table = (
            f'<table style="border-collapse:collapse;margin:4px 0"><tr><th style="{_CELL}">scenario</th>{head}</tr>'
            f"{''.join(rows)}</table>"
        )
        compared = self._compared()
        compared_html = (
            f'<pre style="font-family:{MONO};margin:4px 0;white-space:pre-wrap">{esc(compared)}</pre>'
            if compared
            else ""
        )
        verdict = f'<div style="margin-top:4px">{esc(self._verdict())}</div>'
        title = f"eval {code(Path(r.agent).name)}"
        failed = self._below() and len(r.results) == r.total
        return frame("eval", table + compared_html + verdict, title=title, failed=failed)
