"""`%cireil eval`: scenario evals from the notebook, shown in a grid (views/evalgrid.py) that fills in live."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.display import display

from ..views.evalgrid import EvalGrid

if TYPE_CHECKING:
    from ...runtime.evals.report import EvalReport


def run_eval_magic(agent_dir: Path | None, options: Namespace) -> EvalGrid:
    """Run the eval (options as commands.py declares them) with a live grid; returns the finished grid (the
    display already shows it)."""
    from ...commands import family_usage
    from ...runtime.base.errors import ConfigError
    from ...runtime.evals.command import DaskMissing, check_comparison, executor_for, matrix_options, plan
    from ...runtime.evals.matrix import run_matrix

    agent = Path(options.agent).expanduser() if options.agent else agent_dir
    if agent is None:
        raise UsageError("no agent: run `%cireil load DIR` first, or pass --agent DIR")
    scenarios_args = options.scenarios or [str(agent / "evals")]
    if not options.scenarios and not (agent / "evals").is_dir():
        raise UsageError(f"no scenarios given and {agent / 'evals'} does not exist; usage: {family_usage('eval')}")
    try:
        scenarios, variants = plan(scenarios_args, options.variants, options.variant)
    except ConfigError as exc:
        raise UsageError("\n".join(str(i) for i in exc.issues)) from None
    problem = check_comparison(options, variants)
    if problem:
        raise UsageError(problem)
    try:
        executor = executor_for(options)
    except DaskMissing as exc:
        raise UsageError(str(exc)) from None
    handle: Any = None

    def show(report: EvalReport) -> None:
        nonlocal handle
        report.alpha, report.margin = options.alpha, options.margin
        grid = EvalGrid(report, options.min_pass)
        if handle is None:
            handle = display(grid, display_id=True)
        else:
            handle.update(grid)

    try:
        report = run_matrix(agent, scenarios, variants, on_progress=show, executor=executor, **matrix_options(options))
    except ConfigError as exc:
        raise UsageError("\n".join(str(i) for i in exc.issues)) from None
    finally:
        if executor is not None:
            executor.close()
    report.alpha, report.margin = options.alpha, options.margin
    if options.json:
        report.write_json(options.json)
    if options.junit:
        report.write_junit(options.junit)
    return EvalGrid(report, options.min_pass)
