"""Results of an eval: the grid of pass rates (scenario x variant), JSON and JUnit XML, and comparing two runs.

Names, messages and answers come from scenario files and models, so both writers make any text carriable:
JUnit gets every character XML 1.0 cannot hold (C0 controls but tab/newline/CR, lone surrogates, U+FFFE and
U+FFFF) and the C1 controls as visible escapes (`\\x1b`); JSON is strict (no NaN or Infinity: written as
null) with lone surrogates escaped as text. A result file read back (`EvalReport.load`) is checked for shape
and size first: a hand-edited one is refused in one line naming the file and the place in it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from ..base import jsonbound
from ..base.names import escape
from ..files.safefs import FileTooLarge, NotRegularFile, read_host_file
from . import stats
from .verdicts import Comparison, compare_sides, interval_text, percent
from .worker import RunResult

FORMAT = "cireil-eval/1"
# bytes of a result file `load` reads: a run carries at most TURN_LIMIT (256 KiB) of recorded turns, so
# 100 failed runs stay ~25 MB; `cireil eval-show/eval-compare --max-mb` raise it
RESULT_LIMIT = 32 * 1024 * 1024
RESULT_DEPTH = 200  # nesting levels of a result file (recorded turns hold the model's arguments)


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

    @property
    def counts(self) -> tuple[int, int]:
        return self.passed, len(self.runs)

    @property
    def interval(self) -> stats.Interval:
        """The pass rate's 95% Wilson interval ([0, 1] before any run)."""
        return stats.wilson(self.passed, len(self.runs))

    @property
    def flaky(self) -> bool:
        return stats.flaky(self.passed, len(self.runs))

    def pass_at(self, k: int) -> float | None:
        """pass@k: the chance that at least one of k runs passes (None with fewer than k runs)."""
        return stats.pass_at_k(self.passed, len(self.runs), k) if k > 0 else None

    def pass_hat(self, k: int) -> float | None:
        """pass^k: the chance that all k runs pass (None with fewer than k runs)."""
        return stats.pass_hat_k(self.passed, len(self.runs), k) if k > 0 else None

    def stats_label(self, k: int) -> str:
        """Compact: `7/10 70% [40–89%] pass@10 100% pass^10 0% flaky`."""
        if not self.runs:
            return "-"
        line = f"{self.label()} {percent(self.rate)} {interval_text(self.interval)}"
        if k > 1:
            line += f" pass@{k} {percent(self.pass_at(k))} pass^{k} {percent(self.pass_hat(k))}"
        return line + (" flaky" if self.flaky else "")

    def stats_dict(self, k: int) -> dict[str, Any]:
        i = self.interval
        return {
            "interval": {"low": i.low, "high": i.high, "confidence": 0.95},
            "k": k,
            "pass_at_1": self.pass_at(1),
            "pass_hat_1": self.pass_hat(1),
            "pass_at_k": self.pass_at(k),
            "pass_hat_k": self.pass_hat(k),
            "flaky": self.flaky,
        }


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
    repeat: int = 0  # runs per cell asked for (--repeat; --until-decided: the round size); 0: unknown
    # the paired comparison of variants shown under the grid: against `baseline` (None: the first variant)
    baseline: str | None = None
    alpha: float = 0.05
    margin: float = 0.2
    # --until-decided: (scenario, variant) -> (the sequential rule's verdict, why that cell stopped)
    decisions: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    sequential: bool = False  # ran --until-decided: cells have as many runs as their comparison needed

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

    @property
    def k(self) -> int:
        """The k of pass@k and pass^k: the repeat count used (else the fewest runs of a cell that ran)."""
        if self.repeat:
            return self.repeat
        sizes = [len(c.runs) for s in self.scenarios for v in self.variants for c in [self.cell(s, v)] if c.runs]
        return min(sizes) if sizes else 1

    @property
    def interval(self) -> stats.Interval:
        return stats.wilson(self.passed, len(self.results))

    def below(self, min_pass: float) -> bool:
        """--min-pass fails only on evidence: when even the top of the pass rate's 95% interval is below it."""
        return bool(self.results) and self.interval.high < min_pass

    def baseline_variant(self) -> str:
        if self.baseline is not None:
            return self.baseline
        return self.variants[0] if self.variants else ""

    def comparisons(self) -> list[Comparison]:
        """Each variant against the baseline variant, scenario by scenario (empty with one variant)."""
        base = self.baseline_variant()
        if base not in self.variants:
            return []
        out = []
        for v in self.variants:
            if v == base:
                continue
            cells = {s: (self.cell(s, base).counts, self.cell(s, v).counts) for s in self.scenarios}
            sequential = {s: d for (s, var), d in self.decisions.items() if var == v}
            out.append(compare_sides(base, v, cells, alpha=self.alpha, margin=self.margin, sequential=sequential))
        return out

    def comparison_text(self) -> str:
        return "\n\n".join(c.text() for c in self.comparisons())

    def undecided_text(self) -> str:
        """--until-decided: the cells that stayed undecided, and why their sampling stopped."""
        left = [(s, v, why) for (s, v), (word, why) in self.decisions.items() if word == stats.UNDECIDED]
        if not left:
            return "every cell decided" if self.decisions else ""
        return "undecided: " + "; ".join(f"{s} on {v} (stopped: {why})" for s, v, why in left)

    # -- text ---------------------------------------------------------------------------------------
    def grid_text(self) -> str:
        """Per scenario (rows) and variant (columns): passes/runs, rate, its 95% Wilson interval, pass@k, pass^k, a
        flaky mark, mean tokens and seconds per run."""
        head = ["scenario", *self.variants]
        rows = [head]
        k = self.k
        for s in self.scenarios:
            row = [s]
            for v in self.variants:
                c = self.cell(s, v)
                row.append(f"{c.stats_label(k)}  {c.tokens:,.0f} tok  {c.latency_s:.1f}s" if c.runs else "-")
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows)

    def summary(self) -> str:
        done = len(self.results)
        line = f"{self.passed}/{done} runs passed ({self.pass_rate:.0%})"
        if done:
            line += f", 95% interval {interval_text(self.interval)}"
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
            "interval": {"low": self.interval.low, "high": self.interval.high, "confidence": 0.95},
            "repeat": self.repeat,
            "grid": [
                {
                    "scenario": s,
                    "variant": v,
                    "passed": c.passed,
                    "runs": len(c.runs),
                    "rate": c.rate,
                    "tokens": c.tokens,
                    "latency_s": c.latency_s,
                    **c.stats_dict(self.k),
                }
                for s in self.scenarios
                for v in self.variants
                for c in [self.cell(s, v)]
            ],
            "comparisons": [c.as_dict() for c in self.comparisons()],
            **(
                {
                    "until_decided": [
                        {"scenario": s, "variant": v, "verdict": word, "stopped": why}
                        for (s, v), (word, why) in self.decisions.items()
                    ]
                }
                if self.decisions
                else {}
            ),
            "runs": [r.as_dict() for r in sorted(self.results, key=lambda r: r.run_id)],
        }

    def json_text(self) -> str:
        """The result as strict JSON (what `--json` writes)."""
        return json.dumps(json_safe(self.as_dict()), indent=2, ensure_ascii=False, allow_nan=False)

    def write_json(self, path: str | Path) -> None:
        _write(path, self.json_text())

    @classmethod
    def load(cls, path: str | Path, *, max_bytes: int = RESULT_LIMIT) -> EvalReport:
        """A result file written by `cireil eval --json`; ValueError (one line: the file, where in it, what is
        wrong) for anything else: unreadable, too big, not JSON, or not of the shape cireil writes."""
        data = _read_result(path, max_bytes)
        _check_result(data, str(path))
        report = cls(data["agent"], data["scenarios"], data["variants"], total=data.get("total", 0))
        report.interrupted = data.get("interrupted", False)
        report.repeat = data.get("repeat", 0)
        report.decisions = {
            (d["scenario"], d["variant"]): (d["verdict"], d["stopped"]) for d in data.get("until_decided", [])
        }
        report.results = [
            RunResult.from_dict({**r, "latency_s": r.get("latency_s") or 0.0}) for r in data.get("runs", [])
        ]
        return report

    def junit(self) -> str:
        """JUnit XML: one testsuite per variant, one testcase per run (classname = scenario); every attribute
        and text made carriable by XML 1.0 (`xml_text`)."""
        suites = ET.Element("testsuites", name="cireil eval", tests=str(len(self.results)))
        k = self.k
        cells = {(s, v): self._cell_properties(self.cell(s, v), k) for s in self.scenarios for v in self.variants}
        for v in self.variants:
            runs = sorted((r for r in self.results if r.variant == v), key=lambda r: (r.scenario, r.repeat))
            suite = ET.SubElement(
                suites,
                "testsuite",
                name=xml_text(v),
                tests=str(len(runs)),
                failures=str(sum(r.status == "fail" for r in runs)),
                errors=str(sum(r.status == "error" for r in runs)),
                time=_seconds(sum(_finite(r.latency_s) for r in runs)),
            )
            for r in runs:
                case = ET.SubElement(
                    suite,
                    "testcase",
                    classname=xml_text(r.scenario),
                    name=xml_text(f"{r.scenario} #{r.repeat + 1}"),
                    time=_seconds(r.latency_s),
                )
                if r.status in ("fail", "error"):
                    tag = "failure" if r.status == "fail" else "error"
                    node = ET.SubElement(case, tag, message=xml_text(r.failures[0] if r.failures else r.status))
                    node.text = xml_text("\n".join(r.failures))
                props = ET.SubElement(case, "properties")
                for name, value in (("run_id", r.run_id), ("session_id", r.session_id), ("tokens", r.tokens)):
                    ET.SubElement(props, "property", name=name, value=xml_text(str(value)))
                # the cell's figures on each of its runs: a CI page shows a test case, not a grid
                for name, value in cells.get((r.scenario, r.variant), []):
                    ET.SubElement(props, "property", name=name, value=xml_text(value))
        ET.indent(suites)
        return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"

    @staticmethod
    def _cell_properties(cell: Cell, k: int) -> list[tuple[str, str]]:
        if not cell.runs:
            return []

        def num(value: float | None) -> str:
            return "" if value is None else f"{value:.4f}"

        i = cell.interval
        return [
            ("cell_passed", str(cell.passed)),
            ("cell_runs", str(len(cell.runs))),
            ("pass_rate", num(cell.rate)),
            ("interval_low", num(i.low)),
            ("interval_high", num(i.high)),
            ("k", str(k)),
            ("pass_at_k", num(cell.pass_at(k))),
            ("pass_hat_k", num(cell.pass_hat(k))),
            ("flaky", "true" if cell.flaky else "false"),
        ]

    def write_junit(self, path: str | Path) -> None:
        _write(path, self.junit())


# what XML 1.0 cannot carry (C0 but tab/newline/CR, surrogates, U+FFFE/FFFF), and DEL and the C1 controls,
# which it may carry but a terminal or CI page showing the report would act on
_NOT_XML = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _finite(value: Any) -> float:
    return value if isinstance(value, int | float) and math.isfinite(value) else 0.0


def _seconds(value: Any) -> str:
    # a JUnit reader parses time as a number: never "nan" or "inf"
    return f"{_finite(value):.3f}"


def xml_text(text: str) -> str:
    """`text` with every character XML 1.0 cannot carry (and DEL, C1) written as a visible escape (`\\x1b`)."""
    return _NOT_XML.sub(_xml_escape, text)


def json_safe(value: Any, depth: int = 0) -> Any:
    """`value` as strict JSON can carry it: NaN and infinities as null, lone surrogates escaped as text
    (`\\udc80`: UTF-8 cannot encode them), too deep nesting cut."""
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bool | int) or value is None:
        return value
    if depth > RESULT_DEPTH:
        return "[nested too deep]"
    if isinstance(value, dict):
        return {escape(str(k)): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, depth + 1) for v in value]
    return escape(str(value))


def _read_result(path: str | Path, max_bytes: int) -> Any:
    where = str(path)
    try:
        # regular files only and never blocking: a FIFO named as the result must not hang the command
        raw = read_host_file(path, max_bytes)
    except NotRegularFile:
        raise ValueError(f"{where}: not a regular file: give the JSON file `cireil eval --json` wrote") from None
    except FileTooLarge as exc:
        size = f"{exc.size:,} bytes, over" if exc.size is not None else "over"
        raise ValueError(
            f"{where}: {size} the {max_bytes:,}-byte limit for an eval result"
            " (raise it with --max-mb if the file is one cireil wrote)"
        ) from None
    except OSError as exc:
        raise ValueError(f"{where}: cannot be read as an eval result: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ValueError(f"{where}: line {line}: not UTF-8 text, so not an eval result cireil wrote") from None
    try:
        return jsonbound.loads(text, max_depth=RESULT_DEPTH)
    except jsonbound.TooDeep:
        raise ValueError(f"{where}: nested deeper than {RESULT_DEPTH} levels: not an eval result") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "NaN" if isinstance(value, float) and math.isnan(value) else "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_measure(value: Any) -> bool:
    return value is None or _is_number(value)  # null: what the writer puts for a NaN


def _is_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


_TOP: dict[str, tuple[Any, str, bool]] = {  # key: (test, what it must be, required)
    "agent": (lambda v: isinstance(v, str), "a string", True),
    "scenarios": (_is_strings, "an array of strings", True),
    "variants": (_is_strings, "an array of strings", True),
    "total": (_is_count, "a whole number, 0 or more", False),
    "interrupted": (lambda v: isinstance(v, bool), "true/false", False),
    "duration_s": (_is_measure, "a finite number or null", False),
    "passed": (_is_count, "a whole number, 0 or more", False),
    "pass_rate": (_is_measure, "a finite number or null", False),
    "grid": (lambda v: isinstance(v, list), "an array", False),
    "runs": (lambda v: isinstance(v, list), "an array", False),
    "repeat": (_is_count, "a whole number, 0 or more", False),
    "until_decided": (
        lambda v: (
            isinstance(v, list)
            and all(isinstance(d, dict) and all(isinstance(d.get(k), str) for k in _DECISION) for d in v)
        ),
        "an array of objects with scenario, variant, verdict and stopped strings",
        False,
    ),
}
_DECISION = ("scenario", "variant", "verdict", "stopped")
_STATUSES = ("pass", "fail", "error", "interrupted")
_RUN: dict[str, tuple[Any, str, bool]] = {
    "run_id": (lambda v: isinstance(v, str) and v != "", "a non-empty string", True),
    "scenario": (lambda v: isinstance(v, str), "a string", True),
    "variant": (lambda v: isinstance(v, str), "a string", True),
    "repeat": (_is_count, "a whole number, 0 or more", True),
    "session_id": (lambda v: isinstance(v, str), "a string", True),
    "status": (lambda v: v in _STATUSES, f"one of {', '.join(_STATUSES)}", False),
    "failures": (_is_strings, "an array of strings", False),
    "error": (lambda v: v is None or isinstance(v, str), "a string or null", False),
    "tokens": (_is_count, "a whole number, 0 or more", False),
    "latency_s": (_is_measure, "a finite number or null", False),
    "steps": (_is_count, "a whole number, 0 or more", False),
    "calls": (lambda v: isinstance(v, list) and all(isinstance(c, dict) for c in v), "an array of objects", False),
    "answer": (lambda v: isinstance(v, str), "a string", False),
    "ended": (lambda v: isinstance(v, str), "a string", False),
    "model": (lambda v: isinstance(v, str), "a string", False),
    "agent_dir": (lambda v: v is None or isinstance(v, str), "a string or null", False),
    "recording": (lambda v: v is None or isinstance(v, dict), "an object or null", False),
}


_CELL: dict[str, tuple[Any, str, bool]] = {
    "scenario": (lambda v: isinstance(v, str), "a string", False),
    "variant": (lambda v: isinstance(v, str), "a string", False),
    "passed": (_is_count, "a whole number, 0 or more", False),
    "runs": (_is_count, "a whole number, 0 or more", False),
    "rate": (_is_measure, "a finite number or null", False),
    "tokens": (_is_measure, "a finite number or null", False),
    "latency_s": (_is_measure, "a finite number or null", False),
}


def _check_fields(data: dict, fields: dict[str, tuple[Any, str, bool]], where: str, prefix: str) -> None:
    for key, (test, what, required) in fields.items():
        if key not in data:
            if required:
                raise ValueError(f"{where}: {prefix}{key}: missing (expected {what})")
            continue
        if not test(data[key]):
            raise ValueError(f"{where}: {prefix}{key}: expected {what}, not {_kind(data[key])}")


def _check_result(data: Any, where: str) -> None:
    """The shape `as_dict` writes; the first thing that differs raised as one line with its JSON path."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f'{where}: not a cireil eval result (no "format": "{FORMAT}")')
    _check_fields(data, _TOP, where, "")
    for n, cell in enumerate(data.get("grid", [])):
        if not isinstance(cell, dict):
            raise ValueError(f"{where}: grid[{n}]: expected an object, not {_kind(cell)}")
        _check_fields(cell, _CELL, where, f"grid[{n}].")
    for n, run in enumerate(data.get("runs", [])):
        if not isinstance(run, dict):
            raise ValueError(f"{where}: runs[{n}]: expected an object, not {_kind(run)}")
        _check_fields(run, _RUN, where, f"runs[{n}].")
        for c, call in enumerate(run.get("calls", [])):
            if not isinstance(call.get("name", ""), str):
                raise ValueError(f"{where}: runs[{n}].calls[{c}].name: expected a string, not {_kind(call['name'])}")
        recording = run.get("recording")
        if recording and not (
            isinstance(recording.get("problem"), str)
            or (isinstance(recording.get("turns", []), list) and isinstance(recording.get("blobs", {}), dict))
        ):
            raise ValueError(f"{where}: runs[{n}].recording: not recorded turns as cireil packs them")


def _write(path: str | Path, text: str) -> None:
    """Whole or not at all: a CI step never reads half a file."""
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(target)


@dataclass
class FileComparison:
    """Two result files compared, per variant both ran (or their one variant each, whatever its name)."""

    comparisons: list[Comparison]
    unmatched: list[str]  # scenarios (and variants) only one file has

    @property
    def regressed(self) -> bool:
        return any(c.regressed for c in self.comparisons)

    def text(self) -> str:
        parts = [c.text() for c in self.comparisons]
        if self.unmatched:
            parts.append("\n".join(self.unmatched))
        return "\n\n".join(parts)


def compare(before: EvalReport, after: EvalReport, *, alpha: float = 0.05, margin: float = 0.2) -> FileComparison:
    """`after` against `before`, scenario by scenario, for each variant both files ran (stats.compare);
    what only one file has is listed apart."""
    only: list[str] = []
    for s in before.scenarios:
        if s not in after.scenarios:
            only.append(f"scenario {s}: only in the first result")
    for s in after.scenarios:
        if s not in before.scenarios:
            only.append(f"scenario {s}: only in the second result")
    shared = [s for s in before.scenarios if s in after.scenarios]
    pairs = [(v, v) for v in before.variants if v in after.variants]
    if not pairs and len(before.variants) == 1 and len(after.variants) == 1:
        pairs = [(before.variants[0], after.variants[0])]  # one variant each: compared whatever their names
    else:
        only += [f"variant {v}: only in the first result" for v in before.variants if v not in after.variants]
        only += [f"variant {v}: only in the second result" for v in after.variants if v not in before.variants]
    comparisons = []
    for bv, av in pairs:
        cells = {s: (before.cell(s, bv).counts, after.cell(s, av).counts) for s in shared}
        label = bv if bv == av else f"{bv} → {av}"
        comparisons.append(
            compare_sides("the second result", "the first", cells, alpha=alpha, margin=margin, variant=label)
        )
    return FileComparison(comparisons, only)
