"""Do the eval statistics (runtime/evals/stats.py) tell signal from noise? Measured by simulation (issue 33).

    python bench/eval_stats.py [--reps 200] [--gate-reps 100] [--seed 33] [--quick]

Pure Python, seeded, no model: a "scenario" is a cell of two variants whose runs pass with a known probability
each, as on a simulated model server whose tool choice is random.

(a) Sampling until decided. Half the scenarios carry a true 40-point difference (one better, one worse per pair:
    pairs 0.5/0.9 and 0.3/0.7), the rest none (both variants at the pair's higher rate, or at 0.5). Each scenario
    runs in rounds of --round-size per variant until `stats.Sequential` decides it. Reported: the share of
    repetitions in which every differing cell is called better/worse the right way and every other cell "no
    detectable difference" (strict) — and the lenient share, where a no-difference cell only has to avoid a false
    better/worse —, the per-cell rates, and the runs used as a fraction of a fixed `--repeat 20` over the same
    cells. For reference, the same calls from fixed designs (`stats.compare`, Holm across scenarios) at repeat 20,
    40 and 60. Targets (issue 33): >= 95 % correct, <= 60 % of the fixed design's runs.
(b) The gate with no true difference anywhere (--gate-scenarios scenarios, rates 0.3 to 0.9): how often it fires
    (a scenario significantly worse after Holm, or the overall verdict worse) at fixed repeat 3, 5, 10, 20 over
    --gate-reps repetitions, against how often today's rule fires (eval-compare before issue 33 exits 1 whenever a
    cell's pass rate drops: runtime/evals/report.py `compare`). Target: <= 5 %. Also its power: one scenario with a
    true 40-point drop (0.9 -> 0.5). And the Sequential rule's false better/worse rate per null cell.
(c) The intervals and tests against a reference: scipy.stats (Wilson via binomtest().proportion_ci, Fisher's exact
    test, the binomial test, Student's t) over a grid, and Newcombe's (1998) published examples; O'Brien-Fleming
    boundaries against Jennison & Turnbull's published values.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import sys
import time
from collections.abc import Callable

from cireil.runtime.evals import stats as S

Cell = tuple[float, float]  # true pass probability of (before, after)


def _truth(cell: Cell) -> str:
    p1, p2 = cell
    return S.BETTER if p2 > p1 else S.WORSE if p2 < p1 else S.NO_DIFFERENCE


def _draw(rng: random.Random, p: float, n: int) -> int:
    return sum(rng.random() < p for _ in range(n))


def run_sequential(rule: S.Sequential, cells: list[Cell], rng: random.Random) -> tuple[list[str], list[int]]:
    """Rounds until every cell is decided (or at max_runs); returns the verdicts and each cell's runs per side."""
    counts = [[0, 0, 0, 0] for _ in cells]  # passes before, runs before, passes after, runs after
    verdicts: list[str | None] = [None] * len(cells)
    while any(v is None for v in verdicts):
        for i, (p1, p2) in enumerate(cells):
            if verdicts[i] is not None:
                continue
            c = counts[i]
            c[0] += _draw(rng, p1, rule.round_size)
            c[2] += _draw(rng, p2, rule.round_size)
            c[1] += rule.round_size
            c[3] += rule.round_size
            verdicts[i] = rule.decide((c[0], c[1]), (c[2], c[3]))
    return [v or S.UNDECIDED for v in verdicts], [c[1] for c in counts]


def run_fixed(repeat: int, cells: list[Cell], rng: random.Random, margin: float) -> list[str]:
    data = {
        f"s{i}": ((_draw(rng, p1, repeat), repeat), (_draw(rng, p2, repeat), repeat))
        for i, (p1, p2) in enumerate(cells)
    }
    per, _ = S.compare(data, margin=margin)
    return [per[f"s{i}"].verdict for i in range(len(cells))]


class Tally:
    def __init__(self, cells: list[Cell]) -> None:
        self.cells, self.reps = cells, 0
        self.strict = self.lenient = 0
        self.diff_ok = self.null_equiv = self.null_no_false = self.undecided = 0

    def add(self, verdicts: list[str]) -> None:
        self.reps += 1
        strict = lenient = True
        for cell, v in zip(self.cells, verdicts, strict=True):
            want = _truth(cell)
            if want != S.NO_DIFFERENCE:
                ok = v == want
                self.diff_ok += ok
                strict &= ok
                lenient &= ok
            else:
                self.null_equiv += v == S.NO_DIFFERENCE
                self.null_no_false += v not in (S.BETTER, S.WORSE)
                strict &= v == S.NO_DIFFERENCE
                lenient &= v not in (S.BETTER, S.WORSE)
            self.undecided += v == S.UNDECIDED
        self.strict += strict
        self.lenient += lenient

    def row(self) -> str:
        n_diff = sum(_truth(c) != S.NO_DIFFERENCE for c in self.cells) * self.reps
        n_null = len(self.cells) * self.reps - n_diff
        return (
            f"all correct {self.strict / self.reps:6.1%} (lenient {self.lenient / self.reps:6.1%})  "
            f"per cell: differing called right {self.diff_ok / max(n_diff, 1):6.1%}, "
            f"equal called no-difference {self.null_equiv / max(n_null, 1):6.1%}, "
            f"equal not called better/worse {self.null_no_false / max(n_null, 1):6.1%}, "
            f"undecided {self.undecided / (len(self.cells) * self.reps):5.1%}"
        )


def _rule(args: argparse.Namespace) -> S.Sequential:
    return S.Sequential(
        alpha=args.alpha,
        margin=args.margin,
        max_runs=args.max_runs,
        round_size=args.round_size,
        spending=args.spending,
        equivalence_spending=args.equivalence_spending,
    )


def part_a(args: argparse.Namespace) -> None:
    rule = _rule(args)
    print(
        f"(a) --until-decided: Sequential(alpha={args.alpha}, margin={args.margin}, round_size={args.round_size}, "
        f"max_runs={args.max_runs}, spending={args.spending!r}, equivalence_spending={args.equivalence_spending!r}), "
        f"{args.scenarios} scenarios (half with a 40-point difference), {args.reps} repetitions"
    )
    half = args.scenarios // 2
    for pair in ((0.5, 0.9), (0.3, 0.7)):
        for null in sorted({max(pair), 0.5}, reverse=True):
            cells = [pair if i % 2 == 0 else pair[::-1] for i in range(half)]
            cells += [(null, null)] * (args.scenarios - half)
            rng = random.Random(f"{args.seed}/a/{pair}/{null}")
            tally = Tally(cells)
            diff_runs: list[int] = []
            null_runs: list[int] = []
            for _ in range(args.reps):
                verdicts, runs = run_sequential(rule, cells, rng)
                tally.add(verdicts)
                for cell, n in zip(cells, runs, strict=True):
                    (null_runs if cell[0] == cell[1] else diff_runs).append(n)
            used = sum(diff_runs) + sum(null_runs)
            print(f"  {pair[0]}/{pair[1]} vs equal at {null}:")
            print(
                f"    sequential        {tally.row()}  runs {used / (20 * len(diff_runs + null_runs)):6.1%} of "
                f"--repeat 20 (mean runs per side: differing cells {statistics.fmean(diff_runs):.1f}, "
                f"equal cells {statistics.fmean(null_runs):.1f})"
            )
            for repeat in (20, 40, 60):
                rng = random.Random(f"{args.seed}/a-fixed/{pair}/{null}/{repeat}")
                ft = Tally(cells)
                for _ in range(args.reps // 2 if args.quick else args.reps):
                    ft.add(run_fixed(repeat, cells, rng, args.margin))
                print(f"    fixed repeat {repeat:<4} {ft.row()}  runs {repeat / 20:6.1%}")


def _gate_fires(data: dict[str, tuple[tuple[int, int], tuple[int, int]]], alpha: float, margin: float) -> bool:
    per, overall = S.compare(data, alpha=alpha, margin=margin)
    return overall.verdict == S.WORSE or any(v.verdict == S.WORSE for v in per.values())


def _today_fires(data: dict[str, tuple[tuple[int, int], tuple[int, int]]]) -> bool:
    # eval-compare before issue 33: exit 1 when any cell's pass rate is lower after than before.
    return any(a[0] / a[1] < b[0] / b[1] for b, a in data.values())


def part_b(args: argparse.Namespace) -> None:
    m = args.gate_scenarios
    rates = [0.3 + 0.6 * i / max(m - 1, 1) for i in range(m)]
    print(
        f"\n(b) the gate, {m} scenarios at rates {rates[0]:.1f}..{rates[-1]:.1f}, {args.gate_reps} repetitions, "
        f"alpha {args.alpha}"
    )

    def share(repeat: int, drop: bool, fires: Callable[[dict], bool], tag: str) -> float:
        rng = random.Random(f"{args.seed}/b/{tag}/{repeat}/{drop}")
        hits = 0
        for _ in range(args.gate_reps):
            data = {}
            for i, p in enumerate(rates):
                before_p, after_p = (0.9, 0.5) if drop and i == 0 else (p, p)
                data[f"s{i}"] = ((_draw(rng, before_p, repeat), repeat), (_draw(rng, after_p, repeat), repeat))
            hits += fires(data)
        return hits / args.gate_reps

    new = lambda d: _gate_fires(d, args.alpha, args.margin)  # noqa: E731
    print("  repeat   no difference: new gate fires   today's rule fires   |   one scenario 0.9->0.5: new gate fires")
    for repeat in (3, 5, 10, 20):
        print(
            f"  {repeat:>6}   {share(repeat, False, new, 'new'):27.1%}"
            f"   {share(repeat, False, _today_fires, 'old'):18.1%}"
            f"   |   {share(repeat, True, new, 'power'):16.1%}"
        )
    rule = _rule(args)
    print("  Sequential, one cell with no difference: false better/worse per cell")
    for p in (0.1, 0.3, 0.5, 0.7, 0.9):
        rng = random.Random(f"{args.seed}/b-seq/{p}")
        reps = args.reps * 10
        false = sum(run_sequential(rule, [(p, p)], rng)[0][0] in (S.BETTER, S.WORSE) for _ in range(reps))
        print(f"    p = {p}: {false / reps:5.2%} of {reps} (alpha {args.alpha})")


def part_c() -> None:
    print("\n(c) against references")
    try:
        from scipy import stats as ss
    except ImportError:
        ss = None
        print("  scipy is not installed: published values only")
    if ss is not None:
        worst = {"wilson": 0.0, "fisher": 0.0, "binomial": 0.0, "t": 0.0}
        cases = 0
        for n in range(1, 41):
            for x in range(n + 1):
                ci = ss.binomtest(x, n).proportion_ci(0.95, method="wilson")
                mine = S.wilson(x, n)
                worst["wilson"] = max(worst["wilson"], abs(ci.low - mine.low), abs(ci.high - mine.high))
                worst["binomial"] = max(worst["binomial"], abs(ss.binomtest(x, n).pvalue - S.binom_test(x, n)))
                cases += 1
        for n1 in range(1, 16, 2):
            for n2 in range(1, 16, 3):
                for x1 in range(n1 + 1):
                    for x2 in range(n2 + 1):
                        ref = ss.fisher_exact([[x1, n1 - x1], [x2, n2 - x2]]).pvalue
                        worst["fisher"] = max(worst["fisher"], abs(ref - S.fisher_exact((x1, n1), (x2, n2))))
        for df in range(1, 60):
            worst["t"] = max(worst["t"], abs(ss.t.ppf(0.975, df) - S.t_quantile(0.975, df)))
        print(
            f"  scipy {ss.__name__.split('.')[0]}: largest absolute difference over {cases} (passes, runs) with runs "
            f"1..40 and a grid of 2x2 tables: " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items())
        )
    published = [  # Newcombe (1998), Statistics in Medicine 17:873, table II, method 10
        ((48, 80), (56, 70), 0.0524, 0.3339),
        ((3, 10), (9, 10), 0.1705, 0.8090),
        ((0, 29), (5, 56), -0.0381, 0.1926),
        ((0, 20), (0, 10), -0.1611, 0.2775),
        ((0, 10), (10, 10), 0.6075, 1.0),
    ]
    worst_n = max(max(abs(S.newcombe(b, a).low - lo), abs(S.newcombe(b, a).high - hi)) for b, a, lo, hi in published)
    print(f"  Newcombe 1998 table II (method 10), 5 examples: largest difference {worst_n:.1e} (4 decimals published)")
    from statistics import NormalDist

    z = [round(NormalDist().inv_cdf(1 - p / 2), 3) for p in S.nominal_levels(0.05, (0.2, 0.4, 0.6, 0.8, 1.0))]
    print(f"  Lan-DeMets O'Brien-Fleming, 5 equal looks, alpha 0.05: z = {z}")
    print("    published (Jennison & Turnbull 2000, gsDesign): 4.877 3.357 2.680 2.290 2.031")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--gate-reps", type=int, default=100)
    parser.add_argument("--gate-scenarios", type=int, default=10)
    parser.add_argument("--scenarios", type=int, default=4, help="for (a); half of them differ")
    parser.add_argument("--seed", default="33")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--margin", type=float, default=0.3)
    parser.add_argument("--round-size", type=int, default=5)
    parser.add_argument("--max-runs", type=int, default=60)
    parser.add_argument("--spending", default="-2", help="obrien-fleming, pocock or a Hwang-Shih-DeCani gamma")
    parser.add_argument("--equivalence-spending", default="pocock")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, for a smoke run")
    parser.add_argument("--only", choices=("a", "b", "c"))
    args = parser.parse_args()
    for name in ("spending", "equivalence_spending"):
        v = getattr(args, name)
        with contextlib.suppress(ValueError):  # a Hwang-Shih-DeCani gamma
            setattr(args, name, float(v))
    if args.quick:
        args.reps, args.gate_reps = 40, 40
    start = time.perf_counter()
    if args.only in (None, "a"):
        part_a(args)
    if args.only in (None, "b"):
        part_b(args)
    if args.only in (None, "c"):
        part_c()
    print(f"\n{time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
