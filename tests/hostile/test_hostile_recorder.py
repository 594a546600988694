"""Hostile recordings: hand-edited rows of cireil-recordings.db, forks given the wrong things, and model text
carrying terminal sequences into the recorder's views.

One bad row is named by its turn id in one line and left out; every other turn, the views and the
recording of new turns go on. A huge value is never read whole. A refused fork leaves no session.
"""

from __future__ import annotations

import json
import sqlite3
import tracemalloc
from pathlib import Path

import pytest

import cireil
from cireil.runtime.recorder.store import RECORDINGS_FILE, VALUE_LIMIT
from cireil.testing.scripted_llm import ScriptedLLM, reply
from kernelharness import Kernel
from turnkit import turn_agent

ESCAPES = "\x1b]52;c;cHduZWQ=\x07\x1b]0;title\x07\x1b[2J\x9b31m"  # clipboard write, title, clear screen, C1 CSI


def two_step_turn(llm: ScriptedLLM, message: str = "what do I need?") -> None:
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
        reply.tool_calls(("respond", {"content": "You need milk."})),
    )


def recorded_agent(tmp_path: Path, llm: ScriptedLLM, turns: int = 3) -> Path:
    directory = turn_agent(tmp_path, llm.base_url)
    agent = cireil.load(directory)
    try:
        for n in range(turns):
            two_step_turn(llm)
            agent.turn(f"turn {n}")
    finally:
        agent.close()
    return directory


def edit(directory: Path, sql: str, *params: object) -> None:
    db = sqlite3.connect(directory / RECORDINGS_FILE)
    try:
        db.execute(sql, params)
        db.commit()
    finally:
        db.close()


# each: what a person or a broken tool could leave in the file, for turn 2 of three
DAMAGE = {
    "usage not JSON": ("UPDATE turns SET usage = '{oops' WHERE id = 2",),
    "user message not an object": ("UPDATE turns SET user_message = '[1, 2]' WHERE id = 2",),
    "started is text": ("UPDATE turns SET started = 'yesterday' WHERE id = 2",),
    "started far out": ("UPDATE turns SET started = 1e300 WHERE id = 2",),
    "steps is text": ("UPDATE turns SET steps = 'many' WHERE id = 2",),
    "model is a blob": ("UPDATE turns SET model = x'00ff' WHERE id = 2",),
    "seconds negative": ("UPDATE turns SET seconds = -5 WHERE id = 2",),
    "usage huge": ("UPDATE turns SET usage = '\"' || printf('%.*c', ?, 'x') || '\"' WHERE id = 2", VALUE_LIMIT + 10),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_one_damaged_turn_row_is_named_and_skipped_and_recording_goes_on(tmp_path, llm, capsys, damage):
    directory = recorded_agent(tmp_path, llm)
    sql, *params = DAMAGE[damage]
    edit(directory, sql, *params)
    agent = cireil.load(directory)
    try:
        assert [t.id for t in agent.turns("*")] == [1, 3]
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if "recorded turn 2 skipped" in line]
        assert len(lines) == 1 and RECORDINGS_FILE in lines[0] and "DELETE it" in lines[0], err
        agent.turns("*")
        assert "recorded turn 2" not in capsys.readouterr().err  # said once
        with pytest.raises(ValueError, match="recorded turn 2 skipped"):
            agent.replay(2)
        from cireil.render.recording import UsageView

        text = UsageView(agent.turns("*"), {}, "every session")._repr_mimebundle_()["text/plain"]
        assert "2 recorded turns" in text
        two_step_turn(llm)
        agent.turn("after the damage")  # recording new turns keeps working
        turns = agent.turns("*")
        assert [t.id for t in turns] == [1, 3, 4] and turns[-1].text == "after the damage"
        assert [s.n for s in turns[-1].steps] == [1, 2]
        assert agent.recording.problem is None
    finally:
        agent.close()


STEP_DAMAGE = {
    "reply not JSON": "UPDATE steps SET reply = 'nope' WHERE turn_id = 2 AND n = 1",
    "reply tool_calls not a list": "UPDATE steps SET reply = '{\"tool_calls\": 5}' WHERE turn_id = 2 AND n = 1",
    "request list not hashes": "UPDATE steps SET request = '{\"messages\": [1]}' WHERE turn_id = 2 AND n = 1",
    "call arguments a list": "UPDATE calls SET arguments = '[]' WHERE turn_id = 2 AND step = 1",
    "call duration text": "UPDATE calls SET duration = 'slow' WHERE turn_id = 2 AND step = 1",
    "call name a blob": "UPDATE calls SET name = x'00ff' WHERE turn_id = 2 AND step = 1",
}


@pytest.mark.parametrize("damage", sorted(STEP_DAMAGE))
def test_a_damaged_step_or_call_is_named_in_the_steps_view_and_refused_for_replay(tmp_path, llm, damage):
    from cireil.render.recording import StepsView

    directory = recorded_agent(tmp_path, llm)
    edit(directory, STEP_DAMAGE[damage])
    agent = cireil.load(directory)
    try:
        turns = agent.turns("*")
        assert [t.id for t in turns] == [1, 2, 3]
        bad = turns[1]
        assert [s.n for s in bad.steps] in ([1, 2], [2])
        (problem,) = bad.problems
        assert "recorded turn 2" in problem and "of turn 2" in problem
        bundle = StepsView(bad)._repr_mimebundle_()
        assert problem.split(":")[-1].strip()[:20] in bundle["text/plain"]
        for call in (lambda: agent.replay(2), lambda: agent.export_test(2, tmp_path / "test_t.py")):
            with pytest.raises(ValueError, match="recorded turn 2"):
                call()
        with pytest.raises(ValueError, match="recorded turn 2"):
            agent.fork(2, 1)
        assert len(agent.turns("*")[2].steps) == 2  # the others read as ever
    finally:
        agent.close()


def test_a_session_id_of_invalid_utf8_reads_back_escaped_and_shows(tmp_path, llm):
    from cireil.render.recording import StepsView, UsageView

    directory = recorded_agent(tmp_path, llm, turns=2)
    edit(directory, "UPDATE turns SET session_id = CAST(x'6e6f7465626f6f6b3aff1b5d303b78' AS TEXT) WHERE id = 2")
    agent = cireil.load(directory)
    try:
        turns = agent.turns("*")
        assert [t.session_id for t in turns] == ["notebook:main", "notebook:\udcff\x1b]0;x"]
        assert [t.id for t in agent.turns("notebook:\udcff\x1b]0;x")] == [2]  # asked for by that very id
        for view in (UsageView(turns, {}, "every session"), StepsView(turns[1])):
            bundle = view._repr_mimebundle_()
            json.dumps(bundle).encode("utf-8")  # the kernel sends it as JSON: no lone surrogate
            assert "\x1b" not in bundle["text/plain"]
        # the recorder writes such an id as the bytes it stands for (sessions.db is another matter)
        agent.recording.store.begin_turn("notebook:\udcff\x1b]0;x", "m", "p", {"content": "caf\udce9"})
        again = agent.turns("notebook:\udcff\x1b]0;x")
        assert [t.id for t in again] == [2, 3] and again[1].text == "caf\udce9"
    finally:
        agent.close()


def test_a_blob_that_is_not_json_is_a_note_in_the_request_not_an_error(tmp_path, llm):
    directory = recorded_agent(tmp_path, llm, turns=1)
    edit(directory, "UPDATE blobs SET json = '{broken'")
    agent = cireil.load(directory)
    try:
        (turn,) = agent.turns()
        messages = turn.steps[0].request["messages"]
        assert messages and all("not loaded" in m and "is not JSON" in m["not loaded"] for m in messages)
    finally:
        agent.close()


def test_a_huge_value_is_never_read_whole(tmp_path, llm, capsys):
    directory = recorded_agent(tmp_path, llm, turns=2)
    size = VALUE_LIMIT + 1000
    for column in ("user_message", "usage", "origin"):
        edit(directory, f"UPDATE turns SET {column} = printf('%.*c', ?, 'x') WHERE id = 1", size)
    edit(directory, "UPDATE steps SET reply = printf('%.*c', ?, 'x') WHERE turn_id = 2 AND n = 1", size)
    edit(directory, "UPDATE turns SET error = printf('%.*c', ?, 'e') WHERE id = 2", size)
    agent = cireil.load(directory)
    try:
        tracemalloc.start()
        turns = agent.turns("*")
        steps = turns[0].steps
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert [t.id for t in turns] == [2] and [s.n for s in steps] == [2]
        assert peak < VALUE_LIMIT // 4, f"{peak:,} bytes read for a {size:,}-character value"
        assert len(turns[0].error) <= 64 * 1024  # a long error is cut, the turn kept
        assert f"{size:,} characters, over" in turns[0].problems[0]
        assert "recorded turn 1 skipped" in capsys.readouterr().err
    finally:
        agent.close()


def test_usage_counts_of_the_wrong_type_are_left_out_of_the_sums(tmp_path, llm):
    from cireil.render.recording import UsageView

    directory = recorded_agent(tmp_path, llm, turns=2)
    edit(directory, """UPDATE turns SET usage = '{"prompt_tokens": "12", "completion_tokens": true}' WHERE id = 1""")
    edit(directory, """UPDATE steps SET reply = json_set(reply, '$.usage.prompt_tokens', 'x') WHERE turn_id = 1""")
    agent = cireil.load(directory)
    try:
        turns = agent.turns("*")
        assert turns[0].usage == {} and turns[0].steps[0].tokens_in is None
        text = UsageView(turns, {}, "every session").text()
        assert "2 recorded turns" in text
    finally:
        agent.close()


def test_later_agent_cells_and_the_views_work_with_a_damaged_row_in_the_kernel(tmp_path, llm):
    directory = recorded_agent(tmp_path, llm, turns=2)
    edit(directory, "UPDATE turns SET usage = 'not json' WHERE id = 1")
    edit(directory, "UPDATE calls SET result = 'not json' WHERE turn_id = 2")
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {directory}")
        two_step_turn(llm)
        run = kernel.run("%%cireil_agent\nanother")
        assert run.error is None and "recorded turn 3: 2 model calls" in run.text()
        run = kernel.run("%cireil usage --all")
        text = run.text()
        assert run.error is None and "2 recorded turns" in text
        assert text.count("recorded turn 1 skipped") == 1 and "Traceback" not in text
        run = kernel.run("%cireil steps 2")
        assert run.error is None and "⚠" in run.text() and "tool call 0 of step 1 of turn 2" in run.text()
        run = kernel.run("%cireil steps 1", ok=False)
        assert "recorded turn 1 skipped: usage is not JSON" in run.text() and "Traceback" not in run.text()
        run = kernel.run("%cireil replay 1", ok=False)
        assert "recorded turn 1 skipped: usage is not JSON" in run.text()
        two_step_turn(llm)
        run = kernel.run("%%cireil_agent\nand one more")
        assert run.error is None and "recorded turn 4: 2 model calls" in run.text()
    finally:
        kernel.shutdown()


# -- fork ------------------------------------------------------------------------------------------------
BAD_FORKS = [
    ({"step": 1, "result": ["not", "a", "dict"]}, "result must be a dict"),
    ({"step": 1, "result": "text"}, "result must be a dict"),
    ({"step": 1, "arguments": ["x"]}, "arguments must be a dict"),
    ({"step": 1, "result": {"x": object()}}, "result must be JSON data"),
    ({"step": 0}, "has steps 1 to 2, not 0"),
    ({"step": -1}, "has steps 1 to 2, not -1"),
    ({"step": 3}, "has steps 1 to 2, not 3"),
    ({"step": True}, "has steps 1 to 2, not True"),
    ({"step": "1"}, "has steps 1 to 2, not '1'"),
    ({"step": 1, "position": True, "result": {}}, "position must be"),
    ({"step": 1, "position": -1, "result": {}}, "position must be"),
    ({"step": 1, "position": 5, "result": {}}, "position 5 is none"),
    ({"step": 1, "live": "yes"}, "live must be True or False"),
    ({"step": 1, "live": True, "model": 5}, "model must be a name"),
]


@pytest.mark.parametrize(("options", "why"), BAD_FORKS, ids=[w for _, w in BAD_FORKS])
def test_a_refused_fork_leaves_no_session_behind(tmp_path, llm, options, why):
    directory = recorded_agent(tmp_path, llm, turns=1)
    agent = cireil.load(directory)
    try:
        (turn,) = agent.turns()
        before = set(agent._sessions)
        options = dict(options)
        step = options.pop("step")
        with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
            agent.fork(turn.id, step, **options)
        assert set(agent._sessions) == before
        assert not any(s.startswith("notebook:fork") for s in agent.store.session_ids())
        assert not agent.has_session(f"notebook:fork-{turn.id}-1")
        # and a good fork after all that takes the first name
        assert agent.fork(turn.id, 1, result={"success": True}).session_id == f"notebook:fork-{turn.id}-1"
    finally:
        agent.close()
    db = sqlite3.connect(directory / "sessions.db")
    try:
        rows = [r[0] for r in db.execute("SELECT id FROM sessions")]
    finally:
        db.close()
    assert sum("fork" in r for r in rows) == 1


# -- views ---------------------------------------------------------------------------------------------
def test_the_steps_usage_and_replay_views_show_escape_sequences_never_send_them(tmp_path, llm):
    from cireil.render.recording import StepsView, UsageView
    from cireil.render.replay import ReplayView

    directory = turn_agent(tmp_path, llm.base_url)
    agent = cireil.load(directory)
    try:
        llm.script(
            reply.tool_calls(("read", {"path": f"/workspace/notes{ESCAPES}.md"}), reasoning=ESCAPES, text=ESCAPES),
            reply.tool_calls((f"no{ESCAPES}tool", {"x": ESCAPES})),
            reply.tool_calls(("respond", {"content": ESCAPES})),
        )
        agent.turn(f"hi {ESCAPES}", session=f"evil{ESCAPES}")
        (turn,) = agent.turns("*")
        assert turn.session_id == f"notebook:evil{ESCAPES}" and turn.text == f"hi {ESCAPES}"  # kept as sent
        bundles = [
            StepsView(turn)._repr_mimebundle_(),
            UsageView([turn], {}, f"session {turn.session_id}")._repr_mimebundle_(),
        ]
        plain = StepsView(turn).text() + UsageView([turn], {}, turn.session_id).text()
        two_step_turn(llm)
        result = agent.replay(turn.id)
        bundles.append(ReplayView(result)._repr_mimebundle_())
        plain += ReplayView(result).text()
    finally:
        agent.close()
    for bundle in bundles:
        for key in ("text/plain", "text/html"):
            assert not any(c in bundle[key] for c in "\x1b\x07\x9b"), (key, bundle[key][:300])
    assert "\u241b" in bundles[0]["text/plain"] and "\u241b" in bundles[1]["text/plain"]
    assert "\x1b" not in plain and "\x07" not in plain and "\u241b]52" in plain


def test_messages_of_the_wrong_shape_show_the_steps_without_a_diff(tmp_path, llm):
    from cireil.render.recording import NO_DIFF, StepsView

    directory = recorded_agent(tmp_path, llm, turns=1)
    db = sqlite3.connect(directory / RECORDINGS_FILE)
    rows = list(db.execute("SELECT hash, json FROM blobs"))
    assistant = next(h for h, text in rows if '"role":"assistant"' in text)
    others = [h for h, _ in rows if h != assistant]
    db.execute("""UPDATE blobs SET json = '{"role": "assistant", "tool_calls": "abc"}' WHERE hash = ?""", (assistant,))
    db.execute("UPDATE blobs SET json = '[1, 2]' WHERE hash = ?", (others[0],))
    db.execute("DELETE FROM blobs WHERE hash = ?", (others[1],))
    db.commit()
    db.close()
    agent = cireil.load(directory)
    try:
        (turn,) = agent.turns()
        view = StepsView(turn)
        bundle = view._repr_mimebundle_()
        assert NO_DIFF in bundle["text/plain"] and "model calls (2)" in bundle["text/html"]
        notes = [m for s in turn.steps for k in ("messages", "tools") for m in s.request[k] if "not loaded" in m]
        assert any("is not a JSON object" in m["not loaded"] for m in notes)
        assert any("is missing from the blobs table" in m["not loaded"] for m in notes)
    finally:
        agent.close()


def test_recorded_turns_in_a_hand_edited_result_file_are_refused_in_one_line(tmp_path, llm):
    from cireil.render.recording import StepsView
    from cireil.runtime.recorder.portable import pack_turns, unpack_turns

    directory = recorded_agent(tmp_path, llm, turns=1)
    agent = cireil.load(directory)
    try:
        packed = pack_turns(agent.turns())
    finally:
        agent.close()
    (turn,) = unpack_turns(json.loads(json.dumps(packed)))
    assert "recorded turn" in StepsView(turn).text()
    breakages = [
        lambda d: d["turns"][0]["steps"][0].__setitem__("reply", "text"),
        lambda d: d["turns"][0]["steps"][0]["reply"].__setitem__("tool_calls", [5]),
        lambda d: d["turns"][0]["steps"][0]["calls"][0].__setitem__("arguments", [1]),
        lambda d: d["turns"][0].__setitem__("session_id", 5),
        lambda d: d["turns"][0].__setitem__("usage", "lots"),
        lambda d: d.__setitem__("turns", {"a": 1}),
        lambda d: d["turns"][0]["steps"].__setitem__(0, None),
    ]
    for n, breakage in enumerate(breakages):
        data = json.loads(json.dumps(packed))
        breakage(data)
        with pytest.raises(ValueError, match="the recorded turns are not as cireil wrote them") as caught:
            unpack_turns(data)
        assert "\n" not in str(caught.value), n
