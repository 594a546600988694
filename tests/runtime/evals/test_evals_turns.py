"""A failed eval run's recorded turn (issue 21, "open a failing run's recorded turn"): carried back from the
run's throwaway copy with the result, through the JSON file and back, capped, and shown as the steps view."""

from __future__ import annotations

import json

import pytest

from cireil.render.evalrun import run_text, turns_html
from cireil.render.recording import StepsView
from cireil.runtime.evals.matrix import run_matrix
from cireil.runtime.evals.report import EvalReport
from cireil.runtime.evals.scenario import load_scenarios
from cireil.runtime.evals.worker import RunResult
from cireil.runtime.recorder.portable import pack_turns, unpack_turns
from cireil.testing.scripted_llm import reply
from evalkit import NOTES_SCENARIO, last_user, model, tree_digest, write
from htmlcheck import html_problems
from turnkit import turn_agent

LIST_DIR = ("list-dir", {"path": "/workspace"})
LISTING = """\
    name = "listing"
    message = "what files do I have?"
    [[expect.call]]
    tool = "list-dir"
    ok = true
"""


@pytest.fixture
def agent_dir(tmp_path, llm):
    return turn_agent(tmp_path / "agents", llm.base_url)


@pytest.fixture
def failed(tmp_path, agent_dir, llm):
    """One eval: `notes` fails (the model lists the folder instead of reading), `listing` passes."""
    # the agent's own file switches recording off and its own recordings are not a run's: neither reaches a run
    (agent_dir / "config" / "cireil.toml").write_text("[recording]\nenabled = false\n")
    (agent_dir / "cireil-recordings.db").write_bytes(b"the user's own recordings, not a run's")
    before = tree_digest(agent_dir)
    scenarios = load_scenarios(
        [write(tmp_path / "evals" / "notes.toml", NOTES_SCENARIO), write(tmp_path / "evals" / "listing.toml", LISTING)]
    )
    llm.default = model(lambda body: LIST_DIR)
    report = run_matrix(agent_dir, scenarios, jobs=2)
    assert tree_digest(agent_dir) == before
    return report


def by_scenario(report: EvalReport) -> dict:
    return {r.scenario: r for r in report.results}


def test_a_failed_run_carries_its_recorded_turn_and_a_passed_run_none(failed):
    runs = by_scenario(failed)
    bad, good = runs["notes"], runs["listing"]
    assert bad.status == "fail" and good.status == "pass"
    assert good.recording is None and good.turns == []
    assert bad.truncated is None
    (turn,) = bad.turns
    assert turn.text == "what is in my notes?" and turn.session_id == "notebook:eval" and turn.ended == "respond"
    first, second = turn.steps
    # what the scripted model did, call by call, with the arguments it gave and what the tools answered
    assert [(c.name, c.arguments, c.success) for c in first.calls] == [("list-dir", {"path": "/workspace"}, True)]
    assert [c["name"] for c in first.tool_calls] == ["list-dir"]
    assert "notes.md" in json.dumps(first.calls[0].result)
    assert [c.name for c in second.calls] == ["respond"]
    # each request as it was POSTed, and the diff of one against the one before
    assert first.request["messages"][0]["role"] == "system"
    assert "what is in my notes?" in json.dumps(first.request["messages"])
    assert any(t["function"]["name"] == "read" for t in first.request["tools"])
    added = second.diff(first).added
    assert [second.diff(first).kind(m) for m in added] == ["assistant", "tool result"]
    assert turn.usage["total_tokens"] == bad.tokens


def test_the_recorded_turn_survives_the_json_file(tmp_path, failed):
    failed.write_json(tmp_path / "r.json")
    loaded = by_scenario(EvalReport.load(tmp_path / "r.json"))
    original = by_scenario(failed)["notes"]
    again = loaded["notes"]
    assert again.recording == original.recording
    assert loaded["listing"].turns == []
    (a,), (b,) = original.turns, again.turns
    assert [s.request for s in b.steps] == [s.request for s in a.steps]
    assert [s.reply for s in b.steps] == [s.reply for s in a.steps]
    assert StepsView(b).text() == StepsView(a).text()
    text = run_text(again)
    assert text.startswith(f"FAIL notes [base #1] run {again.run_id}")
    assert '  - call 1: expected read(path="/workspace/notes.md"): got list-dir' in text
    assert "recorded turn 1: 2 model calls" in text and '→ list-dir {"path": "/workspace"}: ok' in text


def test_the_steps_view_of_a_failed_run_is_escaped_html(failed):
    run = by_scenario(failed)["notes"]
    html = turns_html(run)
    assert html.startswith("<details") and "recorded turn · 2 model calls" in html
    assert "called list-dir" in html and "request as POSTed" in html
    assert html_problems(html) == []


def test_every_turn_of_a_several_message_scenario_and_a_run_stopped_by_a_limit(tmp_path, agent_dir, llm):
    two = write(tmp_path / "two.toml", 'messages = ["first question", "second question"]\n[answer]\ncontains = "x"\n')
    looping = write(tmp_path / "loop.toml", 'message = "go"\n[answer]\ncontains = "x"\n[limits]\nsteps = 3\n')

    def fn(body: dict):  # "go" loops on list-dir until the step limit stops it; a question is answered
        if '"go"' in last_user(body):
            return reply.tool_calls(LIST_DIR)
        return reply.tool_calls(("respond", {"content": "no"}))

    llm.default = fn
    runs = by_scenario(run_matrix(agent_dir, load_scenarios([two, looping]), jobs=2))
    assert [t.text for t in runs["two"].turns] == ["first question", "second question"]
    looped = runs["loop"]
    assert looped.failures[0] == "limit: more than 3 steps"
    (turn,) = looped.turns
    assert turn.ended == "interrupted"
    assert [c.name for s in turn.steps for c in s.calls] == ["list-dir"] * 3  # the steps the run got through


def test_a_recorded_turn_over_the_cap_is_cut_and_says_so(tmp_path, agent_dir, llm):
    long = "x" * 20_000
    (agent_dir / "workspace" / "notes.md").write_text(long)
    scenario = load_scenarios([write(tmp_path / "notes.toml", NOTES_SCENARIO)])
    llm.default = model(lambda body: ("read", {"path": "/workspace/notes.md"}))
    (run,) = run_matrix(agent_dir, scenario, jobs=1, turn_limit=30_000).results
    assert run.status == "fail"  # no milk in the notes
    assert len(json.dumps(run.recording)) <= 30_000
    assert run.truncated.startswith("the recorded turns were ") and "over the 30,000-byte cap" in run.truncated
    (turn,) = run.turns
    result = turn.steps[0].calls[0].result
    assert "more characters cut]" in json.dumps(result)  # the cut is marked where it was made
    assert [c.name for s in turn.steps for c in s.calls] == ["read", "respond"]
    assert f"note: {run.truncated}" in run_text(run)

    # tighter caps: requests are left out, then the last model calls
    whole = run.turns
    lean = pack_turns(whole, 3_000)
    assert len(json.dumps(lean)) <= 3_000 and "the requests left out" in lean["truncated"]
    (cut,) = unpack_turns(lean)
    assert cut.steps[0].request["truncated"].startswith("request left out: the recorded turn was over the size cap")
    assert [c.name for s in cut.steps for c in s.calls] == ["read", "respond"]
    tiny = pack_turns(whole, 1_500)
    assert len(json.dumps(tiny)) <= 1_500 and "only the first 1 of 2 model calls kept" in tiny["truncated"]
    assert [len(t.steps) for t in unpack_turns(tiny)] == [1]


def test_a_hand_edited_recording_is_a_clear_error(failed):
    run = by_scenario(failed)["notes"]
    with pytest.raises(ValueError, match="the recorded turns are not as cireil wrote them"):
        unpack_turns({"turns": [{"id": 1}]})
    assert run.turns  # the run's own data is fine


def test_an_erred_run_carries_the_turn_as_far_as_it_got(tmp_path, agent_dir, llm):
    llm.default = reply.error(400, "the model refuses this request")
    (run,) = run_matrix(agent_dir, load_scenarios([write(tmp_path / "notes.toml", NOTES_SCENARIO)]), jobs=1).results
    assert run.status == "error", run.failures
    (turn,) = run.turns
    assert turn.ended == "error" and "the model refuses this request" in turn.error
    # every attempt at the model call, with the refusal the provider gave
    assert turn.steps and all(s.retried and "HTTP 400" in s.reply["error"] for s in turn.steps)
    assert "retried: provider 'local': HTTP 400" in run_text(run)


def test_a_run_without_a_recording_says_why():
    off = RunResult("r1", "notes", "base", 0, "notebook:eval", status="fail", recording={"problem": "disk full"})
    assert off.turns == [] and off.truncated is None
    assert run_text(off).splitlines()[-1] == "no recorded turn: disk full"
    assert "no recorded turn: disk full" in turns_html(off)
    early = RunResult("r2", "notes", "base", 0, "notebook:eval", status="error", failures=["run could not start: x"])
    assert run_text(early).splitlines()[-1] == "no recorded turn: the run did not get as far as a turn"
    assert turns_html(early) == ""
