"""runtime/evals/stats.py against published values, scipy (when installed), and a seeded simulation."""

from __future__ import annotations

import math
import random
from statistics import NormalDist

import pytest

from cireil.runtime.evals import stats as S

try:
    from scipy import stats as ss
except ImportError:  # the reference is optional: the published values below always run
    ss = None
needs_scipy = pytest.mark.skipif(ss is None, reason="scipy not installed (pip install scipy for the cross-checks)")


# --- published values ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("passes", "runs", "low", "high"),
    [  # Newcombe (1998), "Two-sided confidence intervals for the single proportion", method 3 (Wilson score)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_newcombe_1998(passes: int, runs: int, low: float, high: float) -> None:
    ci = S.wilson(passes, runs)
    assert ci.low == pytest.approx(low, abs=5e-5)
    assert ci.high == pytest.approx(high, abs=5e-5)


def test_wilson_edges() -> None:
    assert S.wilson(0, 0) == S.Interval(0.0, 1.0)
    assert S.wilson(0, 5).low == 0.0
    assert S.wilson(5, 5).high == 1.0
    assert S.wilson(3, 10, 0.99).low < S.wilson(3, 10, 0.95).low


@pytest.mark.parametrize(
    ("before", "after", "low", "high"),
    [  # Newcombe (1998), "Interval estimation for the difference between independent proportions", table II, method 10
        ((48, 80), (56, 70), 0.0524, 0.3339),
        ((3, 10), (9, 10), 0.1705, 0.8090),
        ((0, 29), (5, 56), -0.0381, 0.1926),
        ((0, 20), (0, 10), -0.1611, 0.2775),
        ((0, 10), (10, 10), 0.6075, 1.0),
    ],
)
def test_newcombe_matches_table_ii(before: tuple, after: tuple, low: float, high: float) -> None:
    ci = S.newcombe(before, after)
    assert ci.low == pytest.approx(low, abs=5e-5)
    assert ci.high == pytest.approx(high, abs=5e-5)


def test_fisher_lady_tasting_tea() -> None:
    # Fisher (1935): 3 of 4 milk-first cups named right; the table [[3, 1], [1, 3]].
    assert S.fisher_exact((1, 4), (3, 4), "greater") == pytest.approx(0.2429, abs=5e-5)
    assert S.fisher_exact((3, 4), (1, 4), "less") == pytest.approx(0.2429, abs=5e-5)
    assert S.fisher_exact((1, 4), (3, 4)) == pytest.approx(0.4857, abs=5e-5)
    assert S.fisher_exact((0, 4), (4, 4)) == pytest.approx(2 / 70)
    assert S.fisher_exact((0, 0), (3, 4)) == 1.0


def test_binomial_and_sign_test() -> None:
    # Sign test: 9 of 10 pairs one way, p = 2 * 11/1024 (0.0215); 0 of 5 cannot reach 0.05 (2/32 = 0.0625).
    assert S.binom_test(9, 10) == pytest.approx(22 / 1024)
    assert S.binom_test(0, 5) == pytest.approx(0.0625)
    assert S.binom_test(5, 10) == 1.0
    assert S.binom_test(0, 0) == 1.0
    # Not symmetric: R's ?binom.test example (Mendel's peas, 682 of 925 at 3/4) prints p-value = 0.3825.
    assert S.binom_test(682, 925, 0.75) == pytest.approx(0.3825, abs=5e-5)


def test_holm_textbook() -> None:
    # m = 4: sorted 0.005, 0.01, 0.03, 0.04 -> 0.02, 0.03, 0.06, max(0.04, 0.06) = 0.06, back in input order.
    assert S.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert S.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert S.holm([]) == []
    with pytest.raises(ValueError, match="p-values"):
        S.holm([1.5])


def test_pass_at_k_and_pass_hat_k_by_hand() -> None:
    # 3 of 5 passed. pass@2 = 1 - C(2,2)/C(5,2) = 1 - 1/10; pass^2 = C(3,2)/C(5,2) = 3/10.
    assert S.pass_at_k(3, 5, 2) == pytest.approx(0.9)
    assert S.pass_hat_k(3, 5, 2) == pytest.approx(0.3)
    assert S.pass_at_k(3, 5, 1) == pytest.approx(0.6) == S.pass_hat_k(3, 5, 1)
    assert S.pass_hat_k(5, 5, 5) == 1.0
    assert S.pass_hat_k(4, 5, 5) == 0.0
    assert S.pass_at_k(0, 5, 3) == 0.0
    assert S.pass_at_k(1, 5, 5) == 1.0
    assert S.pass_at_k(2, 3, 5) is None
    assert S.pass_hat_k(2, 3, 5) is None
    assert S.flaky(2, 3) and not S.flaky(3, 3) and not S.flaky(0, 3) and not S.flaky(0, 0)


def test_student_t_quantiles() -> None:
    # Printed tables: t_{0.975} with 1, 4, 10, 30 degrees of freedom.
    for df, want in ((1, 12.706), (4, 2.776), (10, 2.228), (30, 2.042)):
        assert S.t_quantile(0.975, df) == pytest.approx(want, abs=5e-4)
    assert S.t_quantile(0.025, 4) == pytest.approx(-2.776, abs=5e-4)


def test_obrien_fleming_boundaries_match_published() -> None:
    # Lan-DeMets O'Brien-Fleming type, 5 equally spaced looks, two-sided 0.05 (Jennison & Turnbull 2000; gsDesign).
    z = [NormalDist().inv_cdf(1 - p / 2) for p in S.nominal_levels(0.05, (0.2, 0.4, 0.6, 0.8, 1.0))]
    assert z == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031], abs=2e-3)
    # Pocock type: nearly flat, 2.438 ... 2.386.
    z = [NormalDist().inv_cdf(1 - p / 2) for p in S.nominal_levels(0.05, (0.2, 0.4, 0.6, 0.8, 1.0), "pocock")]
    assert z == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=2e-3)


# --- verdicts -------------------------------------------------------------------------------------------------------


def test_compare_cell_verdicts() -> None:
    worse = S.compare_cell((20, 20), (8, 20))
    assert worse.verdict == S.WORSE and worse.effect == pytest.approx(-0.6) and worse.p < 0.05
    assert worse.interval.high < 0 and worse.runs_to_decide is None
    assert S.compare_cell((2, 20), (19, 20)).verdict == S.BETTER
    # 3 runs each, 3/3 -> 1/3: a 67-point drop that today's rule calls "worse", but p = 0.4.
    few = S.compare_cell((3, 3), (1, 3))
    assert few.verdict == S.UNDECIDED and few.p > 0.05 and few.runs_to_decide and few.runs_to_decide > 0
    same = S.compare_cell((190, 200), (191, 200))
    assert same.verdict == S.NO_DIFFERENCE and same.interval.low > -0.2
    with pytest.raises(ValueError, match="passes <= runs"):
        S.compare_cell((4, 3), (1, 3))
    with pytest.raises(ValueError, match="integer"):
        S.compare_cell((1.5, 3), (1, 3))  # type: ignore[arg-type]


def test_runs_to_decide_is_a_sensible_estimate() -> None:
    # Nothing known (rates shrunk to 0.5): ruling out 20 points at p = 0.5 takes over a hundred runs per side.
    assert S.runs_to_decide((0, 0), (0, 0), margin=0.2) > 100
    # 5/10 vs 9/10 (shrunk: 0.5 vs 0.83): Fleiss's formula at 80% power gives ~31 per side, 21 more than made.
    assert 15 <= S.runs_to_decide((5, 10), (9, 10)) <= 30
    assert S.runs_to_decide((50, 100), (90, 100)) >= 1


def test_compare_holm_and_overall_sign_test() -> None:
    cells = {f"s{i}": ((15, 20), (5, 20)) for i in range(8)}
    per, overall = S.compare(cells)
    assert all(v.verdict == S.WORSE for v in per.values())
    assert overall.verdict == S.WORSE and overall.p == pytest.approx(2 / 256)
    assert overall.interval.high < 0
    # One scenario significant alone (raw p ~ 0.003) stops being so after Holm over 20 scenarios.
    one = {"a": ((10, 10), (3, 10))} | {f"n{i}": ((5, 10), (5, 10)) for i in range(19)}
    per, overall = S.compare(one)
    assert S.fisher_exact((10, 10), (3, 10)) < 0.05 < per["a"].p
    assert per["a"].verdict == S.UNDECIDED and overall.verdict != S.WORSE
    # A single scenario: the overall verdict is its own.
    per, overall = S.compare({"x": ((20, 20), (2, 20))})
    assert overall == per["x"] and overall.verdict == S.WORSE
    with pytest.raises(ValueError, match="at least one"):
        S.compare({})


def test_overall_no_difference_when_every_scenario_is_tight() -> None:
    cells = {f"s{i}": ((95, 100), (95, 100)) for i in range(5)}
    _, overall = S.compare(cells)
    assert overall.verdict == S.NO_DIFFERENCE and overall.effect == 0.0
    assert -0.2 < overall.interval.low < 0 < overall.interval.high < 0.2


# --- scipy cross-checks over a grid --------------------------------------------------------------------------------


@needs_scipy
def test_wilson_and_binomial_test_match_scipy() -> None:
    for n in range(1, 31):
        for x in range(n + 1):
            ref = ss.binomtest(x, n)
            ci = ref.proportion_ci(0.95, method="wilson")
            mine = S.wilson(x, n)
            assert mine.low == pytest.approx(ci.low, abs=1e-12) and mine.high == pytest.approx(ci.high, abs=1e-12)
            assert S.binom_test(x, n) == pytest.approx(ref.pvalue, abs=1e-12)
            assert S.binom_test(x, n, 0.3) == pytest.approx(ss.binomtest(x, n, 0.3).pvalue, abs=1e-12)


@needs_scipy
def test_fisher_matches_scipy() -> None:
    for n1, n2 in ((1, 1), (3, 3), (5, 10), (10, 10), (20, 7), (40, 40)):
        for x1 in range(n1 + 1):
            for x2 in range(n2 + 1):
                table = [[x1, n1 - x1], [x2, n2 - x2]]
                assert S.fisher_exact((x1, n1), (x2, n2)) == pytest.approx(ss.fisher_exact(table).pvalue, abs=1e-10)
                # scipy's "greater" is on the first row's odds: before's rate higher = after's lower
                less = ss.fisher_exact(table, alternative="greater").pvalue
                assert S.fisher_exact((x1, n1), (x2, n2), "less") == pytest.approx(less, abs=1e-10)


@needs_scipy
def test_t_quantile_matches_scipy() -> None:
    for df in (1, 2, 3, 5, 8, 13, 50, 200):
        for q in (0.9, 0.95, 0.975, 0.995):
            assert S.t_quantile(q, df) == pytest.approx(ss.t.ppf(q, df), abs=1e-9)


# --- the sequential rule ------------------------------------------------------------------------------------------


def test_sequential_plan_and_validation() -> None:
    rule = S.Sequential(round_size=5, max_runs=40)
    assert rule.looks == (5, 10, 15, 20, 25, 30, 35, 40)
    assert list(rule.difference_levels) == sorted(rule.difference_levels)  # O'Brien-Fleming: strict early
    assert rule.decide((0, 0), (0, 0)) is None
    assert rule.decide((2, 4), (4, 4)) is None  # before the first look
    assert rule.decide((20, 20), (0, 20)) == S.WORSE
    assert rule.decide((10, 40), (30, 40)) == S.BETTER
    assert rule.decide((20, 40), (21, 40)) == S.UNDECIDED  # at max_runs, margin 0.2 not ruled out
    assert S.Sequential(margin=0.3).decide((38, 40), (38, 40)) == S.NO_DIFFERENCE
    with pytest.raises(ValueError, match="round_size"):
        S.Sequential(round_size=50, max_runs=40)
    with pytest.raises(ValueError, match="spending"):
        S.Sequential(spending="linear")


def _sequential_pair(rule: S.Sequential, p1: float, p2: float, rng: random.Random) -> str:
    x1 = x2 = n = 0
    while True:
        x1 += sum(rng.random() < p1 for _ in range(rule.round_size))
        x2 += sum(rng.random() < p2 for _ in range(rule.round_size))
        n += rule.round_size
        verdict = rule.decide((x1, n), (x2, n))
        if verdict is not None:
            return verdict


def _sequential_cell(rule: S.Sequential, p: float, rng: random.Random) -> str:
    return _sequential_pair(rule, p, p, rng)


def test_sequential_false_positive_rate_stays_within_alpha() -> None:
    # Looking after every round must not inflate the 5% error: 1200 null cells at rates 0.3-0.7, seeded. Naive
    # repeated Fisher tests at 0.05 after each of 8 looks would reach ~10%; the spending rule stays below 5% plus
    # three standard errors of the simulation (0.63 points).
    rule = S.Sequential(alpha=0.05, margin=0.3, round_size=5, max_runs=40)
    rng = random.Random(33)
    reps = 1200
    false = sum(_sequential_cell(rule, 0.3 + 0.1 * (i % 5), rng) in (S.BETTER, S.WORSE) for i in range(reps))
    assert false / reps <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)


def test_sequential_equivalence_error_is_about_alpha_at_the_margin() -> None:
    # A true difference of exactly `margin` (0.5 -> 0.8): "no detectable difference" is the wrong call; its rate
    # stays near alpha (the equivalence stop uses normal-theory boundaries), within 3 simulation standard errors.
    rule = S.Sequential(alpha=0.05, margin=0.3, round_size=5, max_runs=60, spending=-2)
    rng = random.Random(35)
    reps = 800
    wrong = sum(_sequential_pair(rule, 0.5, 0.8, rng) == S.NO_DIFFERENCE for _ in range(reps))
    assert wrong / reps <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)
    # and a 40-point difference is called, the right way, nearly always
    rng = random.Random(36)
    assert sum(_sequential_pair(rule, 0.9, 0.5, rng) == S.WORSE for _ in range(100)) >= 95


def test_naive_peeking_would_inflate_the_error() -> None:
    # The control for the test above: Fisher's test at 0.05 after every round is what the spending rule avoids.
    rng = random.Random(34)
    reps, false = 600, 0
    for _ in range(reps):
        x1 = x2 = n = 0
        for _ in range(8):
            x1 += sum(rng.random() < 0.5 for _ in range(5))
            x2 += sum(rng.random() < 0.5 for _ in range(5))
            n += 5
            if S.fisher_exact((x1, n), (x2, n)) < 0.05:
                false += 1
                break
    assert false / reps > 0.05
