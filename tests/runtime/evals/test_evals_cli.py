"""`cireil eval` and `cireil eval-compare` as a shell (and CI) uses them: output, files, exit status, Ctrl-C."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from cireil.runtime.evals.progress import TerminalProgress
from cireil.runtime.evals.report import EvalReport
from cireil.runtime.evals.worker import RunResult
from evalkit import NOTES_SCENARIO, model, write
from turnkit import turn_agent

READ_NOTES = ("read", {"path": "/workspace/notes.md"})


def cireil(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cireil", *map(str, args)], capture_output=True, text=True, timeout=240, **kw
    )


@pytest.fixture
def setup(tmp_path, llm):
    agent = turn_agent(tmp_path / "agents", llm.base_url)
    write(tmp_path / "evals" / "notes.toml", NOTES_SCENARIO)
    write(tmp_path / "evals" / "variants.toml", '[baseline]\n[described]\ndescriptions = { read = "ALWAYS read." }\n')
    return agent, tmp_path / "evals"


def first_by_description(body: dict):
    described = any("ALWAYS" in t["function"]["description"] for t in body["tools"])
    return READ_NOTES if described else ("list-dir", {"path": "/workspace"})


def test_eval_prints_the_grid_writes_ci_files_and_gates_on_min_pass(tmp_path, setup, llm):
    agent, evals = setup
    llm.default = model(first_by_description)
    out = cireil(
        "eval",
        agent,
        evals,
        "--repeat",
        2,
        "--json",
        tmp_path / "r.json",
        "--junit",
        tmp_path / "r.xml",
        "--min-pass",
        "0.5",
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["scenario", "baseline", "described"]
    assert lines[1].startswith("notes") and "0/2" in lines[1] and "2/2" in lines[1]
    assert "FAIL notes [baseline #1]" in out.stdout and "  - call 1: expected read" in out.stdout
    assert "2/4 runs passed (50%)" in out.stdout
    assert "[4/4]" in out.stderr  # progress, one line per run when stderr is not a terminal
    assert json.loads((tmp_path / "r.json").read_text())["pass_rate"] == 0.5
    assert f"open a failed run's recorded turn: cireil eval-show {tmp_path / 'r.json'} RUN_ID" in out.stdout
    assert len(ET.parse(tmp_path / "r.xml").getroot().findall("testsuite")) == 2
    only = cireil("eval", agent, evals / "notes.toml", "--variant", "baseline", "--min-pass", "0.9")
    assert only.returncode == 1
    assert "pass rate 0% is below --min-pass 90%" in only.stderr


def test_eval_show_opens_a_failed_runs_recorded_turn(tmp_path, setup, llm):
    agent, evals = setup
    llm.default = model(first_by_description)
    ran = cireil("eval", agent, evals, "--json", tmp_path / "r.json", "--min-pass", "0")
    assert ran.returncode == 0, ran.stderr
    report = EvalReport.load(tmp_path / "r.json")
    (failed,) = report.failed()
    listing = cireil("eval-show", tmp_path / "r.json")
    assert listing.returncode == 0
    assert listing.stdout.splitlines()[0] == (
        f'{failed.run_id}  notes [baseline #1] fail: call 1: expected read(path="/workspace/notes.md"): got list-dir'
    )
    shown = cireil("eval-show", tmp_path / "r.json", failed.run_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"FAIL notes [baseline #1] run {failed.run_id} · session notebook:eval")
    assert "turn 1 · 'what is in my notes?' · ended respond" in lines
    assert "recorded turn 1: 2 model calls" in lines
    assert '    → list-dir {"path": "/workspace"}: ok' in lines  # the call the scripted model made, as it made it
    assert any(line.startswith("    + tool result: ") and "entries" in line for line in lines)
    passed = next(r for r in report.results if r.passed)
    assert (
        "passed: only failed runs keep their recorded turns"
        in cireil("eval-show", tmp_path / "r.json", passed.run_id).stdout
    )
    missing = cireil("eval-show", tmp_path / "r.json", "nope")
    assert missing.returncode == 2
    assert (
        missing.stderr.strip()
        == f"cireil: error: no run 'nope' in {tmp_path / 'r.json'} (failed runs: {failed.run_id})"
    )
    assert cireil("eval-show", tmp_path / "nothing.json").returncode == 2
    batch = failed.run_id.split("-")[0]  # every run of one eval shares it: a start of an id must be unique
    both = cireil("eval-show", tmp_path / "r.json", batch)
    assert both.returncode == 2 and f"{len(report.results)} runs start with '{batch}'" in both.stderr


def test_bad_files_exit_2_with_every_problem_by_line(tmp_path, setup):
    agent, evals = setup
    bad = write(tmp_path / "bad.toml", 'message = "x"\n[answer]\ncontians = "y"\n')
    out = cireil(
        "eval", agent, bad, evals / "notes.toml", "--variants", evals / "variants.toml", "--variant", "basline"
    )
    assert out.returncode == 2
    assert f"{bad}:3: unknown key 'contians' in [answer] (did you mean 'contains'?)" in out.stderr
    assert "no variant 'basline' (did you mean 'baseline'?)" in out.stderr
    assert out.stdout == ""
    usage = cireil("eval", agent, evals, "--min-pass", "2")
    assert usage.returncode == 2 and "between 0 and 1" in usage.stderr


def test_ctrl_c_stops_the_runs_and_writes_what_finished(tmp_path, setup, llm):
    agent, evals = setup

    def slow(body: dict):
        time.sleep(0.5)
        return READ_NOTES

    llm.default = model(slow)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cireil",
            "eval",
            str(agent),
            str(evals / "notes.toml"),
            "--repeat",
            "20",
            "--jobs",
            "2",
            "--json",
            str(tmp_path / "part.json"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while sum(1 for r in llm.requests) < 5 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stdout
    saved = EvalReport.load(tmp_path / "part.json")
    assert saved.interrupted and 1 <= len(saved.results) < 20
    assert all(r.passed for r in saved.results)


def test_eval_compare_says_what_got_worse(tmp_path):
    def report(passes: list[bool]) -> EvalReport:
        r = EvalReport("agent", ["notes"], ["base"], total=len(passes))
        for n, ok in enumerate(passes):
            r.add(RunResult(f"r{n}", "notes", "base", n, "notebook:eval", status="pass" if ok else "fail"))
        return r

    report([True, True]).write_json(tmp_path / "a.json")
    report([True, False]).write_json(tmp_path / "b.json")
    report([True] * 12).write_json(tmp_path / "many.json")
    report([False] * 12).write_json(tmp_path / "none.json")
    # one failure in two runs is noise, not a regression (issue 33: today's "any drop" rule is gone)
    noisy = cireil("eval-compare", tmp_path / "a.json", tmp_path / "b.json")
    assert noisy.returncode == 0 and "not enough evidence" in noisy.stdout
    worse = cireil("eval-compare", tmp_path / "many.json", tmp_path / "none.json")
    assert worse.returncode == 1 and "  notes  12/12 → 0/12  worse" in worse.stdout
    assert "significant regression: scenario notes got worse" in worse.stderr
    better = cireil("eval-compare", tmp_path / "none.json", tmp_path / "many.json")
    assert better.returncode == 0 and "better" in better.stdout
    (tmp_path / "c.json").write_text("{}")
    assert cireil("eval-compare", tmp_path / "a.json", tmp_path / "c.json").returncode == 2


def test_the_terminal_bar_redraws_one_line():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    bar = TerminalProgress(stream, width=10)
    r = EvalReport("agent", ["s"], ["base"], total=2)
    bar(r)
    r.add(RunResult("r0", "s", "base", 0, "notebook:eval", status="pass"))
    bar(r)
    r.add(RunResult("r1", "s", "base", 1, "notebook:eval", status="fail"))
    bar(r)
    frames = stream.getvalue().split("\r")[1:]
    assert frames[1] == "[#####.....] 1/2  1 passed  0 failed "
    assert frames[2] == "[##########] 2/2  1 passed  1 failed \n"
