"""The turn recorder (issue 18): every model call kept exactly in cireil-recordings.db, bounded, and
never in the way of the agent when its file is broken."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import cireil
from cireil.params import Integer, Params, String
from cireil.runtime.recorder.store import FORMAT, RECORDINGS_FILE
from cireil.runtime.toolkit.tool import Tool
from cireil.testing.scripted_llm import ScriptedLLM, reply
from recorderkit import BIG, run_pytest
from turnkit import turn_agent


def load(tmp_path: Path, llm: ScriptedLLM, settings: str | None = None, **engine: str):
    directory = turn_agent(tmp_path, llm.base_url, **engine)
    if settings is not None:
        (directory / "config" / "cireil.toml").write_text(settings)
    return cireil.load(directory)


def pruning_turn(agent, llm) -> None:
    """Reads of a big file twice (the first goes stale and is stubbed), three failing reads (the breaker
    disables read), then respond."""
    (agent.directory / "workspace" / "big.md").write_text(BIG)
    big = ("read", {"path": "/workspace/big.md"})
    missing = ("read", {"path": "/workspace/nope.md"})
    llm.script(
        reply.tool_calls(big, reasoning="Read the big file."),
        reply.tool_calls(big),
        reply.tool_calls(missing),
        reply.tool_calls(missing),
        reply.tool_calls(missing),
        reply.tool_calls(("respond", {"content": "read gave up"})),
    )
    outcome = agent.turn("read the big file")
    assert outcome.steps == 6 and outcome.ended == "respond"


def test_every_step_is_recorded_exactly_with_its_reply_timings_and_tool_calls(tmp_path, llm):
    agent = load(tmp_path, llm, model_extra="contextWindow = 6000\n")
    try:
        pruning_turn(agent, llm)
        (turn,) = agent.turns()
        assert turn.ended == "respond" and turn.step_count == 6 and turn.text == "read the big file"
        assert turn.usage["prompt_tokens"] == sum(s.tokens_in for s in turn.steps)
        sent = [r.body for r in llm.requests]
        assert [s.request for s in turn.steps] == sent  # byte for byte what the server received
        first = turn.steps[0]
        assert first.reply["reasoning"] == "Read the big file."
        assert first.reply["finish_reason"] == "tool_calls"
        assert first.tool_calls == [
            {"id": "call_scripted_0", "name": "read", "arguments": {"path": "/workspace/big.md"}}
        ]
        assert first.tokens_in > 0 and first.tokens_out > 0
        assert 0 < first.ttft <= first.latency
        (call,) = first.calls
        assert call.name == "read" and call.result["success"] is True and "tomato" in call.result["content"]
        assert call.duration > 0
        assert [c.success for s in turn.steps[2:5] for c in s.calls] == [False, False, False]
    finally:
        agent.close()


def test_the_diff_shows_pruning_the_breaker_and_the_metadata(tmp_path, llm):
    agent = load(tmp_path, llm, model_extra="contextWindow = 6000\n")
    try:
        pruning_turn(agent, llm)
        steps = agent.turns()[0].steps
        first = steps[0].diff(None)
        assert first.added[0]["role"] == "system" and not first.removed
        second = steps[1].diff(steps[0])
        assert [m["role"] for m in second.added] == ["assistant", "tool"]
        assert second.metadata is not None and not second.tools_disabled
        stubbed = [c for s in range(1, 6) for c in steps[s].diff(steps[s - 1]).stubbed]
        assert stubbed, "the stale read is stubbed in a later request"
        assert '"reason":"stale"' in stubbed[0].after["content"]
        breaker = steps[5].diff(steps[4])
        assert breaker.tools_disabled == ["read"]
        assert any("failed 3 times in a row" in json.dumps(m) for m in breaker.added)
        assert "✕ tool disabled: read" in str(breaker)
    finally:
        agent.close()


def test_identical_prefixes_are_stored_once_and_no_key_is_stored(tmp_path, llm):
    agent = load(tmp_path, llm, keys='"sk-secret-123"', extra='customHeaders = { "X-Api-Token" = "hdr-secret" }\n')
    try:
        llm.script(
            *(reply.tool_calls(("session-info", {})) for _ in range(9)), reply.tool_calls(("respond", {"content": "x"}))
        )
        agent.turn("go")
        agent.close()
        path = agent.directory / RECORDINGS_FILE
        raw = b"".join(p.read_bytes() for p in agent.directory.glob(RECORDINGS_FILE + "*"))
        assert b"sk-secret-123" not in raw and b"hdr-secret" not in raw
        db = sqlite3.connect(path)
        sent_messages = sum(len(r.body["messages"]) + len(r.body["tools"]) for r in llm.requests)
        blobs = db.execute("SELECT count(*) FROM blobs").fetchone()[0]
        # each step adds an assistant message, a tool result and a new metadata message; the rest is shared
        assert blobs < sent_messages / 4
        assert blobs <= 3 + len(llm.requests[0].body["tools"]) + 3 * 10
    finally:
        agent.close()


def test_oldest_turns_are_evicted_beyond_the_limit_and_their_blobs_go(tmp_path, llm):
    agent = load(tmp_path, llm, "[recording]\nmax_turns = 2\n")
    try:
        for n in range(4):
            llm.script(reply.tool_calls(("respond", {"content": f"unique answer {n}"})))
            agent.turn(f"question {n}", session=f"s{n}")
        turns = agent.turns("*")
        assert [t.text for t in turns] == ["question 2", "question 3"]
        db = agent.recording.store.db
        kept = "".join(r[0] for r in db.execute("SELECT json FROM blobs"))
        assert "question 0" not in kept and "question 3" in kept
    finally:
        agent.close()


def test_a_size_limit_evicts_oldest_first_but_keeps_the_newest(tmp_path, llm):
    agent = load(tmp_path, llm, "[recording]\nmax_mb = 0.05\n")
    try:
        for n in range(6):
            llm.script(reply.tool_calls(("respond", {"content": "ok"})))
            agent.turn(f"question {n} " + "padding " * 2000, session=f"s{n}")
        turns = agent.turns("*")
        assert 1 <= len(turns) < 6 and turns[-1].text.startswith("question 5")
    finally:
        agent.close()


def test_recording_off_in_settings_records_nothing(tmp_path, llm):
    agent = load(tmp_path, llm, "[recording]\nenabled = false\n")
    try:
        agent.turn("hi")
        assert agent.turns() == [] and not (agent.directory / RECORDINGS_FILE).exists()
    finally:
        agent.close()


def _notices(agent, message: str) -> list[str]:
    events: list[dict] = []
    agent.turn(message, on_event=events.append)
    return [e["text"] for e in events if e["type"] == "notice"]


def test_a_corrupt_store_turns_recording_off_with_one_notice(tmp_path, llm):
    directory = turn_agent(tmp_path, llm.base_url)
    (directory / RECORDINGS_FILE).write_bytes(b"this is not sqlite at all" * 100)
    agent = cireil.load(directory)  # loading never opens it
    try:
        first = _notices(agent, "one")
        assert len(first) == 1 and "turn recording is off" in first[0] and RECORDINGS_FILE in first[0]
        assert "move it away" in first[0]
        assert _notices(agent, "two") == []  # said once
        assert len(agent.session.history) == 6  # the turns themselves ran
        assert (directory / RECORDINGS_FILE).read_bytes().startswith(b"this is not sqlite")  # never rewritten
    finally:
        agent.close()


def test_a_store_of_another_format_is_refused_with_what_to_do(tmp_path, llm):
    directory = turn_agent(tmp_path, llm.base_url)
    db = sqlite3.connect(directory / RECORDINGS_FILE)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO meta VALUES ('format', ?)", (str(FORMAT + 1),))
    db.commit()
    db.close()
    agent = cireil.load(directory)
    try:
        (notice,) = _notices(agent, "one")
        assert f"format {FORMAT + 1}" in notice and "newer cireil" in notice
        assert agent.turns() == [] and agent.recording.problem == notice
    finally:
        agent.close()
    db = sqlite3.connect(directory / RECORDINGS_FILE)
    db.execute("DELETE FROM meta")
    db.execute("CREATE TABLE recordings (x)")
    db.commit()
    db.close()
    agent = cireil.load(directory)
    try:
        (notice,) = _notices(agent, "one")
        assert "without a format number" in notice and "move it away" in notice
    finally:
        agent.close()


def test_bad_settings_turn_recording_off_and_name_the_file(tmp_path, llm):
    agent = load(tmp_path, llm, "[recording]\nmax_turns = -3\n")
    try:
        (notice,) = _notices(agent, "one")
        assert "config/cireil.toml:2: 'recording.max_turns' must be a whole number >= 0, not -3" in notice
    finally:
        agent.close()


def test_a_write_failure_mid_turn_stops_recording_and_the_turn_goes_on(tmp_path, llm):
    agent = load(tmp_path, llm)
    try:
        agent.turn("first")  # opens the store
        agent.recording.store.db.execute("DROP TABLE calls")
        llm.script(reply.tool_calls(("session-info", {})), reply.tool_calls(("respond", {"content": "fine"})))
        events: list[dict] = []
        outcome = agent.turn("second", on_event=events.append)
        assert outcome.ended == "respond" and outcome.text == "fine"
        notices = [e["text"] for e in events if e["type"] == "notice"]
        assert len(notices) == 1 and "turn recording is off" in notices[0]
        assert agent.recording.store is None
    finally:
        agent.close()


def test_the_diff_shows_an_opened_file_re_rendered_after_a_write(tmp_path, llm):
    agent = load(tmp_path, llm)
    try:
        llm.script(
            reply.tool_calls(("open-file", {"path": "/workspace/notes.md"})),
            reply.tool_calls(("write", {"path": "/workspace/notes.md", "content": "# Notes\n\nBuy eggs.\n"})),
            reply.tool_calls(("respond", {"content": "eggs now"})),
        )
        agent.turn("change the list")
        steps = agent.turns()[-1].steps
        opened = steps[1].diff(steps[0])
        assert "opened files" in [opened.kind(m) for m in opened.added]
        rerendered = [c for c in steps[2].diff(steps[1]).changed if c.kind == "opened files"]
        assert rerendered and "Buy eggs." in json.dumps(rerendered[0].after)
        assert "Buy milk." in json.dumps(rerendered[0].before)
        assert "~ opened files re-rendered" in str(steps[2].diff(steps[1]))
    finally:
        agent.close()


# -- replay ------------------------------------------------------------------------------------------
def test_a_replay_makes_the_same_tool_calls_offline_and_leaves_the_agent_alone(tmp_path, llm):
    agent = load(tmp_path, llm, model_extra="contextWindow = 6000\n")
    try:
        pruning_turn(agent, llm)
        turn = agent.turns()[-1]
        history = len(agent.session.history)
        served = len(llm.requests)
        result = agent.replay()
        assert result.turn_id == turn.id and not result.in_place
        assert result.same, result.summary()
        assert result.tool_calls == [(c.name, c.arguments) for c in turn.calls]
        assert result.model_calls == 6 and result.outcome.ended == "respond"
        assert len(llm.requests) == served  # the live server was never asked
        assert len(agent.session.history) == history and len(agent.turns("*")) == 1  # nothing added, not recorded
        assert "every tool result as recorded" in repr(result)
    finally:
        agent.close()


def test_a_replay_marks_the_steps_whose_results_changed(tmp_path, llm):
    agent = load(tmp_path, llm)
    try:
        llm.script(
            reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
            reply.tool_calls(("list-dir", {"path": "/workspace"})),
            reply.tool_calls(("respond", {"content": "milk"})),
        )
        agent.turn("what do I need?")
        (agent.directory / "workspace" / "notes.md").write_text("# Notes\n\nBuy bread.\n")
        result = agent.replay()
        assert [s.n for s in result.differing] == [1]
        (call,) = result.differing[0].calls
        assert "Buy milk." in call.recorded["content"] and "Buy bread." in call.replayed["content"]
        assert "1 step(s) differ" in result.summary()
        assert (agent.directory / "workspace" / "notes.md").read_text() == "# Notes\n\nBuy bread.\n"
    finally:
        agent.close()


def test_a_replay_in_place_runs_the_tools_on_the_agent_itself(tmp_path, llm):
    agent = load(tmp_path, llm)
    try:
        llm.script(
            reply.tool_calls(("write", {"path": "/workspace/out.txt", "content": "first"})),
            reply.tool_calls(("respond", {"content": "written"})),
        )
        agent.turn("write it")
        (agent.directory / "workspace" / "out.txt").unlink()
        copy = agent.replay()
        assert copy.same and not (agent.directory / "workspace" / "out.txt").exists()
        here = agent.replay(in_place=True)
        assert here.same and here.in_place
        assert (agent.directory / "workspace" / "out.txt").read_text() == "first"
        assert agent.session_for("notebook:replay-1").history  # its own session, the original untouched
    finally:
        agent.close()


def test_a_call_that_no_longer_validates_is_named_not_raised(tmp_path, llm):
    agent = load(tmp_path, llm)
    try:
        llm.script(
            reply.tool_calls(("list-dir", {"path": "/workspace"}), ("read", {"path": "/workspace/notes.md"})),
            reply.tool_calls(("respond", {"content": "done"})),
        )
        agent.turn("look")
        tools = agent.directory / "config" / "tools.toml"
        tools.write_text(tools.read_text().replace("read = true", "read = false"))
        result = agent.replay()
        assert result.invalid == ["step 1: tool 'read' is not enabled any more"]
        assert not result.same and [s.n for s in result.differing] == [1]
        assert "not available" in result.differing[0].calls[1].replayed["error"]
    finally:
        agent.close()


def counter(*, renamed: bool) -> Tool:
    """A Python tool whose argument is renamed between two versions (text -> words)."""

    async def run(args, ctx):
        return {"count": len(str(args.get("words", args.get("text"))).split()), "success": True}

    params = Params(words=String()) if renamed else Params(text=String(), times=Integer(default=1))
    return Tool(name="count", description="Count words.", params=params, run=run)


def test_a_tool_whose_arguments_changed_shape_is_named_in_the_replay(tmp_path, llm):
    directory = turn_agent(tmp_path, llm.base_url)
    tools = directory / "config" / "tools.toml"
    tools.write_text(tools.read_text() + "count = true\n")
    agent = cireil.load(directory, tools=[counter(renamed=False)])
    try:
        llm.script(
            reply.tool_calls(("count", {"text": "one two three"})),
            reply.tool_calls(("respond", {"content": "three"})),
        )
        agent.turn("count")
    finally:
        agent.close()
    agent = cireil.load(directory, tools=[counter(renamed=True)])
    try:
        result = agent.replay()
        (why,) = result.invalid
        assert why.startswith("step 1: count no longer accepts the recorded arguments:") and "words" in why
        (call,) = result.differing[0].calls
        assert call.invalid == why and call.recorded == {"count": 3, "success": True}
        assert call.replayed["success"] is False
    finally:
        agent.close()


# -- export as a test --------------------------------------------------------------------------------
def test_an_exported_test_passes_then_fails_when_a_tool_changes_behaviour(tmp_path, llm):
    agent = load(tmp_path, llm)
    try:
        llm.script(
            reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
            reply.tool_calls(("write", {"path": "/workspace/list.txt", "content": "milk"})),
            reply.tool_calls(("respond", {"content": "noted"})),
        )
        agent.turn("what do I need? it's \"\"\" quoted \\ '''")
        turn = agent.turns()[-1]
        out = tmp_path / "tests" / "test_shopping.py"
        out.parent.mkdir()
        assert agent.export_test(turn.id, out, fields=["read.content", "success"]) == out
        with pytest.raises(ValueError, match="exists"):
            agent.export_test(turn.id, out)
    finally:
        agent.close()
    text = out.read_text()
    assert "EXPECTED_CALLS" in text and "'/workspace/notes.md'" in text and "Buy milk." in text

    (agent.directory / "workspace" / "list.txt").unlink()
    passed = run_pytest(out)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed" in passed.stdout
    assert not (agent.directory / "workspace" / "list.txt").exists()  # the write ran on a throwaway copy

    (agent.directory / "workspace" / "notes.md").write_text("# Notes\n\nBuy bread.\n")  # what read returns changes
    failed = run_pytest(out)
    assert failed.returncode == 1 and "result field 'content' changed" in failed.stdout

    (agent.directory / "workspace" / "notes.md").write_text("# Notes\n\nBuy milk.\n")
    assert run_pytest(out).returncode == 0
    tools = agent.directory / "config" / "tools.toml"
    tools.write_text(tools.read_text().replace("write = true", "write = false"))  # configuration changes
    failed = run_pytest(out)
    assert failed.returncode == 1 and "tool 'write' is not enabled any more" in failed.stdout


def test_the_recordings_file_is_private(tmp_path, llm):
    agent = load(tmp_path, llm)
    try:
        agent.turn("hi")
        assert (agent.directory / RECORDINGS_FILE).stat().st_mode & 0o777 == 0o600
    finally:
        agent.close()


# -- fork --------------------------------------------------------------------------------------------
def four_steps(agent, llm) -> None:
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
        reply.tool_calls(("list-dir", {"path": "/workspace"})),
        reply.tool_calls(("write", {"path": "/workspace/list.txt", "content": "milk"})),
        reply.tool_calls(("respond", {"content": "written"})),
    )
    agent.turn("earlier message")  # history before the forked turn
    agent.turn("make my list")


def test_a_fork_at_step_3_with_an_edited_argument_runs_offline_in_a_new_linked_session(tmp_path, llm):
    agent = load(tmp_path, llm)
    try:
        llm.script(reply.tool_calls(("respond", {"content": "hello"})))
        four_steps(agent, llm)
        original = agent.turns()[-1]
        before = [(s.n, s.reply) for s in original.steps]
        served = len(llm.requests)
        outcome = agent.fork(original.id, 3, arguments={"path": "/workspace/list.txt", "content": "eggs"})
        assert outcome.ended == "respond" and outcome.steps == 4
        assert outcome.session_id == f"notebook:fork-{original.id}-3"
        assert len(llm.requests) == served  # offline: no model was asked
        assert (agent.directory / "workspace" / "list.txt").read_text() == "eggs"
        (forked,) = agent.turns(outcome.session_id)
        assert forked.origin == {"turn": original.id, "step": 3, "session": "notebook:main"}
        assert forked.calls[2].arguments == {"path": "/workspace/list.txt", "content": "eggs"}
        sent = forked.steps[0].request["messages"]
        assert any("earlier message" in json.dumps(m) for m in sent)  # the history before the turn came along
        assert not any("make my list" in json.dumps(m) for m in sent[:-2])  # ... and not the turn itself twice
        again = agent.turns("notebook:main")[-1]
        assert [(s.n, s.reply) for s in again.steps] == before and again.origin is None  # the original unchanged
        assert agent.fork(original.id, 3).session_id == f"notebook:fork-{original.id}-3-2"
    finally:
        agent.close()


def test_a_fork_of_an_anthropic_turn_records_requests_in_the_messages_api_shape(tmp_path, llm):
    agent = load(tmp_path, llm, extra='kind = "anthropic"\n', model_extra="reasoning = false\n")
    try:
        llm.script(reply.tool_calls(("respond", {"content": "hello"})))
        four_steps(agent, llm)
        original = agent.turns()[-1]
        served = len(llm.requests)
        outcome = agent.fork(original.id, 2)
        assert outcome.ended == "respond" and len(llm.requests) == served
        (forked,) = agent.turns(outcome.session_id)
        sent = forked.steps[1].request
        assert sent["max_tokens"] == original.steps[1].request["max_tokens"]  # the same kind's body as the original
        assert {m["role"] for m in sent["messages"]} <= {"user", "assistant"}  # tool results are user blocks
        diff = original.steps[1].diff(original.steps[0])  # tool results are user blocks here: still matched
        assert [diff.kind(m) for m in diff.added] == ["assistant", "tool result"] and not diff.removed
        assert diff.added[0]["tool_calls"][0]["function"]["name"] == "read"
    finally:
        agent.close()


def test_a_fork_substitutes_a_result_and_continues_live(tmp_path, llm):
    agent = load(tmp_path, llm)
    try:
        llm.script(reply.tool_calls(("respond", {"content": "hello"})))
        four_steps(agent, llm)
        original = agent.turns()[-1]
        served = len(llm.requests)
        llm.script(reply.tool_calls(("respond", {"content": "the live model answered"})))
        outcome = agent.fork(original, 1, result={"content": "Buy caviar.", "success": True}, live=True)
        assert outcome.text == "the live model answered" and outcome.steps == 2
        assert len(llm.requests) == served + 1  # step 1 recorded, step 2 live
        live_body = llm.requests[-1].body
        results = [json.loads(m["content"]) for m in live_body["messages"] if m["role"] == "tool"]
        assert results[-1] == {"name": "read", "content": "Buy caviar.", "success": True}
        with pytest.raises(ValueError, match="steps 1 to 4, not 9"):
            agent.fork(original, 9)
        with pytest.raises(ValueError, match="pass live=True"):
            agent.fork(original, 1, model="other")
        with pytest.raises(ValueError, match="position 5 is none"):
            agent.fork(original, 1, position=5, result={})
    finally:
        agent.close()


def test_an_offline_fork_that_runs_out_of_replies_ends_quietly(tmp_path, llm):
    agent = load(tmp_path, llm)
    try:
        llm.script(
            reply.tool_calls(("respond", {"content": "working", "final": False})),
            reply.tool_calls(("respond", {"content": "done"})),
        )
        agent.turn("go")
        # the edited first reply is a final respond no more, so the recorded second one is used and then...
        outcome = agent.fork(1, 1, arguments={"content": "still working", "final": False})
        assert outcome.ended == "respond"
        outcome = agent.fork(1, 2, arguments={"content": "not final", "final": False})
        assert outcome.ended == "no-response" and outcome.steps == 3  # ...the recording ran out
    finally:
        agent.close()


def test_the_replay_copy_points_every_provider_at_the_scripted_server(tmp_path):
    import tomllib

    from cireil.runtime.recorder.replay import offline_copy

    directory = turn_agent(tmp_path / "src", "http://127.0.0.1:9/v1", extra='customHeaders = { "X-Key" = "secret" }\n')
    engine = directory / "config" / "engine.toml"
    engine.write_text(
        engine.read_text()
        + '\n[claude]\nkind = "anthropic"\napiKey = { env = "ANTHROPIC_API_KEY" }\ndefaultModel = "c"\n'
    )
    copy = offline_copy(directory, "http://127.0.0.1:4242/v1", tmp_path / "copy")
    config = tomllib.loads((copy / "config" / "engine.toml").read_text())
    for name in ("local", "claude"):
        assert config[name]["apiBase"] == "http://127.0.0.1:4242/v1" and config[name]["apiKey"] == "replay"
    assert config["claude"]["kind"] == "openai" and "customHeaders" not in config["local"]
    assert engine.read_text().count("127.0.0.1:9") == 1  # the agent's own file is untouched


def test_a_provider_gone_from_engine_toml_falls_back_to_the_default_one_for_replay_and_fork(tmp_path, llm):
    agent = load(tmp_path, llm)
    try:
        llm.script(reply.tool_calls(("respond", {"content": "hello"})))
        four_steps(agent, llm)
        original = agent.turns()[-1]
        engine = agent.directory / "config" / "engine.toml"
        engine.write_text(engine.read_text().replace("[local]", "[other]").replace("[local.", "[other."))
        served = len(llm.requests)
        replayed = agent.replay()  # offline: the default provider's settings, the scripted replies
        assert replayed.outcome.ended == "respond" and replayed.model_calls == replayed.recorded_model_calls == 4
        events: list[dict] = []
        outcome = agent.fork(original, 2, on_event=events.append)
        assert outcome.ended == "respond" and len(llm.requests) == served
        notices = [e["text"] for e in events if e["type"] == "notice"]
        assert "provider 'local' is not in config/engine.toml; using the default provider 'other'" in notices
    finally:
        agent.close()
