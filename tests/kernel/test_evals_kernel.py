"""`%cireil eval` in a real kernel: a grid updated in place, escaped HTML, usage errors, interrupt."""

from __future__ import annotations

import time

import pytest

from cireil.runtime.scaffold import init
from cireil.testing.scripted_llm import ScriptedLLM
from evalkit import NOTES_SCENARIO, model, write
from htmlcheck import problems
from kernelharness import Kernel
from turnkit import turn_agent


@pytest.fixture
def kernel(tmp_path):
    k = Kernel(cwd=tmp_path)
    yield k
    k.shutdown()


def updates(run) -> list[dict]:
    return [m for m in run.messages if m["msg_type"] in ("display_data", "update_display_data")]


def test_eval_of_the_loaded_demo_fills_a_grid_in_place(tmp_path, kernel):
    agent = init(tmp_path / "wren")
    kernel.run("%load_ext cireil")
    loaded = kernel.run("import sys; print('cireil.runtime.evals' in sys.modules)")
    assert loaded.stdout.strip() == "False"  # %load_ext stays light: evals load on first use
    kernel.run(f"%cireil load {agent}")
    run = kernel.run("%cireil eval --jobs 2", timeout=180)
    shown = updates(run)
    assert shown[0]["msg_type"] == "display_data" and len(shown) >= 3
    ids = {m["content"]["transient"]["display_id"] for m in shown}
    assert len(ids) == 1  # one display, updated in place
    assert all(m["msg_type"] == "update_display_data" for m in shown[1:])
    assert "running: 0/6 runs finished" in shown[0]["content"]["data"]["text/plain"]
    final = shown[-1]["content"]["data"]
    assert "5/6 runs passed (83%), 95% interval [44–97%]" in final["text/plain"]
    assert "min-pass" not in final["text/plain"]  # the demo's intended failure, judged against no threshold (issue 34)
    assert "FAIL reminder [no-schedule #1]" in final["text/plain"]
    html = final["text/html"]
    assert "<details><summary>" in html and "<script" not in html.lower()
    assert "schedule was called but it failed: Tool &#x27;schedule&#x27; is not available." in html
    # the failed run folds open to its recorded turn, in the steps view of %cireil steps; passed runs have none
    assert html.count("recorded turn · 2 model calls</summary>") == 1
    opened = html[html.index("recorded turn · 2 model calls</summary>") :]
    assert "turn 1 · &#x27;Remind me to water the seedlings" in opened
    assert "step 1 · " in opened and "called schedule" in opened and "request as POSTed" in opened
    assert "report.results[k].turns[i].steps[j]" in opened
    assert problems(final) == []
    live = [m["content"]["data"] for m in shown if "running:" in m["content"]["data"]["text/plain"]]
    assert live and not any("recorded turn ·" in d["text/html"] for d in live)  # drawn when the eval ends


def test_names_and_failures_are_escaped_and_usage_errors_are_one_line(tmp_path, kernel):
    agent = init(tmp_path / "wren")
    scenario = write(
        tmp_path / "odd.toml",
        """\
        name = "<img src=x onerror=alert(1)>"
        message = "hi"
        [answer]
        contains = "<b>never</b>"
        [[reply]]
        calls = [{ tool = "respond", args = { content = "<script>hello</script>" } }]
        """,
    )
    kernel.run("%load_ext cireil")
    run = kernel.run(f"%cireil eval {scenario} --agent {agent} --jobs 1", timeout=120)
    html = updates(run)[-1]["content"]["data"]["text/html"]
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;b&gt;never&lt;/b&gt;" in html and "<b>never" not in html
    bad = kernel.run("%cireil eval --repeat zero", ok=False)
    assert bad.stderr.startswith("UsageError: argument --repeat: not a whole number: 'zero'; usage: %cireil eval")
    none = kernel.run("%cireil eval", ok=False)
    assert none.stderr.startswith("UsageError: no agent: run `%cireil load DIR` first")
    broken = write(tmp_path / "broken.toml", 'message = "x"\n[answer]\ncontians = "y"\n')
    err = kernel.run(f"%cireil eval {broken} --agent {agent}", ok=False)
    assert err.stderr.startswith("UsageError: ")
    assert f"{broken}:3: unknown key 'contians' in [answer] (did you mean 'contains'?)" in err.stderr


def test_interrupting_the_cell_keeps_the_finished_runs(tmp_path, kernel):
    with ScriptedLLM() as llm:

        def slow(body: dict):
            time.sleep(0.5)
            return ("read", {"path": "/workspace/notes.md"})

        llm.default = model(slow)
        agent = turn_agent(tmp_path / "agents", llm.base_url)
        scenario = write(tmp_path / "notes.toml", NOTES_SCENARIO)
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        msg_id = kernel.submit(f"%cireil eval {scenario} --repeat 20 --jobs 2")
        deadline = time.monotonic() + 120
        while len(llm.requests) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        kernel.interrupt()
        run = kernel.collect(msg_id, timeout=120)
        final = updates(run)[-1]["content"]["data"]["text/plain"]
        assert "interrupted:" in final and "did not finish" in final
        assert run.error is None  # stopped cleanly: the grid is the cell's last word, not a traceback
        after = kernel.run("print('still here')")
        assert after.stdout.strip() == "still here"


def test_until_decided_in_the_notebook_decides_the_demos_changed_cell(tmp_path, kernel):
    agent = init(tmp_path / "wren")
    kernel.run(f"%load_ext cireil\n%cireil load {agent}")
    one = kernel.run("%cireil eval --variant baseline --until-decided", ok=False)
    assert one.stderr.startswith("UsageError: --until-decided compares variants: it needs two or more")
    run = kernel.run("%cireil eval --until-decided --max-runs 10 --jobs 2", timeout=240)
    final = updates(run)[-1]["content"]["data"]
    text = final["text/plain"]
    # pinned replies: no-schedule always fails the reminder, the rest never differ
    line = next(x for x in text.splitlines() if x.startswith("  reminder "))
    # the first look that can decide it (rounds of 5; the spending rule lets 5/5 against 0/5 through)
    assert line.split()[1:5] == ["5/5", "→", "0/5", "worse"] and "decided after 5 runs" in line
    assert "undecided: volunteers on no-schedule (stopped: max-runs)" in text
    html = final["text/html"]
    assert "10/10</span> · 100% [72–100%]" in html and "pass^5 100%" in html and "not enough evidence" in html
    assert problems(final) == []
