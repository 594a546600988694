"""The demo agent's scenario suite (kernel_ext/cireil/demo/evals): deterministic, offline, run by CI here."""

from __future__ import annotations

from pathlib import Path

from cireil.runtime.evals.command import plan
from cireil.runtime.evals.matrix import run_matrix
from cireil.runtime.scaffold import demo_source, init
from evalkit import tree_digest


def test_the_demo_suite_passes_on_the_agent_as_it_is_and_catches_the_no_schedule_variant(tmp_path):
    demo = Path(str(demo_source()))
    agent = init(tmp_path / "wren")  # what a person gets from `cireil init`: the suite comes with it
    suite = agent / "evals"
    scenarios, variants = plan([str(suite)], None, [])
    assert [s.name for s in scenarios] == ["reminder", "volunteers", "workspace"]
    assert all(s.deterministic for s in scenarios)
    assert [v.name for v in variants] == ["baseline", "no-schedule"]
    before = tree_digest(agent)
    report = run_matrix(agent, scenarios, variants, jobs=2)
    assert {(r.scenario, r.variant): r.status for r in report.results} == {
        ("reminder", "baseline"): "pass",
        ("volunteers", "baseline"): "pass",
        ("workspace", "baseline"): "pass",
        ("reminder", "no-schedule"): "fail",
        ("volunteers", "no-schedule"): "pass",
        ("workspace", "no-schedule"): "pass",
    }, report.failures_text()
    (failed,) = report.failed()
    assert "schedule was called but it failed: Tool 'schedule' is not available." in failed.failures[0]
    assert tree_digest(agent) == before
    assert not list(demo.rglob("__pycache__"))  # the check module left nothing behind in the package
