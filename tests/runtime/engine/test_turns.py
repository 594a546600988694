"""The turn loop (reference §8) against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from datetime import UTC
from pathlib import Path

import pytest

import cireil
from cireil.runtime.engine.turn import NOT_DELIVERED
from cireil.testing.scripted_llm import ScriptedLLM, reply
from turnkit import turn_agent


@pytest.fixture
def agent(tmp_path: Path, llm: ScriptedLLM):
    a = cireil.load(turn_agent(tmp_path, llm.base_url))
    yield a
    a.close()


def bodies(llm: ScriptedLLM) -> list[dict]:
    return [r.body for r in llm.requests]


def tool_messages(body: dict) -> list[dict]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def test_a_respond_ends_the_turn_and_the_request_has_the_reference_shape(agent, llm):
    llm.script(reply.tool_calls(("respond", {"content": "Hello there"})))
    outcome = agent.turn("hi")
    assert outcome.ended == "respond"
    assert outcome.text == "Hello there"
    assert outcome.steps == 1
    (request,) = llm.requests
    body = request.body
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["x-openrouter-title"] == "CireilClaw"
    assert body["model"] == "scripted-1"
    assert body["prompt_cache_key"] == "notebook:main"
    assert body["tool_choice"] == "required"
    assert body["messages"][0]["role"] == "system"
    assert "<base_instructions>\nYou are a test agent." in body["messages"][0]["content"]
    names = [t["function"]["name"] for t in body["tools"]]
    assert names[:3] == ["respond", "no-response", "read"]
    users = [m for m in body["messages"] if m["role"] == "user"]
    assert users[0]["content"][0]["text"] == "hi"
    assert users[-1]["content"][0]["text"].startswith("Current date: ")  # the metadata message comes last
    roles = [m["role"] for m in agent.session.history]
    assert roles == ["user", "assistant", "toolResponse"]


def test_tool_calls_run_in_order_and_their_results_go_out_with_the_next_request(agent, llm):
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"}), ("list-dir", {"path": "/workspace"})),
        reply.tool_calls(("respond", {"content": "You need milk."})),
    )
    events: list[dict] = []
    outcome = agent.turn("what do I need?", on_event=events.append)
    assert outcome.ended == "respond" and outcome.steps == 2
    results = tool_messages(bodies(llm)[1])
    assert [r["tool_call_id"] for r in results] == ["call_scripted_0", "call_scripted_1"]
    first = json.loads(results[0]["content"])
    assert first["name"] == "read" and "Buy milk." in first["content"]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "end"
    tool_events = [e["call"]["name"] for e in events if e["type"] == "tool"]
    assert tool_events == ["read", "list-dir", "respond"]


def test_no_response_ends_the_turn_and_an_intermediate_respond_does_not(agent, llm):
    llm.script(
        reply.tool_calls(("respond", {"content": "working on it", "final": False})),
        reply.tool_calls(("no-response", {})),
    )
    outcome = agent.turn("go")
    assert outcome.ended == "no-response"
    assert outcome.steps == 2
    assert [r["content"] for r in outcome.responses] == ["working on it"]


def test_every_call_of_a_batch_runs_even_after_a_final_respond(agent, llm, tmp_path):
    llm.script(
        reply.tool_calls(("respond", {"content": "done"}), ("write", {"path": "/workspace/after.txt", "content": "x"}))
    )
    agent.turn("go")
    assert (agent.directory / "workspace" / "after.txt").read_text() == "x"


def test_the_breaker_disables_a_tool_after_three_failures_in_a_row(agent, llm):
    missing = ("read", {"path": "/workspace/nope.md"})
    llm.script(
        reply.tool_calls(missing),
        reply.tool_calls(missing),
        reply.tool_calls(missing),
        reply.tool_calls(missing),
        reply.tool_calls(("respond", {"content": "gave up"})),
    )
    outcome = agent.turn("read it")
    assert outcome.ended == "respond"
    fourth, fifth = bodies(llm)[3], bodies(llm)[4]
    assert "read" not in [t["function"]["name"] for t in fourth["tools"]]
    notice = [m for m in fourth["messages"] if m["role"] == "user" and "failed 3 times in a row" in json.dumps(m)]
    assert notice, "the breaker notice reaches the model"
    # a call to the disabled tool is answered with an error, never run
    last = json.loads(tool_messages(fifth)[-1]["content"])
    assert last["success"] is False and "disabled" in last["error"]


def test_a_success_resets_the_failure_count(agent, llm):
    missing = ("read", {"path": "/workspace/nope.md"})
    good = ("read", {"path": "/workspace/notes.md"})
    llm.script(
        *(reply.tool_calls(c) for c in (missing, missing, good, missing, missing)),
        reply.tool_calls(("respond", {"content": "ok"})),
    )
    agent.turn("go")
    assert "read" in [t["function"]["name"] for t in bodies(llm)[-1]["tools"]]


def test_a_reply_without_tool_calls_is_retried_and_the_model_is_told(agent, llm):
    llm.script(reply.text("Hi! I forgot the tools."), reply.tool_calls(("respond", {"content": "Hi!"})))
    outcome = agent.turn("hello")
    assert outcome.ended == "respond"
    second = bodies(llm)[1]["messages"]
    assert any(m["role"] == "assistant" and "forgot the tools" in json.dumps(m) for m in second)
    assert any(m["role"] == "user" and NOT_DELIVERED in json.dumps(m) for m in second)


def test_retries_are_bounded_and_a_failed_turn_leaves_nothing_in_sessions_db(agent, llm):
    llm.script(reply.text("a"), reply.text("b"), reply.text("c"))
    with pytest.raises(cireil.CireilError, match="tool"):
        agent.turn("hello")
    assert len(llm.requests) == 3  # the first try and maxGenerationRetries = 2 more
    # as the original: a turn is stored whole at its end or not at all, its user message included
    assert agent.session.history == []
    reloaded = cireil.load(agent.directory)
    try:
        assert reloaded.session.history == []
        assert not reloaded.store.exists(reloaded.session.id)
    finally:
        reloaded.close()


def test_a_provider_that_rejects_required_tool_choice_gets_auto(agent, llm):
    llm.script(
        reply.error(400, "tool_choice 'required' is not supported by this model"),
        reply.tool_calls(("respond", {"content": "fine"})),
    )
    assert agent.turn("hi").ended == "respond"
    first, second = bodies(llm)
    assert first["tool_choice"] == "required" and second["tool_choice"] == "auto"
    assert second["messages"][-1]["role"] == "system"


def test_a_429_rotates_to_the_next_api_key(tmp_path, llm):
    agent = cireil.load(turn_agent(tmp_path, llm.base_url, keys='["sk-one", "sk-two"]'))
    try:
        llm.script(reply.error(429, "slow down"), reply.tool_calls(("respond", {"content": "ok"})))
        agent.turn("hi")
        assert [r.headers["authorization"] for r in llm.requests] == ["Bearer sk-one", "Bearer sk-two"]
    finally:
        agent.close()


def test_the_session_survives_loading_the_agent_again(agent, llm):
    llm.script(
        reply.tool_calls(("open-file", {"path": "/workspace/notes.md"})),
        reply.tool_calls(("respond", {"content": "pinned"})),
    )
    agent.turn("pin my notes")
    count = len(agent.session.history)
    agent.close()
    again = cireil.load(agent.directory)
    try:
        assert len(again.session.history) == count
        assert again.session.opened_files == ["/workspace/notes.md"]
        llm.script(reply.tool_calls(("respond", {"content": "still here"})))
        again.turn("still there?")
        body = bodies(llm)[-1]
        text = json.dumps(body["messages"])
        assert "pin my notes" in text and "<opened_files>" in text
    finally:
        again.close()


def test_sessions_db_is_private_and_in_wal_mode(agent, llm):
    llm.script(reply.tool_calls(("respond", {"content": "x"})))
    agent.turn("hi")
    db = agent.directory / "sessions.db"
    assert db.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(db) as conn:
        assert conn.execute("pragma journal_mode").fetchone()[0] == "wal"


def test_an_interrupted_turn_leaves_nothing_behind_but_what_its_tools_did(agent, llm):
    llm.script(
        reply.tool_calls(("write", {"path": "/workspace/one.txt", "content": "1"})),
        reply.tool_calls(("respond", {"content": "slow"}), delay=30),
    )
    submitted = agent.submit_turn("write one")
    deadline = time.monotonic() + 20
    while len(llm.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    submitted.cancel_and_wait()
    assert agent.session.history == []  # no half turn, in memory or in sessions.db (as the original)
    assert (agent.directory / "workspace" / "one.txt").read_text() == "1"  # what a tool did stays done
    assert llm.disconnected.wait(10), "the interrupted request is closed on the wire"
    agent.close()
    again = cireil.load(agent.directory)
    try:
        assert again.session.history == []
    finally:
        again.close()


def test_tools_toml_is_re_read_at_turn_start(agent, llm):
    path = agent.directory / "config" / "tools.toml"
    path.write_text(path.read_text().replace("list-dir = true", "list-dir = false"))
    llm.script(reply.tool_calls(("respond", {"content": "x"})))
    agent.turn("hi")
    assert "list-dir" not in [t["function"]["name"] for t in bodies(llm)[0]["tools"]]


def test_prompt_preview_shows_what_the_next_request_sends(agent, llm):
    prepared = agent.prompt()
    llm.script(reply.tool_calls(("respond", {"content": "x"})))
    agent.turn("hi")
    sent = bodies(llm)[0]
    assert prepared.body["tools"] == sent["tools"]
    assert prepared.body["messages"][0] == sent["messages"][0]
    assert agent.session.history, "the preview itself changed nothing; the turn did"


def test_named_sessions_are_separate_and_listed(agent, llm):
    llm.script(reply.tool_calls(("respond", {"content": "main"})), reply.tool_calls(("respond", {"content": "b"})))
    agent.turn("in main")
    agent.use_session("side")
    agent.turn("in side")
    assert agent.session.id == "notebook:side"
    ids = [s["id"] for s in agent.sessions()]
    assert set(ids) >= {"notebook:main", "notebook:side"}
    assert "in main" not in json.dumps(bodies(llm)[1]["messages"])


def test_respond_to_another_session_lands_in_its_history_and_does_not_end_the_turn(agent, llm):
    other = agent.session_for("notebook:other")
    agent.store.commit(other, [])
    llm.script(
        reply.tool_calls(("respond", {"content": "note for other", "channel": "notebook:other"})),
        reply.tool_calls(("respond", {"content": "done"})),
    )
    outcome = agent.turn("tell other")
    assert outcome.steps == 2
    assert json.loads(tool_messages(bodies(llm)[1])[0]["content"])["final"] is False
    again = agent.store.get("notebook:other")
    assert "note for other" in json.dumps(again.history)


def test_invoke_queues_a_turn_in_another_session(agent, llm):
    other = agent.session_for("notebook:other")
    agent.store.commit(other, [])
    llm.script(
        reply.tool_calls(("invoke", {"session": "notebook:other", "prompt": "summarise"})),
        reply.tool_calls(("respond", {"content": "queued it"})),
        reply.tool_calls(("respond", {"content": "summary done"})),
    )
    agent.turn("delegate")
    deadline = time.monotonic() + 20
    while len(llm.requests) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(llm.requests) == 3
    assert bodies(llm)[2]["prompt_cache_key"] == "notebook:other"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "summary done" not in json.dumps(other.history):
        time.sleep(0.02)
    assert "summary done" in json.dumps(other.history)


def _in(seconds: float) -> str:
    from datetime import datetime, timedelta

    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def test_a_scheduled_job_fires_and_is_announced_to_its_target(agent, llm):
    llm.script(
        reply.tool_calls(("schedule", {"id": "tea", "at": _in(1.5), "prompt": "remind about tea"})),
        reply.tool_calls(("respond", {"content": "scheduled"})),
        reply.tool_calls(("respond", {"content": "Tea time!"})),
    )
    agent.turn("remind me")
    assert [j["id"] for j in agent.scheduler.pending()] == ["tea"]
    deadline = time.monotonic() + 20
    # the job is deleted just after its announcement lands, on the kernel's loop: wait for both
    while time.monotonic() < deadline and (
        "Tea time!" not in json.dumps(agent.session.history) or agent.scheduler.pending()
    ):
        time.sleep(0.05)
    assert "Tea time!" in json.dumps(agent.session.history)
    assert bodies(llm)[2]["prompt_cache_key"] == "cron:testagent:tea"
    assert agent.scheduler.pending() == []  # deleted after a successful run
    # the isolated run lives in memory only: the original never saves cron: sessions (upstream-formats §5)
    assert agent.store.get("cron:testagent:tea") is None and not agent.store.exists("cron:testagent:tea")
    assert agent.session_for("cron:testagent:tea").platform == "internal"


def test_a_job_that_came_due_while_the_kernel_was_gone_runs_at_the_next_load(agent, llm, tmp_path):
    llm.script(reply.tool_calls(("schedule", {"id": "later", "at": _in(1), "prompt": "ping"})))
    llm.script(reply.tool_calls(("respond", {"content": "scheduled"})))
    agent.turn("schedule")
    agent.close()  # the kernel goes away before the job is due
    time.sleep(1.5)
    count = len(llm.requests)
    llm.script(reply.tool_calls(("respond", {"content": "pong"})))
    again = cireil.load(agent.directory)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and again.scheduler.pending():
            time.sleep(0.05)
        assert again.scheduler.pending() == []
        assert len(llm.requests) == count + 1
        assert "pong" in json.dumps(again.session.history)
    finally:
        again.close()


def test_schedule_rejects_bad_ids_and_past_times(agent):
    bad = agent.call("schedule", id="Tea Time", at=_in(60), prompt="x")
    assert bad.data["error"].endswith("ID must be lowercase alphanumeric with hyphens")
    past = agent.call("schedule", id="tea", at=_in(-60), prompt="x")
    assert past.data["error"] == "`at` must be in the future"
    garbled = agent.call("schedule", id="tea", at="tomorrow", prompt="x")
    assert garbled.data["error"] == "Invalid ISO 8601 timestamp in `at`"


def test_react_marks_the_message_that_started_the_turn(agent, llm):
    llm.script(reply.tool_calls(("react", {"emoji": "👍"}), ("respond", {"content": "ok"})))
    events: list[dict] = []
    agent.turn("thumbs up please", on_event=events.append)
    user = agent.session.history[0]
    assert user["reactions"] == ["👍"]
    assert any(e["type"] == "react" and e["messageId"] == user["id"] for e in events)


def test_streamed_respond_content_arrives_in_pieces(agent, llm):
    llm.script(reply.tool_calls(("respond", {"content": "A fairly long answer " * 10})))
    deltas: list[dict] = []
    agent.turn("hi", on_event=lambda e: deltas.append(e) if e["type"] == "delta" else None)
    pieces = [d["arguments"] for d in deltas if d.get("kind") == "toolCall"]
    assert len(pieces) > 3 and pieces[-1].endswith("}")


def test_turns_of_one_agent_never_overlap(agent, llm):
    llm.script(
        reply.tool_calls(("respond", {"content": "one"}), delay=0.5),
        reply.tool_calls(("respond", {"content": "two"})),
    )
    outcomes = []
    threads = [threading.Thread(target=lambda m=m: outcomes.append(agent.turn(m))) for m in ("first", "second")]
    for t in threads:
        t.start()
        time.sleep(0.1)
    for t in threads:
        t.join(30)
    assert sorted(o.text for o in outcomes) == ["one", "two"]
    # the second request already contains the first turn, complete
    assert "first" in json.dumps(bodies(llm)[1]["messages"])


def test_without_a_context_window_only_the_last_max_turns_turns_are_sent(tmp_path, llm):
    agent = cireil.load(turn_agent(tmp_path, llm.base_url, extra="maxTurns = 2\n"))
    try:
        for n in range(4):
            llm.script(reply.tool_calls(("respond", {"content": f"answer {n}"})))
            agent.turn(f"question {n}")
        sent = json.dumps(bodies(llm)[-1]["messages"])
        assert "question 3" in sent and "question 2" in sent
        assert "question 1" not in sent and "question 0" not in sent
        assert agent.session.cursor > 0
        assert len(agent.session.history) == 12  # pruning hides old turns from the model; nothing is deleted
        assert agent.store.get("notebook:main").cursor == agent.session.cursor  # the cursor is persisted
    finally:
        agent.close()


def test_a_small_context_window_prunes_by_budget(tmp_path, llm):
    agent = cireil.load(turn_agent(tmp_path, llm.base_url, model_extra="contextWindow = 4000\n"))
    try:
        for n in range(6):
            llm.script(reply.tool_calls(("respond", {"content": f"answer {n}"})))
            agent.turn(f"question {n} " + "filler words " * 250)
        last = bodies(llm)[-1]["messages"]
        assert "question 5" in json.dumps(last) and "question 0" not in json.dumps(last)
        metadata = last[-1]["content"][0]["text"]
        assert "/ 4000 tokens" in metadata  # the metadata message reports usage against the window
    finally:
        agent.close()


def test_an_image_read_in_a_turn_goes_out_with_the_next_request(agent, llm):
    import base64

    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    (agent.directory / "workspace" / "dot.png").write_bytes(png)
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/dot.png"})),
        reply.tool_calls(("respond", {"content": "a dot"})),
    )
    agent.turn("look")
    second = bodies(llm)[1]["messages"]
    images = [p for m in second if m["role"] == "user" for p in m["content"] if p.get("type") == "image_url"]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert agent.session.pending_media == []


def test_the_conversation_tools_see_the_turns(agent, llm):
    llm.script(reply.tool_calls(("respond", {"content": "first answer"})))
    agent.turn("first question about tomatoes")
    llm.script(
        reply.tool_calls(("query-sessions", {"query": "tomatoes", "mode": "raw"})),
        reply.tool_calls(("read-session", {"id": "notebook:main"})),
        reply.tool_calls(("respond", {"content": "found it"})),
    )
    agent.turn("what did I ask?")
    found = json.loads(tool_messages(bodies(llm)[2])[-1]["content"])
    assert found["totalMatches"] >= 1 and "tomatoes" in found["matches"][0]["content"]
    history = json.loads(tool_messages(bodies(llm)[3])[-1]["content"])
    contents = [m["content"] for m in history["messages"]]
    assert "first answer" in contents and "first question about tomatoes" in contents


def test_prune_boundaries_replaces_a_range_with_its_summary_in_the_next_request(agent, llm):
    for n in range(2):
        llm.script(reply.tool_calls(("respond", {"content": f"answer {n}"})))
        agent.turn(f"tomato question {n}")
    users = [m for m in agent.session.history if m["role"] == "user"]
    start, end = users[0]["id"], agent.session.history[-1]["id"]
    llm.script(
        reply.tool_calls(
            ("prune-boundaries", {"start": start, "end": end, "identifier": "Tomatoes", "summary": "Talked tomatoes."})
        ),
        reply.tool_calls(("respond", {"content": "compacted"})),
    )
    agent.turn("compact that")
    sent = json.dumps(bodies(llm)[-1]["messages"])
    assert "<topic-summary" in sent and "Talked tomatoes." in sent
    assert "tomato question 0" not in sent


def test_respond_attachments_must_exist(agent, llm):
    llm.script(
        reply.tool_calls(("respond", {"content": "see file", "attachments": ["/workspace/missing.png"]})),
        reply.tool_calls(("respond", {"content": "here", "attachments": ["/workspace/notes.md"]})),
    )
    events: list[dict] = []
    outcome = agent.turn("send me the notes", on_event=events.append)
    first = json.loads(tool_messages(bodies(llm)[1])[-1]["content"])
    assert first["success"] is False and "missing.png" in first["error"]
    assert outcome.ended == "respond"
    sent = [e for e in events if e["type"] == "respond"]
    assert [e["attachments"] for e in sent] == [["/workspace/notes.md"]]


def test_an_edit_of_engine_toml_applies_to_the_next_turn(agent, llm):
    llm.script(reply.tool_calls(("respond", {"content": "one"})), reply.tool_calls(("respond", {"content": "two"})))
    agent.turn("first")
    engine = agent.directory / "config" / "engine.toml"
    engine.write_text(engine.read_text().replace('"sk-test"', '"sk-rotated"'))
    agent.turn("second")
    assert [r.headers["authorization"] for r in llm.requests] == ["Bearer sk-test", "Bearer sk-rotated"]


def test_an_unset_key_variable_fails_the_turn_before_anything_is_kept(tmp_path, llm, monkeypatch):
    monkeypatch.delenv("CIREIL_TEST_KEY", raising=False)
    agent = cireil.load(turn_agent(tmp_path, llm.base_url, keys='{ env = "CIREIL_TEST_KEY" }'))
    try:
        with pytest.raises(cireil.CireilError, match=r"config/engine.toml:3: apiKey names .*CIREIL_TEST_KEY"):
            agent.turn("hi")
        assert agent.session.history == [] and llm.requests == []
        monkeypatch.setenv("CIREIL_TEST_KEY", "sk-from-env")
        llm.script(reply.tool_calls(("respond", {"content": "ok"})))
        agent.turn("hi")
        assert llm.requests[0].headers["authorization"] == "Bearer sk-from-env"
    finally:
        agent.close()


def test_a_provider_whose_login_is_missing_fails_the_turn_naming_the_file(tmp_path, llm):
    extra = f'\n[codex]\nkind = "openai-codex"\napiBase = "{llm.base_url}"\ndefaultModel = "gpt-x"\n'
    agent = cireil.load(turn_agent(tmp_path / "root" / "agents", llm.base_url))
    engine = agent.directory / "config" / "engine.toml"
    engine.write_text(engine.read_text() + extra)
    try:
        assert agent.dry_run().ok  # valid config: the login may come later (`cireilclaw codex`)
        with pytest.raises(cireil.ConfigError) as info:
            agent.turn("hi", provider="codex")
        line = engine.read_text().splitlines().index('kind = "openai-codex"') + 1
        assert str(info.value).startswith("../../config/openai-codex/default.json: does not exist: the original")
        assert f"provider 'codex', config/engine.toml:{line})" in str(info.value)
        assert agent.session.history == [] and llm.requests == []
        llm.script(reply.tool_calls(("respond", {"content": "ok"})))
        assert agent.turn("hi").ended == "respond"  # the default provider still works
    finally:
        agent.close()


def test_a_provider_override_without_a_model_uses_the_default_providers_model_and_table(tmp_path, llm):
    # upstream-formats.md §2.9: model = the default provider's defaultModel; table = its entry for that model
    extra = f'\n[second]\napiBase = "{llm.base_url}"\napiKey = "sk-second"\ndefaultModel = "second-model"\n'
    agent = cireil.load(turn_agent(tmp_path, llm.base_url, model_extra='reasoning = "low"\n'))
    engine = agent.directory / "config" / "engine.toml"
    engine.write_text(engine.read_text() + extra)
    events: list[dict] = []
    try:
        llm.script(reply.tool_calls(("respond", {"content": "ok"})), reply.tool_calls(("respond", {"content": "ok"})))
        agent.turn("hi", provider="second", on_event=events.append)
        agent.turn("again", provider="second", model="second-model")
        first, second = llm.requests
        assert first.headers["authorization"] == "Bearer sk-second"
        assert (first.body["model"], first.body["reasoning"]) == ("scripted-1", {"effort": "low"})
        assert (second.body["model"], second.body["reasoning"]) == ("second-model", {"effort": "low"})
        notices = [e["text"] for e in events if e["type"] == "notice"]
        assert any("the default provider's defaultModel" in n for n in notices), events
    finally:
        agent.close()


def test_context_messages_for_one_turn_leave_the_history_when_it_ends(agent, llm):
    from cireil.runtime.sessions.messages import system_message, user_message

    llm.script(reply.tool_calls(("respond", {"content": "one"})), reply.tool_calls(("respond", {"content": "two"})))
    agent.turn("first")
    session = agent.session
    kept = user_message("kept", persistent=True)
    session.history += [system_message("for the next turn only", persistent=False), kept]
    agent.turn("second")
    sent = json.dumps(bodies(llm)[1]["messages"])
    assert "for the next turn only" in sent  # the turn it was for saw it
    texts = [json.dumps(m) for m in session.history]
    assert not any("for the next turn only" in t for t in texts) and any(m is kept for m in session.history)
    assert len(session.history) == 7  # each turn: its user message, the respond call, its result; and `kept`
