"""The eval grid judges nothing against a threshold nobody set (issue 34): with no --min-pass, a cell shows
its passes, rate and interval in the text's colour and the eval is not framed as failed; given one, a cell
is red only when even the top of its 95% interval is below it, as the eval's own verdict."""

from __future__ import annotations

import re

from cireil.kernel.views.evalgrid import EvalGrid
from cireil.render.html import BORDER, ERROR, FG, OK
from cireil.runtime.evals.report import EvalReport
from cireil.runtime.evals.worker import RunResult

# the demo's intended result (tutorial 09): the reminder scenario fails without its schedule tool, the rest pass
DEMO = {
    ("notes", "baseline"): (1, 1),
    ("notes", "no-schedule"): (1, 1),
    ("reminder", "baseline"): (1, 1),
    ("reminder", "no-schedule"): (0, 1),
    ("todo", "baseline"): (1, 1),
    ("todo", "no-schedule"): (1, 1),
}


def built(cells: dict[tuple[str, str], tuple[int, int]]) -> EvalReport:
    report = EvalReport("agent", list(dict.fromkeys(s for s, _ in cells)), list(dict.fromkeys(v for _, v in cells)))
    n = 0
    for (s, v), (passes, runs) in cells.items():
        for i in range(runs):
            report.add(RunResult(f"r{n:05d}", s, v, i, "notebook:eval", status="pass" if i < passes else "fail"))
            n += 1
    report.total = n
    return report


def cell_colours(html: str) -> list[str]:
    """The colour of each cell's passes/runs figure, in grid order."""
    return re.findall(r'<summary><span style="color:([^;]+);font-weight:600">\d+/\d+</span>', html)


def test_without_a_threshold_nothing_is_marked_failed() -> None:
    grid = EvalGrid(built(DEMO))
    html, text = grid.html(), grid.text()
    assert cell_colours(html) == [FG] * 6  # 0/1 and 1/1 alike: figures, not verdicts
    assert ERROR not in html.split("<table", 1)[0] + html.rsplit("</table>", 1)[1]  # frame and verdict
    assert f"border-left:3px solid {BORDER}" in html
    assert "min-pass" not in text and "min-pass" not in html
    assert "5/6 runs passed (83%)" in text
    assert "0/1</span> · 0% [0–79%]" in html  # the rate and its interval are still there


def test_a_threshold_given_marks_cells_and_the_eval_against_it() -> None:
    grid = EvalGrid(built(DEMO), min_pass=1.0)
    html, text = grid.html(), grid.text()
    assert cell_colours(html) == [OK, OK, OK, ERROR, OK, OK]
    assert f"border-left:3px solid {ERROR}" in html
    assert "; below --min-pass 100%" in text

    lenient = EvalGrid(built(DEMO), min_pass=0.5)  # 0/1 is [0–79%]: 50% not ruled out, so nothing is red
    assert cell_colours(lenient.html()) == [OK] * 6
    assert "below" not in lenient.text() and f"border-left:3px solid {ERROR}" not in lenient.html()
