"""A run matrix: every scenario x variant x repeat, through an executor, with progress and a clean interrupt."""

from __future__ import annotations

import concurrent.futures
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from ..base.errors import ConfigError, ConfigIssue
from .executors import Executor, LocalExecutor, RunTimedOut
from .report import EvalReport
from .scenario import Scenario
from .variants import BASE, Variant, apply_files, copy_agent
from .worker import TURN_LIMIT, RunResult, RunSpec, run_one

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
) -> EvalReport:
    """Run everything; returns the report of the runs that finished (all of them unless interrupted).

    Nothing of `agent_dir` is written: every variant is a copy, every run a copy of that. A KeyboardInterrupt
    stops the runs in flight, drops the queued ones and returns what finished (report.interrupted).
    A failed run carries its recorded turns back (`result.turns`), cut to `turn_limit` bytes of JSON."""
    agent = Path(agent_dir).expanduser().absolute()
    if not (agent / "config").is_dir():
        raise ConfigError([ConfigIssue(str(agent_dir), None, "not an agent directory (no config/ in it)")])
    variants = variants or [BASE]
    if keep and Path(keep).absolute().resolve().is_relative_to(agent.resolve()):
        raise ConfigError([ConfigIssue(str(keep), None, "--keep must be outside the agent directory (runs copy it)")])
    root = Path(keep).absolute() if keep else Path(tempfile.mkdtemp(prefix="cireil-eval-"))
    root.mkdir(parents=True, exist_ok=True)
    report = EvalReport(agent=str(agent), scenarios=[s.name for s in scenarios], variants=[v.name for v in variants])
    report.total = len(scenarios) * len(variants) * repeat
    own = executor is None
    try:
        templates: dict[str, Path] = {}
        issues: list[ConfigIssue] = []
        for n, variant in enumerate(variants):
            templates[variant.name] = root / f"variant-{n}-agent"
            issues += _prepare(agent, variant, templates[variant.name], scenarios)
        if issues:
            raise ConfigError(issues)
        batch = uuid.uuid4().hex[:8]
        specs = [
            RunSpec(
                f"{batch}-{i:04d}",
                s,
                v,
                r,
                str(templates[v.name]),
                str(root),
                timeout,
                bool(keep),
                turn_limit=turn_limit,
            )
            for i, (s, v, r) in enumerate((s, v, r) for s in scenarios for v in variants for r in range(repeat))
        ]
        executor = executor or LocalExecutor(min(jobs, len(specs)))
        if not getattr(executor, "shares_files", True):
            from .worker import pack

            archives = {name: pack(path) for name, path in templates.items()}
            for spec in specs:
                spec.archive = archives[spec.variant.name]
                spec.attachments = {raw: Path(raw).read_bytes() for raw in spec.scenario.attachments}
        report.jobs = executor.jobs
        started = time.perf_counter()
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
        report.duration_s = time.perf_counter() - started
        if on_progress:
            on_progress(report)
        return report
    finally:
        if own and executor is not None and not report.interrupted:
            executor.close()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
