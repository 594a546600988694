"""The Dask executor (the optional `cireil[dask]` extra) on a LocalCluster: same results as the local pool,
each run carrying its agent copy, --jobs respected, a stop that cancels what has not finished."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from cireil.runtime.evals.command import plan
from cireil.runtime.evals.executors import DaskExecutor
from cireil.runtime.evals.matrix import run_matrix
from cireil.runtime.evals.scenario import load_scenarios
from cireil.runtime.scaffold import init
from cireil.testing.scripted_llm import ScriptedLLM
from evalkit import NOTES_SCENARIO, model, tree_digest, write
from turnkit import turn_agent

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_the_demo_suite_on_a_dask_cluster(tmp_path, client, request):
    agent = init(tmp_path / "wren")
    scenarios, variants = plan([str(agent / "evals")], None, [])
    before = tree_digest(agent)
    report = run_matrix(agent, scenarios, variants, executor=DaskExecutor(client), keep=tmp_path / "kept")
    # --keep leaves a remote run's copy on its worker (this machine's temp folder here): gone with the test
    for r in report.results:
        if "cireil-eval-remote-" in (r.agent_dir or ""):
            request.addfinalizer(lambda d=Path(r.agent_dir).parent: shutil.rmtree(d, ignore_errors=True))
    assert {(r.scenario, r.variant): r.status for r in report.results} == {
        (s, v): "fail" if (s, v) == ("reminder", "no-schedule") else "pass"
        for s in ("reminder", "volunteers", "workspace")
        for v in ("baseline", "no-schedule")
    }, report.failures_text()
    # the runs unpacked the copy they were sent: workers on other machines never need this one's files
    assert all("cireil-eval-remote-" in r.agent_dir for r in report.results)
    assert tree_digest(agent) == before
    # the failed run's recorded turn came back from the worker with its result; passed runs carry none
    (failed,) = report.failed()
    assert [(c.name, c.success) for s in failed.turns[0].steps for c in s.calls] == [
        ("schedule", False),
        ("respond", True),
    ]
    assert all(r.recording is None for r in report.results if r.passed)


def test_jobs_bounds_the_cluster_and_stop_cancels_the_rest(tmp_path, client):
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def slow(body: dict):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.3)
        with lock:
            state["now"] -= 1
        return ("read", {"path": "/workspace/notes.md"})

    with ScriptedLLM() as llm:
        llm.default = model(slow)
        agent = turn_agent(tmp_path / "agents", llm.base_url)
        notes = load_scenarios([write(tmp_path / "notes.toml", NOTES_SCENARIO)])
        report = run_matrix(agent, notes, repeat=3, executor=DaskExecutor(client, jobs=1))
        assert report.passed == 3 and state["peak"] == 1

        def ctrl_c(r) -> None:
            if len(r.results) == 1 and not r.interrupted:
                raise KeyboardInterrupt

        stopped = run_matrix(agent, notes, repeat=10, executor=DaskExecutor(client, jobs=2), on_progress=ctrl_c)
        assert stopped.interrupted and 1 <= len(stopped.results) < 10
    assert Path(agent).is_dir()


def test_the_cli_runs_on_a_scheduler_address(tmp_path, client):
    import subprocess
    import sys

    agent = init(tmp_path / "wren")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cireil",
            "eval",
            str(agent),
            str(agent / "evals"),
            "--variant",
            "baseline",
            "--dask",
            client.scheduler.address,
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    assert "3/3 runs passed (100%)" in out.stdout


def test_an_unreachable_scheduler_is_an_error_that_says_so():
    with pytest.raises(OSError):
        DaskExecutor("tcp://127.0.0.1:9", connect_timeout=1)
