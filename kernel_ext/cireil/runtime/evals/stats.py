"""The statistics of scenario evals: intervals, pass@k / pass^k, comparisons of two variants, sampling until decided.

Standard library only, closed forms or loops linear in the runs; every method is a published one, named where it is
used:

- `wilson`: the Wilson score interval for one pass rate (Wilson 1927; Newcombe 1998, method 3).
- `pass_at_k`: the unbiased pass@k estimator 1 - C(n-c, k)/C(n, k) (Chen et al. 2021, "Evaluating Large Language
  Models Trained on Code"); `pass_hat_k`: pass^k, all k tries pass, C(c, k)/C(n, k) (Yao et al. 2024, tau-bench).
- `fisher_exact`: Fisher's exact test on the 2x2 table of two independent binomials; two-sided p sums the tables no
  more probable than the observed one (as R's fisher.test and scipy.stats.fisher_exact do).
- `newcombe`: the interval of a difference of two proportions from two Wilson intervals (Newcombe 1998, "Interval
  estimation for the difference between independent proportions", method 10, the hybrid score interval).
- `binom_test`: the exact binomial test; with p = 0.5 it is the sign test.
- `holm`: Holm's (1979) step-down adjustment of several p-values.
- `compare_cell` / `compare`: one scenario's verdict, and the verdict over scenarios (an exact sign test on the
  scenarios that moved), each BETTER / WORSE / NO_DIFFERENCE (equivalence: a difference of `margin` or more is ruled
  out) or UNDECIDED with an estimate of the runs that would decide it.
- `Sequential`: the rule of `--until-decided`, a group-sequential design with Lan-DeMets alpha spending (see there).

A pass rate here is `passes / runs`; `before` and `after` are `(passes, runs)` pairs, the effect is after - before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

BETTER, WORSE, NO_DIFFERENCE, UNDECIDED = "better", "worse", "no detectable difference", "not enough evidence"

# Beyond this many runs a cell is not an eval any more but a mistake (or hostile input); every loop here is linear
# in the runs, so the cap bounds the time of each call.
MAX_RUNS = 10_000_000
# Tables whose probability is within this relative distance of the observed one count as "as extreme" (scipy and
# R use the same tolerance: without it, floating-point noise drops tied tables from a two-sided p-value).
_TIE = 1 + 1e-7
_NORMAL = NormalDist()


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def __contains__(self, x: float) -> bool:
        return self.low <= x <= self.high


@dataclass(frozen=True)
class Verdict:
    verdict: str  # BETTER, WORSE, NO_DIFFERENCE or UNDECIDED
    effect: float  # after's pass rate - before's
    interval: Interval  # of the effect, at 1 - alpha
    p: float  # p-value of "no difference" (Holm-adjusted where several scenarios are compared)
    runs_to_decide: int | None  # when UNDECIDED: about how many more runs per side would decide it


def _check(passes: int, runs: int, what: str = "cell") -> None:
    for name, v in (("passes", passes), ("runs", runs)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{what}: {name} must be an integer, got {v!r}")
    if not 0 <= passes <= runs:
        raise ValueError(f"{what}: need 0 <= passes <= runs, got passes={passes}, runs={runs}")
    if runs > MAX_RUNS:
        raise ValueError(f"{what}: {runs} runs is more than the {MAX_RUNS} these statistics accept")


def _check_level(name: str, value: float, low: float = 0.0, high: float = 1.0) -> None:
    if not (isinstance(value, int | float) and low < value < high):
        raise ValueError(f"{name} must be between {low} and {high} (exclusive), got {value!r}")


def _z(confidence: float) -> float:
    """The two-sided normal quantile: 1.959963... for 0.95."""
    return _NORMAL.inv_cdf(0.5 + confidence / 2)


# --- one cell ------------------------------------------------------------------------------------------------------


def wilson(passes: int, runs: int, confidence: float = 0.95) -> Interval:
    """The Wilson score interval of a pass rate; it stays inside [0, 1] and is honest at 0 and all passes, unlike
    the textbook p +- z*sqrt(p(1-p)/n). No runs: nothing is known, Interval(0, 1)."""
    _check(passes, runs)
    _check_level("confidence", confidence)
    if runs == 0:
        return Interval(0.0, 1.0)
    z = _z(confidence)
    p = passes / runs
    z2n = z * z / runs
    centre = (p + z2n / 2) / (1 + z2n)
    half = z * math.sqrt(p * (1 - p) / runs + z2n / (4 * runs)) / (1 + z2n)
    # At 0 and n passes the formula's end is exactly 0 or 1; rounding must not move it off.
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == runs else min(1.0, centre + half)
    return Interval(low, high)


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def pass_at_k(passes: int, runs: int, k: int) -> float | None:
    """pass@k, at least one of k tries passes: the unbiased estimator 1 - C(n-c, k)/C(n, k) of Chen et al. (2021).
    None when fewer than k runs were made."""
    _check(passes, runs)
    _check_k(k)
    if runs < k:
        return None
    return 1.0 - _comb_ratio(runs - passes, runs, k)


def pass_hat_k(passes: int, runs: int, k: int) -> float | None:
    """pass^k, all k tries pass: C(c, k)/C(n, k), the unbiased estimator of p^k (Yao et al. 2024, tau-bench).
    None when fewer than k runs were made."""
    _check(passes, runs)
    _check_k(k)
    if runs < k:
        return None
    return _comb_ratio(passes, runs, k)


def _comb_ratio(a: int, n: int, k: int) -> float:
    """C(a, k)/C(n, k) as a product of k ratios: no huge integers, k multiplications."""
    if a < k:
        return 0.0
    r = 1.0
    for i in range(k):
        r *= (a - i) / (n - i)
    return r


def flaky(passes: int, runs: int) -> bool:
    """Neither all passed nor all failed."""
    _check(passes, runs)
    return 0 < passes < runs


# --- two cells -----------------------------------------------------------------------------------------------------


def _lcomb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_exact(before: tuple[int, int], after: tuple[int, int], alternative: str = "two-sided") -> float:
    """Fisher's exact test of "both sides have the same pass rate" on the 2x2 table of passes and failures.

    Conditioned on the total passes, the before side's passes are hypergeometric. `alternative`: "two-sided" (sum of
    the tables no more probable than the observed one), "less" (after's rate lower) or "greater" (after's higher).
    Linear in the runs (log-probabilities through lgamma).
    """
    (x1, n1), (x2, n2) = before, after
    _check(x1, n1, "before")
    _check(x2, n2, "after")
    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError(f"alternative must be 'two-sided', 'less' or 'greater', got {alternative!r}")
    total, k = n1 + n2, x1 + x2
    lo, hi = max(0, k - n2), min(k, n1)
    if lo == hi:
        return 1.0
    norm = _lcomb(total, k)

    def logp(x: int) -> float:  # before has x of the k passes
        return _lcomb(n1, x) + _lcomb(n2, k - x) - norm

    if alternative == "less":  # after lower <=> before has more of the passes
        xs = range(x1, hi + 1)
    elif alternative == "greater":
        xs = range(lo, x1 + 1)
    else:
        cut = logp(x1) + math.log(_TIE)
        xs = [x for x in range(lo, hi + 1) if logp(x) <= cut]
        if len(xs) == hi - lo + 1:  # every table counts: exactly 1, not 1 less rounding
            return 1.0
    return min(1.0, math.fsum(math.exp(logp(x)) for x in xs))


def newcombe(before: tuple[int, int], after: tuple[int, int], confidence: float = 0.95) -> Interval:
    """Interval of after's rate - before's: Newcombe's (1998) hybrid score interval (his method 10), built from the
    two Wilson intervals. Good coverage at small runs and at rates near 0 or 1, where the Wald interval fails."""
    (x1, n1), (x2, n2) = before, after
    _check(x1, n1, "before")
    _check(x2, n2, "after")
    l1, u1 = _astuple(wilson(x1, n1, confidence))
    l2, u2 = _astuple(wilson(x2, n2, confidence))
    p1 = x1 / n1 if n1 else 0.5
    p2 = x2 / n2 if n2 else 0.5
    d = p2 - p1
    return Interval(
        max(-1.0, d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)),
        min(1.0, d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)),
    )


def _astuple(i: Interval) -> tuple[float, float]:
    return i.low, i.high


def runs_to_decide(
    before: tuple[int, int], after: tuple[int, int], *, alpha: float = 0.05, margin: float = 0.2, power: float = 0.8
) -> int:
    """About how many more runs per side would decide a comparison: an estimate, not a promise.

    Normal-approximation sample sizes for the observed rates (shrunk as (passes+1)/(runs+2), Agresti-Caffo, so that
    0/3 and 3/3 do not look certain): to show the observed difference d at two-sided `alpha` with `power` (Fleiss's
    formula without continuity correction), n = (z_{1-a/2} sqrt(2 pq) + z_power sqrt(p1q1 + p2q2))^2 / d^2; or to
    rule out a difference of `margin` (equivalence), n = (z_{1-a/2} + z_{(1+power)/2})^2 (p1q1 + p2q2) / (margin -
    |d|)^2. Whichever is smaller, less the runs already made, at least 1.
    """
    (x1, n1), (x2, n2) = before, after
    _check(x1, n1, "before")
    _check(x2, n2, "after")
    _check_level("alpha", alpha)
    _check_level("power", power)
    p1, p2 = (x1 + 1) / (n1 + 2), (x2 + 1) / (n2 + 2)
    d = abs(p2 - p1)
    var = p1 * (1 - p1) + p2 * (1 - p2)
    za, zb = _z(1 - alpha), _NORMAL.inv_cdf(power)
    best = math.inf
    if d > 0:
        pbar = (p1 + p2) / 2
        best = ((za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(var)) / d) ** 2
    if d < margin:
        best = min(best, (za + _z(power)) ** 2 * var / (margin - d) ** 2)
    if math.isinf(best):
        return MAX_RUNS
    return max(1, min(MAX_RUNS, math.ceil(best) - min(n1, n2)))


def compare_cell(
    before: tuple[int, int], after: tuple[int, int], *, alpha: float = 0.05, margin: float = 0.2
) -> Verdict:
    """One scenario on two variants (or two result files), each side an independent binomial (passes, runs).

    WORSE / BETTER when Fisher's exact two-sided p < alpha; NO_DIFFERENCE when Newcombe's 1 - alpha interval of the
    effect lies inside (-margin, +margin), a difference of `margin` or more being ruled out (two one-sided tests at
    alpha/2 each: conservative); otherwise UNDECIDED with `runs_to_decide`.
    """
    _check_level("alpha", alpha)
    _check_level("margin", margin, 0.0, 1.0 + 1e-9)
    p = fisher_exact(before, after)
    return _verdict(before, after, p, alpha, margin)


def _rate(cell: tuple[int, int]) -> float:
    return cell[0] / cell[1] if cell[1] else 0.0


def _verdict(before: tuple[int, int], after: tuple[int, int], p: float, alpha: float, margin: float) -> Verdict:
    effect = _rate(after) - _rate(before)
    interval = newcombe(before, after, 1 - alpha)
    if p < alpha and effect != 0:
        return Verdict(BETTER if effect > 0 else WORSE, effect, interval, p, None)
    if -margin < interval.low and interval.high < margin:
        return Verdict(NO_DIFFERENCE, effect, interval, p, None)
    return Verdict(UNDECIDED, effect, interval, p, runs_to_decide(before, after, alpha=alpha, margin=margin))


# --- several scenarios ---------------------------------------------------------------------------------------------


def binom_test(successes: int, trials: int, p: float = 0.5) -> float:
    """The exact two-sided binomial test of "the success probability is p" (the sign test when p = 0.5): the sum of
    the outcomes no more probable than the observed one, as scipy.stats.binomtest and R's binom.test compute it."""
    _check(successes, trials, "binomial test")
    _check_level("p", p)
    if trials == 0:
        return 1.0
    lq, lp = math.log1p(-p), math.log(p)

    def logpmf(i: int) -> float:
        return _lcomb(trials, i) + i * lp + (trials - i) * lq

    cut = logpmf(successes) + math.log(_TIE)
    kept = [v for i in range(trials + 1) if (v := logpmf(i)) <= cut]
    if len(kept) == trials + 1:  # every outcome counts: exactly 1, not 1 less rounding
        return 1.0
    return min(1.0, math.fsum(math.exp(v) for v in kept))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's (1979) step-down adjustment: the i-th smallest of m p-values times (m - i + 1), made non-decreasing
    and capped at 1. Controls the chance of any false "significant" across the scenarios at alpha, whatever their
    dependence."""
    for v in pvalues:
        if not (isinstance(v, int | float) and 0.0 <= v <= 1.0):
            raise ValueError(f"p-values must be numbers in [0, 1], got {v!r}")
    m = len(pvalues)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def t_quantile(q: float, df: int) -> float:
    """Student's t quantile for integer degrees of freedom, by bisection on the closed-form CDF (Abramowitz & Stegun
    26.7.3-4): the standard library has no t distribution."""
    _check_level("q", q)
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"degrees of freedom must be a positive integer, got {df!r}")
    if df > 10_000:  # t is the normal to 5 digits there; keeps the loop bounded
        return _NORMAL.inv_cdf(q)
    if q < 0.5:
        return -t_quantile(1 - q, df)
    target = 2 * q - 1  # P(|T| < t)
    lo, hi = 0.0, 1.0
    while _t_central(hi, df) < target:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        if _t_central(mid, df) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _t_central(t: float, df: int) -> float:
    """P(|T| < t) for T ~ t(df), A&S 26.7.3 (odd df) and 26.7.4 (even df)."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for j in range(2, df, 2):  # terms c^j * (1*3*...*(j-1)) / (2*4*...*j)
            term *= c2 * (j - 1) / j
            total += term
        return s * total
    if df == 1:
        return 2 * theta / math.pi
    term, total = math.cos(theta), math.cos(theta)
    for j in range(3, df, 2):  # cos(theta) * c^(j-1) * (2*4*...*(j-1)) / (3*5*...*j)
        term *= c2 * (j - 1) / j
        total += term
    return 2 / math.pi * (theta + s * total)


def compare(
    cells: Mapping[str, tuple[tuple[int, int], tuple[int, int]]], *, alpha: float = 0.05, margin: float = 0.2
) -> tuple[dict[str, Verdict], Verdict]:
    """Per scenario and overall, for cells {scenario: (before, after)}.

    Per scenario: `compare_cell`, with Fisher's p-values Holm-adjusted across the scenarios (the intervals are not
    adjusted). Overall, the scenarios are the pairs: an exact sign test (two-sided binomial, p = 0.5) on the
    scenarios whose pass rate moved; the effect is the mean per-scenario difference, its 1 - alpha interval
    mean +- t_{m-1} SE where SE is the larger of the between-scenario standard error (sd/sqrt m) and the binomial one
    (sqrt(sum of the cells' variances)/m, rates shrunk as (passes+1)/(runs+2)) so that m identical differences do not
    give a zero-width interval. BETTER / WORSE when the sign test is significant; NO_DIFFERENCE when no scenario is
    significant and the interval lies inside (-margin, +margin); otherwise UNDECIDED, with the largest runs_to_decide
    of the undecided scenarios. One scenario: the overall verdict is that scenario's. Fewer than 6 scenarios cannot
    make a sign test significant at 0.05: their per-scenario verdicts decide.
    """
    _check_level("alpha", alpha)
    _check_level("margin", margin, 0.0, 1.0 + 1e-9)
    names = list(cells)
    if not names:
        raise ValueError("compare needs at least one scenario")
    raw = [fisher_exact(*cells[s]) for s in names]
    adjusted = holm(raw)
    per = {s: _verdict(*cells[s], p, alpha, margin) for s, p in zip(names, adjusted, strict=True)}
    if len(names) == 1:
        return per, per[names[0]]
    diffs = [v.effect for v in per.values()]
    m = len(diffs)
    mean = math.fsum(diffs) / m
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (m - 1))
    binom_var = 0.0
    for before, after in cells.values():
        for x, n in (before, after):
            q = (x + 1) / (n + 2)
            binom_var += q * (1 - q) / max(n, 1)
    se = max(sd / math.sqrt(m), math.sqrt(binom_var) / m)
    half = t_quantile(1 - alpha / 2, m - 1) * se
    interval = Interval(max(-1.0, mean - half), min(1.0, mean + half))
    up, down = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    p = binom_test(up, up + down)
    if p < alpha and up != down:
        overall = Verdict(BETTER if up > down else WORSE, mean, interval, p, None)
    elif (
        not any(v.verdict in (BETTER, WORSE) for v in per.values()) and -margin < interval.low < interval.high < margin
    ):
        overall = Verdict(NO_DIFFERENCE, mean, interval, p, None)
    else:
        todo = [v.runs_to_decide for v in per.values() if v.runs_to_decide is not None]
        overall = Verdict(UNDECIDED, mean, interval, p, max(todo) if todo else None)
    return per, overall


# --- sampling until decided ----------------------------------------------------------------------------------------


def _spend_obrien_fleming(alpha: float, t: float) -> float:
    # Lan & DeMets (1983): spends almost nothing early, nearly all of alpha at the end. Two-sided as gsDesign's
    # sfLDOF and rpact's asOF: alpha/2 per side, 2 - 2 Phi(z_{1-alpha/4} / sqrt t) each.
    return 2 * (2 - 2 * _NORMAL.cdf(_NORMAL.inv_cdf(1 - alpha / 4) / math.sqrt(t))) if t > 0 else 0.0


def _spend_pocock(alpha: float, t: float) -> float:
    # Lan & DeMets (1983), Pocock type: spends evenly on the log scale, stops large effects early.
    return alpha * math.log(1 + (math.e - 1) * t)


def _spend_hsd(gamma: float) -> Callable[[float, float], float]:
    # Hwang, Shih & DeCani (1990): gamma = -4 is close to O'Brien-Fleming, 1 close to Pocock.
    def spend(alpha: float, t: float) -> float:
        if gamma == 0:
            return alpha * t
        return alpha * (1 - math.exp(-gamma * t)) / (1 - math.exp(-gamma))

    return spend


def _spending(name: str | float) -> Callable[[float, float], float]:
    if name == "obrien-fleming":
        return _spend_obrien_fleming
    if name == "pocock":
        return _spend_pocock
    if isinstance(name, int | float) and not isinstance(name, bool) and -40 <= name <= 40:
        return _spend_hsd(float(name))
    raise ValueError(
        f"spending must be 'obrien-fleming', 'pocock' or a Hwang-Shih-DeCani gamma in [-40, 40], got {name!r}"
    )


@lru_cache(maxsize=64)
def nominal_levels(alpha: float, fractions: tuple[float, ...], spending: str | float = "obrien-fleming") -> list[float]:
    """Two-sided nominal p-value thresholds, one per look at the information `fractions` (increasing, last 1), such
    that a normal statistic checked at every look rejects "no difference" with probability `alpha` in all: the
    boundaries of the Lan-DeMets alpha-spending approach, computed by the Armitage-McPherson-Rowe (1969) recursion
    (numerical integration of the score statistic's sub-density between looks, Jennison & Turnbull 2000, ch. 19)."""
    spend = _spending(spending)
    grid = 240  # Simpson intervals per look; boundaries come out to ~4 digits, far below the simulation's noise
    levels: list[float] = []
    spent = 0.0
    # The score S_k = Z_k sqrt(t_k); between looks it gains an independent N(0, t_k - t_{k-1}) increment.
    xs: list[float] = []
    dens: list[float] = []
    prev_t = 0.0
    for k, t in enumerate(fractions):
        target = min(alpha, spend(alpha, t)) - spent
        step_sd = math.sqrt(t - prev_t)
        if k == 0:

            def crossing(c: float, t: float = t) -> float:
                return 2 * (1 - _NORMAL.cdf(c / math.sqrt(t)))
        else:
            weights = _simpson_weights(xs)
            px, pw = xs, [w * f for w, f in zip(weights, dens, strict=True)]

            def crossing(c: float, px: list[float] = px, pw: list[float] = pw, sd: float = step_sd) -> float:
                return math.fsum(
                    w * (_NORMAL.cdf((-c - x) / sd) + 1 - _NORMAL.cdf((c - x) / sd))
                    for x, w in zip(px, pw, strict=True)
                )

        if target <= 1e-15:
            bound = 12 * math.sqrt(t)  # nothing to spend at this look: a boundary no path reaches
        else:
            lo, hi = 0.0, 12 * math.sqrt(t)
            for _ in range(60):
                mid = (lo + hi) / 2
                if crossing(mid) > target:
                    lo = mid
                else:
                    hi = mid
            bound = hi
            spent += crossing(bound)
        z = bound / math.sqrt(t)
        levels.append(2 * (1 - _NORMAL.cdf(z)))
        # The sub-density of S_k on the continuation region (-bound, bound), for the next look.
        new_xs = [-bound + 2 * bound * i / grid for i in range(grid + 1)]
        if k == 0:
            new_dens = [_NORMAL.pdf(x / math.sqrt(t)) / math.sqrt(t) for x in new_xs]
        else:
            new_dens = [
                math.fsum(w * _NORMAL.pdf((y - x) / step_sd) / step_sd for x, w in zip(px, pw, strict=True))
                for y in new_xs
            ]
        xs, dens, prev_t = new_xs, new_dens, t
    return levels


def _simpson_weights(xs: list[float]) -> list[float]:
    n = len(xs) - 1
    h = (xs[-1] - xs[0]) / n
    return [h / 3 * (1 if i in (0, n) else 4 if i % 2 else 2) for i in range(n + 1)]


class Sequential:
    """The rule of `--until-decided`: looks after every round and keeps its error rates all the same.

    A group-sequential design with Lan-DeMets alpha spending (Lan & DeMets 1983; Jennison & Turnbull 2000). The looks
    are planned at round_size, 2 round_size, ... max_runs runs per side (information fractions n / max_runs); the
    boundaries come from `nominal_levels` (the Armitage-McPherson-Rowe recursion under the normal approximation) and
    are applied to exact statistics:

    - difference: WORSE / BETTER when Fisher's exact two-sided p-value is at or below look k's nominal level for a
      total two-sided `alpha` with `spending`. Chance of a false better/worse in a cell with no difference: <= alpha
      (Fisher's test is conservative, so a little less).
    - equivalence (the futility stop, so that cells without a difference stop early too): NO_DIFFERENCE when
      Newcombe's interval at 1 - 2 q_k lies inside (-margin, +margin), q_k being look k's one-sided nominal level for
      a total one-sided `alpha` spent with `equivalence_spending` (two one-sided tests, each a sequential test at
      alpha). Chance of calling NO_DIFFERENCE when the true difference is `margin` or more: about alpha (normal
      approximation; simulated 4.7-5.7 % exactly at a margin of 0.3, less beyond it).
    - at max_runs per side, whatever is still open is UNDECIDED ("not enough evidence").

    The two stops do not weaken each other: stopping for one only removes chances to err on the other. A call with
    more runs than planned is judged at the last planned look not beyond it (its boundary is stricter, so safe).
    `spending`: "obrien-fleming" (Lan-DeMets O'Brien-Fleming type, the default), "pocock" (Lan-DeMets Pocock type) or
    a Hwang-Shih-DeCani gamma (a number; -4 is close to O'Brien-Fleming, 1 to Pocock).
    """

    def __init__(
        self,
        *,
        alpha: float = 0.05,
        margin: float = 0.2,
        max_runs: int = 40,
        round_size: int = 5,
        spending: str | float = "obrien-fleming",
        equivalence_spending: str | float = "pocock",
    ) -> None:
        _check_level("alpha", alpha, 0.0, 0.5)
        _check_level("margin", margin, 0.0, 1.0 + 1e-9)
        for name, v in (("max_runs", max_runs), ("round_size", round_size)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 100_000:
                raise ValueError(f"{name} must be an integer from 1 to 100000, got {v!r}")
        if round_size > max_runs:
            raise ValueError(f"round_size ({round_size}) must not exceed max_runs ({max_runs})")
        self.alpha, self.margin, self.max_runs, self.round_size = alpha, margin, max_runs, round_size
        looks = [*range(round_size, max_runs, round_size), max_runs]
        if len(looks) > 200:
            raise ValueError(f"{len(looks)} looks (max_runs / round_size) is more than the 200 this rule plans for")
        self.looks: tuple[int, ...] = tuple(looks)
        fractions = tuple(n / max_runs for n in looks)
        self.difference_levels: tuple[float, ...] = tuple(nominal_levels(alpha, fractions, spending))
        # One-sided boundaries at alpha are the two-sided ones at 2 alpha, up to the chance of crossing both
        # boundaries in one path (negligible: ~1e-6 here); the one-sided level is half the two-sided one.
        self.equivalence_levels: tuple[float, ...] = tuple(
            v / 2 for v in nominal_levels(2 * alpha, fractions, equivalence_spending)
        )

    def look(self, runs: int) -> int | None:
        """The index of the planned look for a cell with `runs` per side (None before the first)."""
        k = None
        for i, n in enumerate(self.looks):
            if runs >= n:
                k = i
        return k

    def decide(self, before: tuple[int, int], after: tuple[int, int]) -> str | None:
        """After a round: BETTER / WORSE / NO_DIFFERENCE when decided, None to keep sampling; at max_runs per side
        the final verdict (UNDECIDED possible)."""
        (x1, n1), (x2, n2) = before, after
        _check(x1, n1, "before")
        _check(x2, n2, "after")
        k = self.look(min(n1, n2))
        if k is None:
            return None
        effect = _rate(after) - _rate(before)
        if effect != 0 and fisher_exact(before, after) <= self.difference_levels[k]:
            return BETTER if effect > 0 else WORSE
        ci = newcombe(before, after, 1 - 2 * self.equivalence_levels[k])
        if -self.margin < ci.low and ci.high < self.margin:
            return NO_DIFFERENCE
        if min(n1, n2) >= self.max_runs:
            return UNDECIDED
        return None
