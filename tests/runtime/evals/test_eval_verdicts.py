"""Issue 33: every eval number with its uncertainty (text, JSON, JUnit), paired comparisons of variants and of
two result files, the eval-compare gate that fails only on evidence, and --until-decided on a seeded model."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from statistics import NormalDist

import pytest

from cireil.runtime.evals.matrix import run_matrix
from cireil.runtime.evals.report import EvalReport, compare
from cireil.runtime.evals.scenario import load_scenarios
from cireil.runtime.evals.stats import Sequential
from cireil.runtime.evals.variants import read_variants
from cireil.runtime.evals.worker import RunResult
from evalkit import last_user, model, tool_description, write
from turnkit import turn_agent

READ_NOTES = ("read", {"path": "/workspace/notes.md"})


def cireil(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cireil", *map(str, args)], capture_output=True, text=True, timeout=300
    )


def built(cells: dict[tuple[str, str], tuple[int, int]], repeat: int = 0) -> EvalReport:
    """A report of (scenario, variant) -> (passes, runs), without running anything."""
    report = EvalReport(
        "agent",
        list(dict.fromkeys(s for s, _ in cells)),
        list(dict.fromkeys(v for _, v in cells)),
        repeat=repeat,
    )
    n = 0
    for (s, v), (passes, runs) in cells.items():
        for i in range(runs):
            status = "pass" if i < passes else "fail"
            report.add(RunResult(f"r{n:05d}", s, v, i, "notebook:eval", status=status, tokens=10))
            n += 1
    report.total = n
    return report


def wilson_reference(passes: int, runs: int) -> tuple[float, float]:
    """Wilson's score interval, 95%, in its closed form (Wilson 1927; Newcombe 1998, method 3)."""
    z = NormalDist().inv_cdf(0.975)
    p = passes / runs
    centre = (p + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z / (1 + z * z / runs) * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs))
    return centre - half, centre + half


def test_every_cell_carries_its_interval_pass_hat_k_and_flaky_mark_in_text_json_and_junit(tmp_path):
    report = built({("notes", "base"): (7, 10), ("notes", "terse"): (10, 10), ("todo", "base"): (0, 10)}, repeat=10)
    low, high = wilson_reference(7, 10)
    assert (round(low, 4), round(high, 4)) == (0.3968, 0.8922)  # Newcombe (1998) table I, 7/10 (hand-checked)
    grid = report.grid_text().splitlines()
    assert grid[1].startswith("notes") and "7/10 70% [40–89%] pass@10 100% pass^10 0% flaky" in grid[1]
    assert "10/10 100% [72–100%] pass@10 100% pass^10 100%" in grid[1] and "flaky" not in grid[1].split("10/10")[1]
    assert "0/10 0% [0–28%] pass@10 0% pass^10 0%" in grid[2]
    assert "17/30 runs passed (57%), 95% interval [39–73%]" in report.summary()

    report.write_json(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    cell = data["grid"][0]
    assert cell["interval"]["low"] == pytest.approx(low) and cell["interval"]["high"] == pytest.approx(high)
    # pass@k and pass^k, unbiased over the n runs (Chen et al. 2021; tau-bench's pass^k): k = 10 = n
    assert (cell["k"], cell["pass_at_k"], cell["pass_hat_k"], cell["flaky"]) == (10, 1.0, 0.0, True)
    assert cell["pass_at_1"] == cell["pass_hat_1"] == pytest.approx(0.7)
    assert data["format"] == "cireil-eval/1" and data["repeat"] == 10
    loaded = EvalReport.load(tmp_path / "r.json")
    assert loaded.as_dict()["grid"] == data["grid"] and loaded.k == 10

    report.write_junit(tmp_path / "r.xml")
    suites = ET.parse(tmp_path / "r.xml").getroot()
    base = suites.find("testsuite[@name='base']")
    case = base.find("testcase[@classname='notes']")
    props = {p.get("name"): p.get("value") for p in case.find("properties")}
    assert props["interval_low"] == f"{low:.4f}" and props["interval_high"] == f"{high:.4f}"
    assert (props["k"], props["pass_hat_k"], props["pass_at_k"], props["flaky"]) == ("10", "0.0000", "1.0000", "true")
    assert (props["cell_passed"], props["cell_runs"], props["run_id"]) == ("7", "10", "r00000")


def test_a_result_file_of_the_older_shape_still_loads_and_gets_intervals(tmp_path):
    report = built({("notes", "base"): (3, 4)})
    data = report.as_dict()
    for key in ("interval", "repeat", "comparisons"):
        data.pop(key)
    for cell in data["grid"]:
        for key in ("interval", "k", "pass_at_1", "pass_hat_1", "pass_at_k", "pass_hat_k", "flaky"):
            cell.pop(key)
    (tmp_path / "old.json").write_text(json.dumps(data))
    loaded = EvalReport.load(tmp_path / "old.json")
    assert loaded.k == 4  # no repeat recorded: the runs of its cells
    assert "3/4 75% [30–95%] pass@4 100% pass^4 0% flaky" in loaded.grid_text()


def test_variants_are_compared_with_the_baseline_under_the_grid():
    cells = {}
    for s in ("a", "b", "c"):
        cells[(s, "base")] = (20, 20)
    cells[("a", "new")], cells[("b", "new")], cells[("c", "new")] = (4, 20), (20, 20), (18, 20)
    report = built(cells, repeat=20)
    text = report.comparison_text().splitlines()
    assert text[0].startswith("new vs base, scenario by scenario (alpha 0.05, Holm-adjusted")
    assert text[1].split()[:5] == ["a", "20/20", "→", "4/20", "worse"]
    assert text[2].split()[:7] == ["b", "20/20", "→", "20/20", "no", "detectable", "difference"]
    assert text[3].split()[:7] == ["c", "20/20", "→", "18/20", "not", "enough", "evidence"]
    assert "more runs each would decide" in text[3]
    assert text[-1].startswith("overall: ")
    (comparison,) = report.as_dict()["comparisons"]
    assert comparison["before"] == "base" and comparison["regressed"] is True
    assert [c["verdict"] for c in comparison["scenarios"]] == [
        "worse",
        "no detectable difference",
        "not enough evidence",
    ]
    report.baseline = "new"  # --baseline NAME
    (flipped,) = report.comparisons()
    assert flipped.before == "new" and flipped.verdict_of("a") == "better"
    assert built({("a", "base"): (2, 2)}).comparison_text() == ""  # one variant: nothing to compare


def test_min_pass_fails_only_when_the_top_of_the_interval_is_below_it():
    nine = built({("a", "base"): (9, 10)})
    assert not nine.below(0.95)  # 90% measured, but [60–98%] does not rule 95% out
    assert nine.below(0.99)
    assert not built({("a", "base"): (10, 10)}).below(1.0)
    assert built({("a", "base"): (4, 5)}).below(1.0)  # any failure is below 1.0: the default stays strict


@pytest.fixture
def files(tmp_path):
    def save(name: str, cells: dict[tuple[str, str], tuple[int, int]]) -> str:
        path = tmp_path / name
        built(cells).write_json(path)
        return str(path)

    return save


def test_eval_compare_exits_1_only_on_a_significant_regression(files):
    scenarios = ("notes", "todo", "files")
    before = files("before.json", {(s, "base"): (20, 20) for s in scenarios})
    regressed = files(
        "regressed.json", {("notes", "base"): (5, 20), ("todo", "base"): (20, 20), ("files", "base"): (19, 20)}
    )
    out = cireil("eval-compare", before, regressed)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "  notes  20/20 → 5/20   worse" in out.stdout
    assert "significant regression: scenario notes got worse (alpha 0.05)" in out.stderr

    # a noisy drop: a few runs, fewer passes; not evidence of anything, and it says what would be
    few = files("few.json", {(s, "base"): (5, 5) for s in scenarios})
    fewer = files("fewer.json", {("notes", "base"): (3, 5), ("todo", "base"): (5, 5), ("files", "base"): (4, 5)})
    noisy = cireil("eval-compare", few, fewer)
    assert noisy.returncode == 0, noisy.stderr
    line = next(x for x in noisy.stdout.splitlines() if x.startswith("  notes"))
    assert "not enough evidence" in line and "more runs each would decide" in line
    assert noisy.stderr == ""

    same = cireil("eval-compare", before, before)
    assert same.returncode == 0
    assert all("no detectable difference" in x for x in same.stdout.splitlines()[1:4])
    # --margin: a tighter "no difference" needs more runs than these; --alpha is checked like --min-pass
    strict = cireil("eval-compare", before, before, "--margin", "0.05")
    assert strict.returncode == 0 and "not enough evidence" in strict.stdout
    assert cireil("eval-compare", before, regressed, "--alpha", "0.000001").returncode == 0
    bad = cireil("eval-compare", before, before, "--alpha", "2")
    assert bad.returncode == 2 and "--alpha" in bad.stderr


def test_eval_compare_names_what_only_one_file_has(files):
    before = files("a.json", {("notes", "base"): (5, 5), ("old", "base"): (5, 5)})
    after = files("b.json", {("notes", "base"): (5, 5), ("new", "base"): (1, 5)})
    out = cireil("eval-compare", before, after)
    assert out.returncode == 0
    assert "scenario old: only in the first result" in out.stdout
    assert "scenario new: only in the second result" in out.stdout
    found = compare(EvalReport.load(before), EvalReport.load(after))
    assert list(found.comparisons[0].scenarios) == ["notes"]


# -- --until-decided on a model whose tool choice is a seeded coin per scenario and variant -------------------

# the chance that the model reads the notes (the right call) in each scenario x variant
CHANCE = {
    ("differ", "baseline"): 0.95,
    ("differ", "changed"): 0.15,
    ("same", "baseline"): 1.0,
    ("same", "changed"): 1.0,
}


def coin_model(seed: int):
    """A stand-in whose first call is right with CHANCE's probability, from one seeded generator per cell: a
    cell's n-th draw is the same whichever order runs reach the server in, so each round's passes are fixed."""
    generators = {key: random.Random(f"{seed}-{key}") for key in CHANCE}
    lock = threading.Lock()

    def first(body: dict):
        scenario = "differ" if "differ" in last_user(body) else "same"
        variant = "changed" if "CHANGED" in tool_description(body, "read") else "baseline"
        with lock:
            right = generators[(scenario, variant)].random() < CHANCE[(scenario, variant)]
        return READ_NOTES if right else ("list-dir", {"path": "/workspace"})

    return model(first)


SCENARIO = """\
    message = "{said}: what is in my notes?"
    [[expect.call]]
    tool = "read"
    [answer]
    contains = "milk"
"""


@pytest.fixture
def coin_setup(tmp_path, llm):
    agent = turn_agent(tmp_path / "agents", llm.base_url)
    evals = tmp_path / "evals"
    write(evals / "differ.toml", SCENARIO.format(said="differ"))
    write(evals / "same.toml", SCENARIO.format(said="same"))
    write(evals / "variants.toml", '[baseline]\n[changed]\ndescriptions = { read = "CHANGED: read a file." }\n')
    return agent, evals


def test_until_decided_stops_each_cell_when_decided_with_fewer_runs_than_a_fixed_repeat(coin_setup, llm):
    agent, evals = coin_setup
    llm.default = coin_model(seed=33)
    scenarios = load_scenarios([evals])
    variants = read_variants(evals / "variants.toml")
    rule = Sequential(max_runs=20, round_size=5)
    report = run_matrix(agent, scenarios, variants, jobs=2, until=rule)
    assert report.decisions[("differ", "changed")] == ("worse", "decided")
    assert report.decisions[("same", "changed")][0] in ("no detectable difference", "not enough evidence")
    runs = {key: len(report.cell(*key).runs) for key in (("differ", "baseline"), ("differ", "changed"))}
    assert runs[("differ", "changed")] < 20 and runs[("differ", "baseline")] == runs[("differ", "changed")]
    assert len(report.results) < 2 * 2 * 20  # what --repeat 20 over the same cells runs
    assert report.total == len(report.results) and report.repeat == 5
    compared = report.comparison_text()
    assert "decided after" in compared
    data = report.as_dict()
    assert {(d["scenario"], d["variant"]) for d in data["until_decided"]} == {
        ("differ", "changed"),
        ("same", "changed"),
    }


def test_until_decided_from_the_shell_says_what_stayed_undecided(tmp_path, coin_setup, llm):
    agent, evals = coin_setup
    llm.default = coin_model(seed=7)
    # one round of five runs per cell: too few for "same" to be called anything, so it stays undecided
    out = cireil(
        "eval", agent, evals, "--until-decided", "--max-runs", 5, "--json", tmp_path / "r.json", "--min-pass", 0
    )
    assert out.returncode == 0, out.stderr
    assert "undecided: same on changed (stopped: max-runs)" in out.stdout
    assert "changed vs baseline, scenario by scenario" in out.stdout
    loaded = EvalReport.load(tmp_path / "r.json")
    assert loaded.decisions[("same", "changed")] == ("not enough evidence", "max-runs")
    assert len(loaded.results) == 2 * 2 * 5
    one = cireil(
        "eval",
        agent,
        evals / "same.toml",
        "--variant",
        "baseline",
        "--variants",
        evals / "variants.toml",
        "--until-decided",
    )
    assert one.returncode == 2 and "--until-decided compares variants: it needs two or more" in one.stderr
    wrong = cireil("eval", agent, evals, "--baseline", "basline")
    assert wrong.returncode == 2 and "--baseline basline: not a variant of this eval" in wrong.stderr


def test_a_token_budget_stops_the_rounds(coin_setup, llm):
    agent, evals = coin_setup
    llm.default = coin_model(seed=1)
    report = run_matrix(
        agent,
        load_scenarios([evals]),
        read_variants(evals / "variants.toml"),
        jobs=2,
        until=Sequential(max_runs=40, round_size=5),
        budget_tokens=1,
    )
    assert len(report.results) == 2 * 2 * 5  # the first round spends it: no second one
    assert set(report.decisions.values()) <= {("not enough evidence", "budget"), ("worse", "decided")}
    assert ("not enough evidence", "budget") in report.decisions.values()
    assert "stopped: budget" in report.undecided_text()
