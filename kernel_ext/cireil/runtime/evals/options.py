"""The options of `cireil eval` and `%cireil eval` (one parser for both); argparse only, so the CLI stays quick."""

from __future__ import annotations

import argparse


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (a pass rate), not {text}")
    return value


def _positive(kind: type) -> object:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a {'whole ' if kind is int else ''}number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
        return value

    return parse


def _alpha(text: str) -> float:
    value = _fraction(text)
    if not 0 < value <= 0.5:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 0.5 (a false-alarm rate), not {text}")
    return value


def _margin(text: str) -> float:
    value = _fraction(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and below 1 (a difference in pass rate), not {text}")
    return value


def _verdict_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--alpha",
        type=_alpha,
        default=0.05,
        metavar="A",
        help="the false-alarm rate of a verdict: 'better'/'worse' only at p < A, Holm-adjusted (default 0.05)",
    )
    p.add_argument(
        "--margin",
        type=_margin,
        default=0.2,
        metavar="D",
        help="'no detectable difference' once a change of D in pass rate or more is ruled out (default 0.2)",
    )


def add_eval_arguments(
    p: argparse.ArgumentParser, *, agent: bool = True, required: bool = True
) -> argparse.ArgumentParser:
    if agent:
        p.add_argument("agent", metavar="AGENT", help="the agent directory (never changed: runs use copies)")
    p.add_argument(
        "scenarios", metavar="SCENARIOS", nargs="+" if required else "*", help="scenario files, or directories of them"
    )
    p.add_argument("--repeat", type=_positive(int), default=1, metavar="N", help="runs per scenario and variant")
    p.add_argument(
        "--variant", action="append", default=[], metavar="NAME", help="a variant of the variants file (repeatable)"
    )
    p.add_argument("--variants", metavar="FILE", help="the variants file (default: variants.toml beside the scenarios)")
    p.add_argument("--jobs", type=_positive(int), default=2, metavar="N", help="runs at once (default 2)")
    p.add_argument(
        "--timeout",
        type=_positive(float),
        default=300.0,
        metavar="S",
        help="seconds per run, its checks included: then it is stopped (300)",
    )
    p.add_argument(
        "--min-pass",
        type=_fraction,
        default=None,  # not given: the shell's exit status stays strict (1.0); the notebook grid judges nothing
        metavar="RATE",
        help="pass rate needed; fails only when the top of its 95%% Wilson interval is below RATE (exit status"
        " default 1.0; the notebook grid marks cells against RATE only when it is given)",
    )
    p.add_argument(
        "--baseline",
        metavar="NAME",
        help="the variant the others are compared with, scenario by scenario (default: the first)",
    )
    _verdict_arguments(p)
    p.add_argument(
        "--until-decided",
        action="store_true",
        help="run in rounds, each scenario x variant cell until its comparison with the baseline is decided"
        " (needs two variants or more; --repeat is not used)",
    )
    p.add_argument(
        "--max-runs",
        type=_positive(int),
        default=60,
        metavar="N",
        help="with --until-decided: runs per cell at most; undecided then (default 60)",
    )
    p.add_argument(
        "--budget-tokens",
        type=_positive(int),
        metavar="T",
        help="with --until-decided: no new round once the runs have used T tokens",
    )
    p.add_argument("--json", metavar="FILE", help="write every run and the grid as JSON")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML (a testcase per run) for CI")
    p.add_argument(
        "--dask", metavar="ADDRESS", help="run on the Dask scheduler at ADDRESS (needs the cireil[dask] extra)"
    )
    p.add_argument("--keep", metavar="DIR", help="keep each run's copy of the agent (and its sessions.db) in DIR")
    return p


def _max_mb(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-mb",
        type=_positive(float),
        default=32.0,
        metavar="MB",
        help="largest result file read, in MiB (default 32: 100 failed runs with their recorded turns take ~25)",
    )


def add_compare_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("before", metavar="A.json", help="the earlier result (cireil eval --json)")
    p.add_argument("after", metavar="B.json", help="the later result")
    _verdict_arguments(p)
    _max_mb(p)
    return p


def add_show_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("result", metavar="RESULT.json", help="a result written by cireil eval --json")
    p.add_argument(
        "run", metavar="RUN_ID", nargs="?", help="the run to open (or a unique start of its id); none: list failed runs"
    )
    _max_mb(p)
    return p
