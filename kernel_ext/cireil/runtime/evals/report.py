"""Results of an eval: the grid of pass rates (scenario x variant), JSON and JUnit XML, and comparing two runs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from .worker import RunResult

FORMAT = "cireil-eval/1"


@dataclass
class Cell:
    scenario: str
    variant: str
    runs: list[RunResult] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.runs)

    @property
    def rate(self) -> float | None:
        return self.passed / len(self.runs) if self.runs else None

    @property
    def tokens(self) -> float:
        return sum(r.tokens for r in self.runs) / len(self.runs) if self.runs else 0.0

    @property
    def latency_s(self) -> float:
        return sum(r.latency_s for r in self.runs) / len(self.runs) if self.runs else 0.0

    def label(self) -> str:
        if not self.runs:
            return "-"
        return f"{self.passed}/{len(self.runs)}"


@dataclass
class EvalReport:
    agent: str
    scenarios: list[str]
    variants: list[str]
    results: list[RunResult] = field(default_factory=list)
    total: int = 0
    interrupted: bool = False
    duration_s: float = 0.0
    jobs: int = 0

    def add(self, result: RunResult) -> None:
        self.results.append(result)

    @property
    def run_ids(self) -> set[str]:
        return {r.run_id for r in self.results}

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def pass_rate(self) -> float:
        return self.passed / len(self.results) if self.results else 0.0

    def cell(self, scenario: str, variant: str) -> Cell:
        return Cell(scenario, variant, [r for r in self.results if r.scenario == scenario and r.variant == variant])

    def failed(self) -> list[RunResult]:
        return [r for r in self.results if not r.passed]

    # -- text ---------------------------------------------------------------------------------------
    def grid_text(self) -> str:
        """Pass counts per scenario (rows) and variant (columns), with mean tokens and seconds per run."""
        head = ["scenario", *self.variants]
        rows = [head]
        for s in self.scenarios:
            row = [s]
            for v in self.variants:
                c = self.cell(s, v)
                row.append(f"{c.label()}  {c.tokens:,.0f} tok  {c.latency_s:.1f}s" if c.runs else "-")
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows)

    def summary(self) -> str:
        done = len(self.results)
        line = f"{self.passed}/{done} runs passed ({self.pass_rate:.0%})"
        if self.interrupted:
            line += f"; interrupted: {self.total - done} of {self.total} runs did not finish"
        return line

    def failures_text(self) -> str:
        out = []
        for r in sorted(self.failed(), key=lambda r: (r.scenario, r.variant, r.repeat)):
            where = f" (kept at {r.agent_dir}, session {r.session_id})" if r.agent_dir else ""
            out.append(f"FAIL {r.scenario} [{r.variant} #{r.repeat + 1}] run {r.run_id}{where}")
            out += [f"  - {f}" for f in r.failures]
        return "\n".join(out)

    # -- files --------------------------------------------------------------------------------------
    def as_dict(self) -> dict:
        return {
            "format": FORMAT,
            "agent": self.agent,
            "scenarios": self.scenarios,
            "variants": self.variants,
            "total": self.total,
            "interrupted": self.interrupted,
            "duration_s": round(self.duration_s, 3),
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "grid": [
                {
                    "scenario": s,
                    "variant": v,
                    "passed": c.passed,
                    "runs": len(c.runs),
                    "rate": c.rate,
                    "tokens": c.tokens,
                    "latency_s": c.latency_s,
                }
                for s in self.scenarios
                for v in self.variants
                for c in [self.cell(s, v)]
            ],
            "runs": [r.as_dict() for r in sorted(self.results, key=lambda r: r.run_id)],
        }

    def write_json(self, path: str | Path) -> None:
        _write(path, json.dumps(self.as_dict(), indent=2, ensure_ascii=False))

    @classmethod
    def load(cls, path: str | Path) -> EvalReport:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: cannot be read as an eval result: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f'{path}: not a cireil eval result (no "format": "{FORMAT}")')
        report = cls(data["agent"], data["scenarios"], data["variants"], total=data.get("total", 0))
        report.interrupted = data.get("interrupted", False)
        report.results = [RunResult.from_dict(r) for r in data.get("runs", [])]
        return report

    def junit(self) -> str:
        """JUnit XML: one testsuite per variant, one testcase per run (classname = scenario)."""
        suites = ET.Element("testsuites", name="cireil eval", tests=str(len(self.results)))
        for v in self.variants:
            runs = sorted((r for r in self.results if r.variant == v), key=lambda r: (r.scenario, r.repeat))
            suite = ET.SubElement(
                suites,
                "testsuite",
                name=v,
                tests=str(len(runs)),
                failures=str(sum(r.status == "fail" for r in runs)),
                errors=str(sum(r.status == "error" for r in runs)),
                time=f"{sum(r.latency_s for r in runs):.3f}",
            )
            for r in runs:
                case = ET.SubElement(
                    suite,
                    "testcase",
                    classname=r.scenario,
                    name=f"{r.scenario} #{r.repeat + 1}",
                    time=f"{r.latency_s:.3f}",
                )
                if r.status in ("fail", "error"):
                    tag = "failure" if r.status == "fail" else "error"
                    node = ET.SubElement(case, tag, message=r.failures[0] if r.failures else r.status)
                    node.text = "\n".join(r.failures)
                props = ET.SubElement(case, "properties")
                for name, value in (("run_id", r.run_id), ("session_id", r.session_id), ("tokens", r.tokens)):
                    ET.SubElement(props, "property", name=name, value=str(value))
        ET.indent(suites)
        return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"

    def write_junit(self, path: str | Path) -> None:
        _write(path, self.junit())


def _write(path: str | Path, text: str) -> None:
    """Whole or not at all: a CI step never reads half a file."""
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(target)


@dataclass
class Change:
    scenario: str
    variant: str
    before: Cell
    after: Cell

    @property
    def delta(self) -> float:
        return (self.after.rate or 0.0) - (self.before.rate or 0.0)

    def __str__(self) -> str:
        word = "worse" if self.delta < 0 else "better"
        return (
            f"scenario {self.scenario} got {word} on variant {self.variant}: "
            f"{self.before.label()} ({self.before.rate:.0%}) -> {self.after.label()} ({self.after.rate:.0%})"
        )


def compare(before: EvalReport, after: EvalReport) -> dict[str, Any]:
    """Cells whose pass rate moved, worse first; cells only one side has are listed apart."""
    changes: list[Change] = []
    only: list[str] = []
    scenarios = list(dict.fromkeys([*before.scenarios, *after.scenarios]))
    variants = list(dict.fromkeys([*before.variants, *after.variants]))
    for s in scenarios:
        for v in variants:
            a, b = before.cell(s, v), after.cell(s, v)
            if not a.runs and not b.runs:
                continue
            if not a.runs or not b.runs:
                only.append(f"scenario {s} on variant {v}: only in the {'second' if b.runs else 'first'} result")
            elif a.rate != b.rate:
                changes.append(Change(s, v, a, b))
    changes.sort(key=lambda c: c.delta)
    return {
        "worse": [c for c in changes if c.delta < 0],
        "better": [c for c in changes if c.delta > 0],
        "unmatched": only,
    }
