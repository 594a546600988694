"""`cireil eval`, `cireil eval-compare` and `cireil eval-show`: what the CLI prints, which status it exits with.

Exit status, on evidence only: 0 unless the data show a failure; 1 when even the top of the pass rate's 95%
Wilson interval is below --min-pass (or, for eval-compare, when a scenario got significantly worse after Holm's
correction, or the overall paired verdict is "worse"); "not enough evidence" is 0, with the runs it would take
to decide; 2 for a usage or configuration error (every problem as FILE:LINE: message); 130 when interrupted
(the runs that finished are still reported and written). eval-show exits 0, or 2 for a file or run id it
cannot find.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import ConfigError
from .report import EvalReport, compare
from .scenario import Scenario, load_scenarios, scenario_files
from .variants import BASE, Variant, read_variants, select

if TYPE_CHECKING:
    from .executors import Executor
    from .worker import RunResult

OK, BELOW, USAGE, INTERRUPTED = 0, 1, 2, 130
STRICT_MIN_PASS = 1.0  # the exit status's --min-pass when none is given


def variants_file(scenarios: list[str], given: str | None) -> Path | None:
    """--variants, else a variants.toml in a scenario directory given, or beside the first scenario file."""
    if given:
        return Path(given)
    for raw in scenarios:
        p = Path(raw)
        candidate = p / "variants.toml" if p.is_dir() else p.parent / "variants.toml"
        if candidate.is_file():
            return candidate
    return None


def plan(scenario_args: list[str], variants_arg: str | None, names: list[str]) -> tuple[list[Scenario], list[Variant]]:
    """Scenarios and variants, every problem of every file raised together as one ConfigError."""
    issues = []
    scenarios: list[Scenario] = []
    try:
        scenarios = load_scenarios(scenario_args)
    except ConfigError as exc:
        issues += exc.issues
    source = variants_file(scenario_args, variants_arg)
    variants = [BASE]
    if source is not None:
        try:
            variants = select(read_variants(source), names, str(source))
        except ConfigError as exc:
            issues += exc.issues
    elif names:
        where = ", ".join(str(p) for p in scenario_files(scenario_args)[:1]) or "."
        from ..base.errors import ConfigIssue

        issues.append(
            ConfigIssue(
                where, None, "--variant needs a variants file: --variants FILE or variants.toml beside the scenarios"
            )
        )
    if issues:
        raise ConfigError(issues)
    return scenarios, variants


def executor_for(args: argparse.Namespace) -> Executor | None:
    """None: the local process pool. --dask ADDRESS: that cluster (a usage error when the extra is missing)."""
    if not args.dask:
        return None
    try:
        from .executors import DaskExecutor

        return DaskExecutor(args.dask, args.jobs)
    except ImportError:
        raise DaskMissing("--dask needs Dask's distributed scheduler: pip install 'cireil[dask]'") from None
    except OSError as exc:  # no scheduler answers there
        raise DaskMissing(f"--dask {args.dask}: cannot reach the scheduler: {exc}") from None


class DaskMissing(Exception):
    pass


def check_comparison(args: argparse.Namespace, variants: list[Variant]) -> str | None:
    """What is wrong with --baseline / --until-decided for these variants (one line), or None."""
    names = [v.name for v in variants]
    baseline = getattr(args, "baseline", None)
    if baseline is not None and baseline not in names:
        return f"--baseline {baseline}: not a variant of this eval (it runs {', '.join(names)})"
    if getattr(args, "until_decided", False) and len(variants) < 2:
        return (
            "--until-decided compares variants: it needs two or more (a variants file with two variants, or"
            " --variant NAME twice); for one variant use --repeat N"
        )
    return None


def sequential_for(args: argparse.Namespace) -> Any:
    """The --until-decided rule (stats.Sequential) for these options, or None for a fixed --repeat."""
    if not getattr(args, "until_decided", False):
        return None
    from .stats import Sequential

    # Hwang-Shih-DeCani spending with gamma -2: bench/eval_stats.py found it decides about 10% sooner than
    # O'Brien-Fleming at the same error rates
    return Sequential(
        alpha=args.alpha,
        margin=args.margin,
        max_runs=args.max_runs,
        round_size=min(5, args.max_runs),
        spending=-2.0,
    )


def matrix_options(args: argparse.Namespace) -> dict[str, Any]:
    """run_matrix's keyword arguments from the eval options, the same for `cireil eval` and `%cireil eval`."""
    return {
        "repeat": args.repeat,
        "jobs": args.jobs,
        "timeout": args.timeout,
        "keep": args.keep,
        "until": sequential_for(args),
        "baseline": args.baseline,
        "budget_tokens": args.budget_tokens,
    }


def run_eval_command(args: argparse.Namespace) -> int:
    from .matrix import run_matrix
    from .progress import TerminalProgress

    try:
        executor = executor_for(args)
    except DaskMissing as exc:
        print(f"cireil: error: {exc}", file=sys.stderr)
        return USAGE
    try:
        scenarios, variants = plan(args.scenarios, args.variants, args.variant)
        problem = check_comparison(args, variants)
        if problem:
            print(f"cireil: error: {problem}", file=sys.stderr)
            return USAGE
        report = run_matrix(
            args.agent, scenarios, variants, on_progress=TerminalProgress(), executor=executor, **matrix_options(args)
        )
    except ConfigError as exc:
        for issue in exc.issues:
            print(str(issue), file=sys.stderr)
        return USAGE
    finally:
        if executor is not None:
            executor.close()
    report.alpha, report.margin = args.alpha, args.margin
    print(report.grid_text())
    failures = report.failures_text()
    if failures:
        print()
        print(failures)
    compared = report.comparison_text()
    if compared:
        print()
        print(compared)
    undecided = report.undecided_text()
    if undecided:
        print(undecided)
    print()
    print(report.summary())
    try:
        if args.json:
            report.write_json(args.json)
            if report.failed():
                print(f"open a failed run's recorded turn: cireil eval-show {args.json} RUN_ID")
        if args.junit:
            report.write_junit(args.junit)
    except OSError as exc:  # a missing folder, a read-only disk: said in one line (the grid above stands)
        print(f"cireil: error: cannot write {exc.filename or 'the result'}: {exc.strerror or exc}", file=sys.stderr)
        return USAGE
    if report.interrupted:
        return INTERRUPTED
    # a shell's exit status is a CI gate: strict unless told otherwise (any failure, with evidence, fails it)
    min_pass = STRICT_MIN_PASS if args.min_pass is None else args.min_pass
    if report.below(min_pass):
        given = "" if args.min_pass is not None else " (the default; --min-pass RATE sets another)"
        print(
            f"pass rate {report.pass_rate:.0%} is below --min-pass {min_pass:.0%}{given}: even the top of its 95%"
            f" interval is {report.interval.high:.0%}",
            file=sys.stderr,
        )
        return BELOW
    return OK


def _limit(args: argparse.Namespace) -> int:
    return int(getattr(args, "max_mb", 32.0) * 1024 * 1024)


def compare_command(args: argparse.Namespace) -> int:
    try:
        before = EvalReport.load(args.before, max_bytes=_limit(args))
        after = EvalReport.load(args.after, max_bytes=_limit(args))
    except ValueError as exc:
        print(f"cireil: error: {exc}", file=sys.stderr)
        return USAGE
    found = compare(before, after, alpha=args.alpha, margin=args.margin)
    print(found.text() or "nothing to compare: the two results share no variant")
    if found.regressed:
        worse = [f"{s}" for c in found.comparisons for s in c.worse]
        what = f"scenario{'s' if len(worse) > 1 else ''} {', '.join(worse)}" if worse else "the overall verdict"
        print(f"significant regression: {what} got worse (alpha {args.alpha:g})", file=sys.stderr)
        return BELOW
    return OK


def find_runs(report: EvalReport, run_id: str) -> list[RunResult]:
    """The run with this id, else every run whose id starts with it."""
    exact = [r for r in report.results if r.run_id == run_id]
    return exact or [r for r in report.results if r.run_id.startswith(run_id)]


def _short(text: str, limit: int = 300) -> str:
    # one line per run, however long the names and messages in a (hand-edited) result file are
    text = " ".join(text.split()) if "\n" in text else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _listing(report: EvalReport) -> list[str]:
    return [
        _short(
            f"{r.run_id}  {r.scenario} [{r.variant} #{r.repeat + 1}] {r.status}: {r.failures[0] if r.failures else ''}",
            600,
        )
        for r in sorted(report.failed(), key=lambda r: (r.scenario, r.variant, r.repeat))
    ]


def show_command(args: argparse.Namespace, render: Callable[[RunResult], str]) -> int:
    """`cireil eval-show RESULT.json [RUN_ID]`: a run's failed checks and recorded turns (rendered by the
    caller: the steps view is the render layer's); without RUN_ID, the failed runs to pick from."""
    try:
        report = EvalReport.load(args.result, max_bytes=_limit(args))
    except ValueError as exc:
        print(f"cireil: error: {exc}", file=sys.stderr)
        return USAGE
    if args.run is None:
        listing = _listing(report)
        if not listing:
            print(f"every run in {args.result} passed: only failed runs keep their recorded turns")
            return OK
        print("\n".join(listing))
        print(f"\nopen one: cireil eval-show {args.result} RUN_ID")
        return OK
    found = find_runs(report, args.run)
    if len(found) != 1:
        failed = ", ".join(r.run_id for r in report.failed()) or "none"
        what = f"no run {args.run!r}" if not found else f"{len(found)} runs start with {args.run!r}"
        print(f"cireil: error: {what} in {args.result} (failed runs: {failed})", file=sys.stderr)
        return USAGE
    run = found[0]
    try:
        print(render(run))
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError) as exc:
        # recorded turns edited by hand: the run is named, never a traceback
        why = str(exc) if isinstance(exc, ValueError) else f"its recorded turns are not as cireil wrote them ({exc})"
        print(f"cireil: error: {args.result}: run {run.run_id}: {why}", file=sys.stderr)
        return USAGE
    return OK
