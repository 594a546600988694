"""For the same history, cireil sends the model the same messages as the original CireilClaw itself.

Both runtimes answer one scripted model server with the same replies, in two sessions of one agent: a turn that
reads a file, reads it again and ends, then a turn after it. The original (run for real, tests/originalkit.py)
supersedes the first read once the model answered the second one, and saves that; cireil must send every
request alike and store the same rewrite. The messages are compared whole; only the clock's line of the
metadata message (the time each request was made) is left out of the comparison.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import cireil
from cireil.testing.scripted_llm import ScriptedLLM, reply
from originalkit import Original, point_engine

NOTES = "# Notes\n\nWater the tomatoes.\n"
BY_ORIGINAL = "internal:by-original"
BY_CIREIL = "internal:by-cireil"
WINDOW = 200_000


def script(llm: ScriptedLLM) -> None:
    """The same replies for each runtime, call ids included, so the histories are alike to the byte."""
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"}, "call_first")),
        reply.tool_calls(("read", {"path": "/workspace/notes.md"}, "call_again")),
        # no-response ends both turns: respond has no channel to send to in the original's internal sessions
        reply.tool_calls(("no-response", {}, "call_done")),
        reply.tool_calls(("no-response", {}, "call_bye")),
    )


def without_clock(messages: list[dict]) -> list[dict]:
    """The messages, the metadata message's date line (when the request was made) masked."""
    out = json.loads(json.dumps(messages))
    last = out[-1]
    parts = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
    for part in parts:
        part["text"] = re.sub(r"^Current date: [^\n]*", "Current date: <now>", part["text"])
    last["content"] = parts
    return out


def history(agent_dir: Path, session: str) -> list[dict]:
    with sqlite3.connect(agent_dir / "sessions.db") as db:
        (text,) = db.execute("SELECT history FROM sessions WHERE id = ?", (session,)).fetchone()
    return json.loads(text)


def outputs(messages: list[dict]) -> list:
    return [m["content"].get("output") for m in messages if m["role"] == "toolResponse"]


def test_a_re_read_file_is_sent_and_saved_alike(original: Original, tmp_path: Path) -> None:
    home = tmp_path / "home"
    agent_dir = original.init_root(home, "Same Request", preset="standard")
    original.mark_migrations_applied(home)
    (agent_dir / "workspace" / "notes.md").write_text(NOTES)
    with ScriptedLLM(default=reply.tool_calls(("no-response", {}))) as llm:
        point_engine(agent_dir, llm.base_url, context_window=WINDOW)

        script(llm)
        with original.start(home) as peer:
            peer.turn(BY_ORIGINAL, "What do the notes say?")
            peer.turn(BY_ORIGINAL, "Thanks!")
        by_original = [r.body for r in llm.requests]
        assert len(by_original) == 4

        script(llm)
        agent = cireil.load(agent_dir)
        try:
            agent.turn("What do the notes say?", session=BY_CIREIL)
            agent.turn("Thanks!", session=BY_CIREIL)
        finally:
            agent.close()
        by_cireil = [r.body for r in llm.requests[4:]]
        assert len(by_cireil) == 4

        # the original continues cireil's session: what cireil stored is already what it would save, so its own
        # supersession leaves every stored message as cireil wrote it
        stored = history(agent_dir, BY_CIREIL)
        llm.script(reply.tool_calls(("no-response", {}, "call_more")))
        with original.start(home) as peer:
            peer.turn(BY_CIREIL, "One more thing?")
        assert history(agent_dir, BY_CIREIL)[: len(stored)] == stored

    for n, (theirs, ours) in enumerate(zip(by_original, by_cireil, strict=True), 1):
        assert without_clock(ours["messages"]) == without_clock(theirs["messages"]), f"request {n}"
    # the third request carries both reads whole (the original holds the re-read apart until the model answered
    # it); the fourth carries the first one as the original's stub
    third, fourth = (json.dumps(body["messages"][1:]) for body in by_original[2:])  # without the system prompt
    assert third.count("Water the tomatoes.") == 2 and "superseded" not in third
    assert fourth.count("Water the tomatoes.") == 1 and '\\"superseded\\":true' in fourth
    # and both saved the rewrite alike
    assert outputs(stored) == outputs(history(agent_dir, BY_ORIGINAL))
    assert outputs(stored)[0] == {"path": "/workspace/notes.md", "superseded": True}
