"""Verdicts of a paired comparison: one side (a baseline variant, or an earlier result file) against another,
scenario by scenario and overall, as text and as JSON. The statistics are stats.py's; this module only
arranges (passes, runs) counts for it and says what came out, "not enough evidence" with the runs it would
take included. Plain counts in, so both the report (variants of one eval) and eval-compare (two files) use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import stats

Counts = tuple[int, int]  # (passes, runs)

# why a cell of `--until-decided` stopped
DECIDED, MAX_RUNS, BUDGET, INTERRUPTED = "decided", "max-runs", "budget", "interrupted"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def interval_text(interval: stats.Interval) -> str:
    return f"[{interval.low * 100:.0f}–{interval.high * 100:.0f}%]"


def points(value: float) -> str:
    return f"{value * 100:+.0f}"


def effect_text(v: stats.Verdict) -> str:
    return f"{points(v.effect)} points [{points(v.interval.low)}, {points(v.interval.high)}]"


def _p(p: float) -> str:
    return f"p {p:.3f}" if p >= 0.001 else "p < 0.001"


@dataclass
class Comparison:
    """`after` against `before` (e.g. a variant against the baseline) over the scenarios both ran."""

    before: str
    after: str
    cells: dict[str, tuple[Counts, Counts]]
    scenarios: dict[str, stats.Verdict]
    overall: stats.Verdict | None
    alpha: float
    margin: float
    # --until-decided: scenario -> (the sequential rule's verdict, why its sampling stopped)
    sequential: dict[str, tuple[str, str]] = field(default_factory=dict)
    variant: str | None = None  # two result files: the variant compared

    def verdict_of(self, scenario: str) -> str:
        if scenario in self.sequential:
            return self.sequential[scenario][0]
        return self.scenarios[scenario].verdict

    @property
    def worse(self) -> list[str]:
        return [s for s in self.scenarios if self.verdict_of(s) == stats.WORSE]

    @property
    def regressed(self) -> bool:
        """A significant regression: a scenario worse (Holm-adjusted), or the overall verdict worse."""
        return bool(self.worse) or (self.overall is not None and self.overall.verdict == stats.WORSE)

    @property
    def undecided(self) -> list[str]:
        return [s for s in self.scenarios if self.verdict_of(s) == stats.UNDECIDED]

    def lines(self) -> list[str]:
        on = f" on variant {self.variant}" if self.variant else ""
        head = (
            f"{self.after} vs {self.before}{on}, scenario by scenario "
            f"(alpha {self.alpha:g}, Holm-adjusted; no difference = within ±{self.margin * 100:.0f} points):"
        )
        rows: list[list[str]] = []
        for s, v in self.scenarios.items():
            (bp, bn), (ap, an) = self.cells[s]
            word = self.verdict_of(s)
            note = _p(v.p)
            if s in self.sequential:
                why = self.sequential[s][1]
                note += f"; stopped: {why} after {an} runs" if why != DECIDED else f"; decided after {an} runs"
            if word == stats.UNDECIDED and v.runs_to_decide:
                note += f"; about {v.runs_to_decide} more runs each would decide"
            rows.append([s, f"{bp}/{bn} → {ap}/{an}", word, effect_text(v), note])
        out = [head]
        if rows:
            widths = [max(len(r[i]) for r in rows) for i in range(4)]
            out += [
                "  " + "  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=False)) + "  " + r[4] for r in rows
            ]
        out.append(self.overall_line())
        return out

    def overall_line(self) -> str:
        o = self.overall
        if o is None:
            return "overall: no scenario ran on both sides"
        n = len(self.scenarios)
        line = f"overall: {o.verdict}: {effect_text(o)} ({_p(o.p)}, over {n} scenario{'' if n == 1 else 's'})"
        if o.verdict == stats.UNDECIDED and o.runs_to_decide:
            line += f"; about {o.runs_to_decide} more runs each would decide"
        return line

    def text(self) -> str:
        return "\n".join(self.lines())

    def as_dict(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "after": self.after,
            "variant": self.variant,
            "alpha": self.alpha,
            "margin": self.margin,
            "scenarios": [
                {
                    "scenario": s,
                    "before": {"passed": self.cells[s][0][0], "runs": self.cells[s][0][1]},
                    "after": {"passed": self.cells[s][1][0], "runs": self.cells[s][1][1]},
                    **verdict_dict(v),
                    "verdict": self.verdict_of(s),
                    **({"stopped": self.sequential[s][1]} if s in self.sequential else {}),
                }
                for s, v in self.scenarios.items()
            ],
            "overall": verdict_dict(self.overall) if self.overall else None,
            "regressed": self.regressed,
        }


def verdict_dict(v: stats.Verdict) -> dict[str, Any]:
    return {
        "verdict": v.verdict,
        "effect": v.effect,
        "interval": {"low": v.interval.low, "high": v.interval.high},
        "p": v.p,
        "runs_to_decide": v.runs_to_decide,
    }


def compare_sides(
    before: str,
    after: str,
    cells: Mapping[str, tuple[Counts, Counts]],
    *,
    alpha: float = 0.05,
    margin: float = 0.2,
    sequential: Mapping[str, tuple[str, str]] | None = None,
    variant: str | None = None,
) -> Comparison:
    """Scenarios with runs on both sides compared (stats.compare: exact per scenario, Holm across them,
    paired over scenarios overall); scenarios missing a side are left out (the caller names them)."""
    both = {s: c for s, c in cells.items() if c[0][1] and c[1][1]}
    if both:
        per, overall = stats.compare(both, alpha=alpha, margin=margin)
    else:
        per, overall = {}, None
    return Comparison(
        before,
        after,
        dict(both),
        {s: per[s] for s in both},
        overall,
        alpha,
        margin,
        {s: d for s, d in (sequential or {}).items() if s in both},
        variant,
    )
