"""A run matrix: every scenario x variant x repeat, through an executor, with progress and a clean interrupt;
or, --until-decided, rounds of runs for the cells whose comparison with the baseline is still open."""

from __future__ import annotations

import concurrent.futures
import itertools
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import ConfigError, ConfigIssue
from .executors import Executor, LocalExecutor, RunTimedOut
from .report import EvalReport
from .scenario import Scenario
from .stats import UNDECIDED
from .variants import BASE, Variant, apply_files, copy_agent
from .verdicts import BUDGET, DECIDED, INTERRUPTED, MAX_RUNS
from .worker import TURN_LIMIT, RunResult, RunSpec, run_one

if TYPE_CHECKING:
    from .stats import Sequential

Progress = Callable[[EvalReport], None]


def _prepare(agent_dir: Path, variant: Variant, target: Path, scenarios: list[Scenario]) -> list[ConfigIssue]:
    """The variant's copy of the agent, checked as a load would: problems named with the variant."""
    from ..agent import dry_run
    from ..config.engine_config import load_engine_config

    copy_agent(agent_dir, target)
    apply_files(variant, target)
    report = dry_run(target)
    where = f"variant '{variant.name}'"
    issues = [ConfigIssue(f"{where}: {i.file}", i.line, i.message) for i in report.errors]
    enabled = {t.name for t in report.tools}
    for name in variant.descriptions:
        if name not in enabled:
            issues.append(ConfigIssue(where, None, f"descriptions: '{name}' is not an enabled tool of the agent"))
    for scenario in scenarios:
        for name in scenario.grant or ():
            if name not in enabled:
                issues.append(ConfigIssue(scenario.path, None, f"session.grant: '{name}' is not an enabled tool"))
    if variant.provider and not report.errors:
        try:
            providers = load_engine_config(target).providers
        except ConfigError as exc:
            return issues + exc.issues
        if variant.provider not in providers:
            issues.append(
                ConfigIssue(
                    where,
                    None,
                    f"provider '{variant.provider}' is not in config/engine.toml (it has {', '.join(providers)})",
                )
            )
    return issues


def run_matrix(
    agent_dir: str | Path,
    scenarios: list[Scenario],
    variants: list[Variant] | None = None,
    *,
    repeat: int = 1,
    jobs: int = 2,
    timeout: float = 300.0,
    executor: Executor | None = None,
    on_progress: Progress | None = None,
    keep: str | Path | None = None,
    turn_limit: int = TURN_LIMIT,
    until: Sequential | None = None,
    baseline: str | None = None,
    budget_tokens: int | None = None,
) -> EvalReport:
    """Run everything; returns the report of the runs that finished (all of them unless interrupted).

    Nothing of `agent_dir` is written: every variant is a copy, every run a copy of that. A KeyboardInterrupt
    stops the runs in flight, drops the queued ones and returns what finished (report.interrupted).
    A failed run carries its recorded turns back (`result.turns`), cut to `turn_limit` bytes of JSON.

    `until` (--until-decided): instead of `repeat` runs per cell, rounds of `until.round_size` runs, each
    round only for the cells whose comparison with the `baseline` variant (default: the first) `until.decide`
    has not decided yet (and the baseline's cell while any of its scenario's cells is open); a cell stops when
    decided, at `until.max_runs`, or, for all, once the runs have used `budget_tokens` (report.decisions)."""
    agent = Path(agent_dir).expanduser().absolute()
    if not (agent / "config").is_dir():
        raise ConfigError([ConfigIssue(str(agent_dir), None, "not an agent directory (no config/ in it)")])
    variants = variants or [BASE]
    if keep and Path(keep).absolute().resolve().is_relative_to(agent.resolve()):
        raise ConfigError([ConfigIssue(str(keep), None, "--keep must be outside the agent directory (runs copy it)")])
    base = baseline or variants[0].name
    if until is not None and (len(variants) < 2 or base not in {v.name for v in variants}):
        why = "needs two variants or more" if len(variants) < 2 else f"the baseline '{base}' is not a variant run"
        raise ConfigError([ConfigIssue(str(agent_dir), None, f"--until-decided {why}")])
    root = Path(keep).absolute() if keep else Path(tempfile.mkdtemp(prefix="cireil-eval-"))
    root.mkdir(parents=True, exist_ok=True)
    report = EvalReport(
        agent=str(agent),
        scenarios=[s.name for s in scenarios],
        variants=[v.name for v in variants],
        repeat=until.round_size if until is not None else repeat,
        baseline=baseline,
        sequential=until is not None,
    )
    first = len(scenarios) * len(variants) * (repeat if until is None else min(until.round_size, until.max_runs))
    report.total = first
    own = executor is None
    try:
        templates: dict[str, Path] = {}
        issues: list[ConfigIssue] = []
        for n, variant in enumerate(variants):
            templates[variant.name] = root / f"variant-{n}-agent"
            issues += _prepare(agent, variant, templates[variant.name], scenarios)
        if issues:
            raise ConfigError(issues)
        executor = executor or LocalExecutor(min(jobs, first))
        archives = None
        if not getattr(executor, "shares_files", True):
            from .worker import pack

            archives = {name: pack(path) for name, path in templates.items()}
        batch = uuid.uuid4().hex[:8]
        numbers = itertools.count()

        def spec(s: Scenario, v: Variant, r: int) -> RunSpec:
            made = RunSpec(
                f"{batch}-{next(numbers):04d}",
                s,
                v,
                r,
                str(templates[v.name]),
                str(root),
                timeout,
                bool(keep),
                turn_limit=turn_limit,
            )
            if archives is not None:
                made.archive = archives[v.name]
                made.attachments = {raw: Path(raw).read_bytes() for raw in s.attachments}
            return made

        report.jobs = executor.jobs
        started = time.perf_counter()
        if until is None:
            specs = [spec(s, v, r) for s in scenarios for v in variants for r in range(repeat)]
            _run_round(executor, specs, report, on_progress)
        else:
            _run_rounds(executor, until, base, scenarios, variants, spec, report, on_progress, budget_tokens)
        report.duration_s = time.perf_counter() - started
        if on_progress:
            on_progress(report)
        return report
    finally:
        if own and executor is not None and not report.interrupted:
            executor.close()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def _run_round(executor: Executor, specs: list[RunSpec], report: EvalReport, on_progress: Progress | None) -> None:
    """Run `specs` to the end into `report`; a KeyboardInterrupt stops them (report.interrupted)."""
    futures = {executor.submit(run_one, spec, timeout=spec.timeout): spec for spec in specs}
    if on_progress:
        on_progress(report)
    try:
        for future in concurrent.futures.as_completed(futures):
            spec = futures[future]
            try:
                result = RunResult.from_dict(future.result())
            except Exception as exc:  # the worker died (killed, out of memory): that run errs, others go on
                why = str(exc) if isinstance(exc, RunTimedOut) else f"worker failed: {exc}"
                result = RunResult(
                    spec.run_id,
                    spec.scenario.name,
                    spec.variant.name,
                    spec.repeat,
                    spec.scenario.session_id,
                    error=why,
                    failures=[why],
                )
            report.add(result)
            if on_progress:
                on_progress(report)
    except KeyboardInterrupt:
        report.interrupted = True
        executor.stop()
        for future in futures:  # finished between the interrupt and the stop: still kept
            if future.done() and not future.cancelled() and future.exception() is None:
                result = RunResult.from_dict(future.result())
                if result.run_id not in report.run_ids:
                    report.add(result)
    except BaseException:  # anything else: no run is left going behind the error
        executor.stop()
        raise


def _run_rounds(
    executor: Executor,
    until: Sequential,
    base: str,
    scenarios: list[Scenario],
    variants: list[Variant],
    spec: Callable[[Scenario, Variant, int], RunSpec],
    report: EvalReport,
    on_progress: Progress | None,
    budget_tokens: int | None,
) -> None:
    """--until-decided: rounds over the open cells until each is decided, at max_runs, or the budget is spent.
    The rule looks after every round; `until` is what keeps its error rates despite that (stats.Sequential)."""
    baseline = next(v for v in variants if v.name == base)
    others = [v for v in variants if v.name != base]
    open_cells = {(s.name, v.name) for s in scenarios for v in others}
    counts = {(s.name, v.name): 0 for s in scenarios for v in variants}
    first = True
    while open_cells:
        spent = sum(r.tokens for r in report.results)
        if budget_tokens is not None and spent >= budget_tokens:
            for cell in open_cells:
                report.decisions[cell] = (UNDECIDED, BUDGET)
            return
        cells = [(s, v) for s in scenarios for v in others if (s.name, v.name) in open_cells]
        for s in {s.name: s for s, _ in cells}.values():
            cells.append((s, baseline))
        specs = []
        for s, v in cells:
            have = counts[(s.name, v.name)]
            specs += [spec(s, v, have + j) for j in range(min(until.round_size, until.max_runs - have))]
            counts[(s.name, v.name)] = have + min(until.round_size, until.max_runs - have)
        if not first:
            report.total += len(specs)
        first = False
        _run_round(executor, specs, report, on_progress)
        if report.interrupted:
            for cell in open_cells:
                report.decisions[cell] = (UNDECIDED, INTERRUPTED)
            return
        for s_name, v_name in sorted(open_cells):
            before, after = report.cell(s_name, base).counts, report.cell(s_name, v_name).counts
            word = until.decide(before, after)
            if word is None and counts[(s_name, v_name)] >= until.max_runs:
                word = UNDECIDED
            if word is not None:
                stopped = MAX_RUNS if word == UNDECIDED else DECIDED
                report.decisions[(s_name, v_name)] = (word, stopped)
                open_cells.discard((s_name, v_name))
