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
    p.add_argument("--min-pass", type=_fraction, default=1.0, metavar="RATE", help="pass rate needed (default 1.0)")
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
    _max_mb(p)
    return p


def add_show_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("result", metavar="RESULT.json", help="a result written by cireil eval --json")
    p.add_argument(
        "run", metavar="RUN_ID", nargs="?", help="the run to open (or a unique start of its id); none: list failed runs"
    )
    _max_mb(p)
    return p
