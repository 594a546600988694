"""An agent whose sessions.db the original CireilClaw runtime made: opened as it is, read, searched, continued.

The fixture database is built by the test (upstream_db.py) with the original's migrations and
bookkeeping rows and rows as the original writes them; every row cireil writes is checked against
upstream-formats.md §4.5 and §7 by a checker that knows nothing of cireil's store.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import cireil
import upstream_db as up
from cireil.render import result_bundle
from cireil.runtime.sessions import SessionStore
from cireil.runtime.sessions.messages import assistant_message, tool_response, user_message
from cireil.runtime.sessions.store import (
    SessionConflict,
    SessionError,
    SessionFormatError,
    SessionReadOnly,
    SessionStoreError,
)
from cireil.testing.scripted_llm import ScriptedLLM, reply
from turnkit import turn_agent


@pytest.fixture
def agent_dir(tmp_path: Path, llm: ScriptedLLM) -> Path:
    directory = turn_agent(tmp_path, llm.base_url)
    up.create_original_db(directory / "sessions.db")
    up.fill(directory / "sessions.db", directory)
    return directory


@pytest.fixture
def agent(agent_dir: Path):
    a = cireil.load(agent_dir)
    yield a
    a.close()


def all_problems(agent_dir: Path) -> list[str]:
    db = sqlite3.connect(agent_dir / "sessions.db")
    try:
        bad = set(up.BAD_ROWS)
        ids = [r[0] for r in db.execute("SELECT id FROM sessions") if r[0] not in bad]
        return [p for row_id in ids for p in up.check_row(db, agent_dir, row_id)]
    finally:
        db.close()


def test_the_fixture_itself_passes_the_checker(agent_dir):
    assert all_problems(agent_dir) == []


def test_loading_and_every_reading_tool_change_nothing(agent_dir):
    before = up.snapshot(agent_dir / "sessions.db")
    agent = cireil.load(agent_dir)
    try:
        listed = agent.call("list-sessions", limit=30).data
        ids = [s["id"] for s in listed["sessions"]]
        assert set(ids) == {up.GUILD, up.DM, "tui", "internal:notes", *up.BAD_ROWS}
        assert ids[:2] == [up.DM, up.GUILD]  # most recent activity first
        by_id = {s["id"]: s for s in listed["sessions"]}
        assert by_id[up.GUILD]["preview"] == "Your notes say: water the tomatoes every morning."
        assert by_id[up.GUILD]["messageCount"] == 3
        assert by_id["internal:object-history"]["preview"].startswith("[unreadable: ")

        page = agent.call("read-session", id=up.GUILD, order="asc").data
        texts = [m["content"] for m in page["messages"]]
        assert texts[0].startswith("can you check what my garden notes say")
        assert "[image]" in texts[0]
        assert "[thinking: The notes live in /memories/garden.md" in texts[1]
        assert next(m["id"] for m in page["messages"]) == "1499711982796907187"

        dm = agent.call("read-session", id=up.DM, order="asc").data
        assert dm["messages"][0]["content"] == "hej, är du där? 🌱"
        assert "[redacted_thinking]" in dm["messages"][1]["content"]

        found = agent.call("query-sessions", query="tomatoes", mode="raw").data
        assert {m["sessionId"] for m in found["matches"]} == {up.GUILD}
        assert agent.call("query-sessions", query="*där*").data["totalMatches"] == 1

        broken = agent.call("read-session", id="internal:object-history")
        assert broken.data["success"] is False
        assert broken.data["error"] == (
            "sessions.db: session internal:object-history: history is a JSON dict, not an array; it was left unchanged"
        )
        odd = agent.call("read-session", id="internal:odd-block").data["error"]
        assert "unknown block type 'hologram' in a user message" in odd
        mismatch = agent.call("read-session", id="discord:999").data["error"]
        assert "id does not match its channel 'discord'" in mismatch and "'discord:111'" in mismatch

        assert [j["id"] for j in agent.scheduler.pending()] == ["water-reminder"]
        notes = [str(w) for w in agent.warnings if w.file == "sessions.db"]
        assert len(notes) == 3 and all("\n" not in n for n in notes)
        assert any("session discord:999:" in n for n in notes)
    finally:
        agent.close()
    assert up.snapshot(agent_dir / "sessions.db") == before


def test_image_refs_the_original_stored_are_loaded_with_their_bytes(agent):
    session = agent.store.get(up.GUILD)
    image = session.history[0]["content"][1]
    assert image["type"] == "image" and image["mediaType"] == "image/webp" and image["ref"] == up.PHOTO_ID
    import base64

    assert base64.b64decode(image["data"]) == up.PHOTO
    assert session.summaries[0]["slug"] == "tomato-care"


def test_images_the_original_stored_show_inline_in_read_session_and_the_turn_view(agent):
    import base64

    from cireil.render import chat

    result = agent.call("read-session", id=up.GUILD, order="asc")
    html = result_bundle(result)["text/html"]
    photo = base64.b64encode(up.PHOTO).decode()
    assert f'src="data:image/webp;base64,{photo}"' in html
    first = agent.store.get(up.GUILD).history[0]
    assert f"base64,{photo}" in chat.user_bubble(first)[1]


def test_a_session_written_back_unchanged_keeps_its_row_byte_for_byte(agent_dir):
    before = up.snapshot(agent_dir / "sessions.db")
    store = SessionStore.for_agent(agent_dir)
    try:
        for session_id in (up.GUILD, up.DM, "tui", "internal:notes"):
            session = store.get(session_id)
            store.save_state(session)
            session.opened_files.append("/workspace/x.md")
            store.save_state(session)
            session.opened_files.clear()
            store.save_state(session)
    finally:
        store.close()
    after = up.snapshot(agent_dir / "sessions.db")
    assert after == before


def test_a_notebook_turn_appends_a_session_the_original_accepts(agent, agent_dir, llm):
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
        reply.tool_calls(("respond", {"content": "You need milk. ✓"})),
    )
    before = up.snapshot(agent_dir / "sessions.db")
    outcome = agent.turn("what do I need? ünïcode")
    assert outcome.ended == "respond"
    after = up.snapshot(agent_dir / "sessions.db")
    changed = [r for r in after["sessions"] if r not in before["sessions"]]
    assert [r[0] for r in changed] == ["internal:notebook:main"]  # nothing else moved
    assert after["schema"] == before["schema"] and after["__drizzle_migrations"] == before["__drizzle_migrations"]
    assert all_problems(agent_dir) == []
    db = sqlite3.connect(agent_dir / "sessions.db")
    (history_text,) = db.execute("SELECT history FROM sessions WHERE id = 'internal:notebook:main'").fetchone()
    db.close()
    history = json.loads(history_text)
    assert [m["role"] for m in history] == ["user", "assistant", "toolResponse", "assistant", "toolResponse"]
    assert history[0]["content"] == {"content": "what do I need? ünïcode", "type": "text"}
    assert "ünïcode" in history_text  # not \u-escaped: the original's LIKE prefilter sees it
    found = agent.call("query-sessions", query="ünïcode", mode="raw").data
    assert [m["sessionId"] for m in found["matches"]] == ["notebook:main"]


def test_continuing_the_originals_tui_session_keeps_what_was_there(agent, agent_dir, llm):
    llm.script(reply.tool_calls(("respond", {"content": "Still nothing due."})))
    agent.turn("anything now?", session="tui")
    db = sqlite3.connect(agent_dir / "sessions.db")
    (history_text,) = db.execute("SELECT history FROM sessions WHERE id = 'tui'").fetchone()
    db.close()
    history = json.loads(history_text)
    assert history[: len(up.TUI_HISTORY)] == up.TUI_HISTORY
    assert len(history) == len(up.TUI_HISTORY) + 3
    assert all_problems(agent_dir) == []


def test_images_a_turn_stores_are_blake3_files_with_rows(agent, agent_dir):
    store = agent.store
    session = store.open_session("notebook:pics")
    import base64

    png = b"\x89PNG\r\n\x1a\nnot really"
    message = user_message(
        "look", parts=[{"type": "image", "mediaType": "image/png", "data": base64.b64encode(png).decode()}]
    )
    session.history.append(message)
    store.commit(session, [message])
    import blake3

    ref = blake3.blake3(png).hexdigest()
    assert (agent_dir / "images" / f"{ref}.png").read_bytes() == png
    assert all_problems(agent_dir) == []
    assert store.get("notebook:pics").history[0]["content"][1]["ref"] == ref


# -- concurrency -------------------------------------------------------------------------------------


HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
    db.execute("SELECT count(*) FROM sessions").fetchone()
    print("ready", flush=True)
    if len(sys.argv) > 2:  # hold the write lock a moment, then write a row of its own
        sys.stdin.readline()
        db.execute("BEGIN IMMEDIATE")
        print("locked", flush=True)
        time.sleep(1.0)
        db.execute(
            "INSERT INTO sessions (id, channel, meta, history, opened_files) VALUES ('internal:theirs', 'internal',"
            " '{}', '[]', '[]')"
        )
        db.execute("COMMIT")
        print("written", flush=True)
    sys.stdin.readline()
    """
)


def start_holder(db_path: Path, *args: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db_path), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_while_another_process_has_it_open_the_originals_sessions_are_read_only(agent_dir, llm):
    holder = start_holder(agent_dir / "sessions.db")
    try:
        agent = cireil.load(agent_dir)
        try:
            notes = [str(w) for w in agent.warnings if "another process" in str(w)]
            assert len(notes) == 1 and f"pid {holder.pid}" in notes[0]
            before = up.snapshot(agent_dir / "sessions.db")
            # the original saves tui only when a main cron job or the heartbeat runs there
            (agent_dir / "config" / "heartbeat.toml").write_text('enabled = true\ntarget = "tui"\n')
            with pytest.raises(SessionReadOnly, match=r"session tui is where the heartbeat \(config/heartbeat.toml\)"):
                agent.turn("hello", session="tui")
            with pytest.raises(SessionReadOnly, match=r"is a Discord session: cireil has no discord channel"):
                agent.turn("hello", session=up.GUILD)
            guild = agent.store.get(up.GUILD)
            guild.opened_files.append("/workspace/a")
            with pytest.raises(SessionReadOnly):
                agent.store.save_state(guild)
            agent.use_session(up.GUILD)  # a call outside a turn works; what it changed is not written
            opened = agent.call("open-file", path="/workspace/notes.md")
            assert opened.success and any("not saved to sessions.db: session discord:" in n for n in opened.notices)
            agent.use_session("main")
            assert up.snapshot(agent_dir / "sessions.db") == before
            assert llm.requests == []  # refused before the model was called
            llm.script(reply.tool_calls(("respond", {"content": "ok"})))
            agent.turn("a notebook session is cireil's own")  # internal:notebook:main, new: writable
            assert agent.store.exists("notebook:main")
            # ... unless the running original writes it itself: a `main` cron job or the heartbeat targets it
            (agent_dir / "config" / "heartbeat.toml").write_text('enabled = true\ntarget = "internal:notebook:main"\n')
            with pytest.raises(SessionReadOnly, match=r"where the heartbeat \(config/heartbeat.toml\) runs"):
                agent.turn("again")
        finally:
            agent.close()
    finally:
        holder.communicate("\n", timeout=10)


def test_a_second_process_writing_at_the_same_time_waits_its_turn(agent_dir):
    holder = start_holder(agent_dir / "sessions.db", "write")
    store = SessionStore.for_agent(agent_dir)
    try:
        session = store.open_session("notebook:main")
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "locked"
        message = user_message("written while the other process held the lock")
        session.history.append(message)
        store.commit(session, [message])  # waits on the busy timeout, then commits
        assert holder.stdout.readline().strip() == "written"
        assert store.exists("internal:theirs") and store.get("notebook:main").history == [message]
    finally:
        store.close()
        holder.communicate("\n", timeout=10)
    assert all_problems(agent_dir) == []


def test_a_row_changed_between_read_and_write_is_never_overwritten(agent_dir):
    store = SessionStore.for_agent(agent_dir)
    try:
        session = store.get("internal:notes")
        raw = sqlite3.connect(agent_dir / "sessions.db", isolation_level=None)
        changed = up.dumps(
            [
                *up.NOTES_HISTORY,
                {"content": {"content": "by the original", "type": "text"}, "role": "user", "timestamp": 1},
            ]
        )
        raw.execute("UPDATE sessions SET history = ? WHERE id = 'internal:notes'", (changed,))
        raw.close()
        message = user_message("from the notebook")
        session.history.append(message)
        with pytest.raises(SessionConflict) as caught:
            store.commit(session, [message])
        assert str(caught.value).startswith("session internal:notes changed in sessions.db since cireil read it")
        db = sqlite3.connect(agent_dir / "sessions.db")
        assert db.execute("SELECT history FROM sessions WHERE id = 'internal:notes'").fetchone()[0] == changed
        db.close()
        assert store.get("internal:notes").history[-1]["content"][0]["text"] == "by the original"
        assert store.query("by the original", mode="raw")[1] == 1  # the index noticed the other writer
    finally:
        store.close()


STEPPER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from cireil.runtime.sessions.messages import assistant_message, tool_response, user_message
    from cireil.runtime.sessions import SessionStore
    store = SessionStore.for_agent(Path(sys.argv[1]))
    session = store.open_session("notebook:steps")
    print("ready", flush=True)
    n = len(session.history)
    while True:
        n += 1
        ask = user_message("step %d " % n + "x" * 2000)
        call = {"type": "toolCall", "id": "call_%06d" % n, "name": "read", "input": {"path": "/w"}}
        said = assistant_message([call])
        answer = tool_response("call_%06d" % n, "read", {"content": "y" * 5000})
        batch = [ask, said, answer]
        session.history += batch
        store.commit(session, batch)
    """
)


def test_kill_9_in_the_middle_of_steps_leaves_the_last_complete_step(agent_dir):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for round_ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", STEPPER, str(agent_dir)], stdout=subprocess.PIPE, text=True, env=env
        )
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.4 + 0.2 * round_)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        db = sqlite3.connect(agent_dir / "sessions.db")
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        (history_text,) = db.execute("SELECT history FROM sessions WHERE id = 'internal:notebook:steps'").fetchone()
        db.close()
        history = json.loads(history_text)
        assert history and len(history) % 3 == 0  # whole steps only
        assert [m["role"] for m in history[-3:]] == ["user", "assistant", "toolResponse"]
        assert all_problems(agent_dir) == []
    store = SessionStore.for_agent(agent_dir)  # the side index catches up with what the killed process wrote
    try:
        assert store.query("step", mode="raw")[1] == len(history) // 3
    finally:
        store.close()


# -- bad input ---------------------------------------------------------------------------------------


def test_a_corrupt_sessions_db_is_one_line_and_the_agent_still_loads(agent_dir):
    (agent_dir / "sessions.db").write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(str(agent_dir / "sessions.db") + suffix).unlink(missing_ok=True)
    agent = cireil.load(agent_dir)
    try:
        assert agent.store is None
        (note,) = [str(w) for w in agent.warnings if w.file == "sessions.db"]
        assert "\n" not in note and "sessions.db" in note and "not a database" in note
        assert agent.call("read", path="/workspace/notes.md").data["success"] is True
    finally:
        agent.close()
    assert (agent_dir / "sessions.db").read_bytes() == b"this is not a database" * 100


def test_a_locked_sessions_db_is_one_line(agent_dir):
    raw = sqlite3.connect(agent_dir / "sessions.db", isolation_level=None)
    raw.execute("PRAGMA locking_mode = EXCLUSIVE")
    raw.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(SessionStoreError) as caught:
            SessionStore.for_agent(agent_dir)
        assert "\n" not in str(caught.value) and "locked" in str(caught.value)
    finally:
        raw.execute("ROLLBACK")
        raw.close()


def test_unreadable_rows_raise_one_line_naming_the_session(agent_dir):
    store = SessionStore.for_agent(agent_dir)
    try:
        with pytest.raises(SessionFormatError, match=r"^sessions.db: session internal:odd-block: message 0: unknown"):
            store.get("internal:odd-block")
        assert store.get(up.GUILD) is not None  # the rest still loads
    finally:
        store.close()


def test_an_earlier_cireil_database_is_converted_once_with_a_backup_first(tmp_path):
    path = tmp_path / "sessions.db"
    up.create_old_cireil_db(path)
    old_rows = (
        sqlite3.connect(path)
        .execute("SELECT body FROM messages WHERE session_id = 'notebook:main' ORDER BY seq")
        .fetchall()
    )
    store = SessionStore.for_agent(tmp_path)
    try:
        assert store.load_notes()[0] == (
            "converted from an earlier cireil's private format to the original runtime's; "
            "the old file is kept as sessions.cireil-old.db"
        )
        session = store.get("notebook:main")
        old = [json.loads(b) for (b,) in old_rows]
        assert [m["id"] for m in session.history] == [m["id"] for m in old]
        assert session.history[1]["usage"] == {"prompt_tokens": 10}  # cireil's extras kept beside
        assert session.history[0]["timestamp"] == "2026-03-01T10:00:00+01:00"
        first, second = session.history[1]["content"][0]["id"], session.history[4]["content"][0]["id"]
        assert first == "call_scripted_0" and second != first  # the repeated call id made unique, pairs kept
        assert session.history[5]["toolCallId"] == second
        assert session.opened_files == ["/workspace/a.md"]
        assert store.get("cron:demo:job") is None  # isolated runs are never stored (§5)
        assert next(m for m, _ in store.attachments("notebook:main", "mu0"))["filename"] == "notes.txt"
        assert [j["id"] for j in store.jobs()] == ["tea"]
        assert store.query("question", mode="raw")[1] == 2
    finally:
        store.close()
    backup = sqlite3.connect(tmp_path / "sessions.cireil-old.db")
    assert backup.execute("SELECT count(*) FROM messages").fetchone()[0] == 9  # the whole old file, WAL included
    backup.close()
    assert all_problems(tmp_path) == []
    again = SessionStore.for_agent(tmp_path)  # once: the converted file is the original's and stays so
    try:
        assert again.load_notes() == []
    finally:
        again.close()


def test_in_a_kernel_load_says_read_only_in_one_line_and_a_turn_there_is_refused(agent_dir, llm):
    from kernelharness import Kernel

    holder = start_holder(agent_dir / "sessions.db")
    kernel = Kernel(cwd=agent_dir.parent)
    try:
        run = kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
        lines = [line for line in run.stderr.splitlines() if "another process" in line]
        assert len(lines) == 1 and f"pid {holder.pid}" in lines[0] and lines[0].startswith("sessions.db: warning:")
        refused = kernel.run(f"%%cireil_agent --session {up.GUILD}\nhello", ok=False).text()
        assert f"UsageError: session {up.GUILD} belongs to the original runtime" in refused
        assert "Traceback" not in refused
        bad = kernel.run("%cireil session internal:odd-block", ok=False).text()
        assert "UsageError: sessions.db: session internal:odd-block: message 0: unknown block type" in bad
        card = kernel.run("%cireil session discord:1425000000000000001").text()
        assert "read-only: session discord:1425000000000000001 belongs to the original runtime" in card
        shown = kernel.run(f"%cireil_read_session {up.GUILD}")
        assert "can you check what my garden notes say" in shown.text()
        assert llm.requests == []
    finally:
        kernel.shutdown()
        holder.communicate("\n", timeout=10)


def test_two_writers_of_one_session_the_second_is_refused_and_then_continues_from_what_is_stored(agent_dir, llm):
    first, second = cireil.load(agent_dir), cireil.load(agent_dir)
    try:
        llm.script(reply.tool_calls(("respond", {"content": "one"})))
        first.turn("from the first kernel")
        llm.script(reply.tool_calls(("respond", {"content": "two"})))
        second.turn("from the second kernel, which read the session before the first wrote")
        # second read notebook:main when it had no row; first created it meanwhile: second's write is refused
    except SessionConflict as exc:
        assert str(exc).startswith("session notebook:main changed in sessions.db since cireil read it")
    else:
        raise AssertionError("the second writer was not refused")
    try:
        stored = [m["content"][0]["text"] for m in first.store.get("notebook:main").history if m["role"] == "user"]
        assert stored == ["from the first kernel"]  # nothing of the second kernel overwrote it
        assert [m["role"] for m in second.session.history][:1] == ["user"]  # re-read: it now holds the first's turn
        llm.script(reply.tool_calls(("respond", {"content": "three"})))
        second.turn("again, now on top of what is stored")
        users = [m["content"][0]["text"] for m in first.store.get("notebook:main").history if m["role"] == "user"]
        assert users == ["from the first kernel", "again, now on top of what is stored"]
        assert all_problems(agent_dir) == []
    finally:
        first.close()
        second.close()


def test_a_database_an_older_original_left_is_read_but_never_written(tmp_path):
    """Its migrations are not all applied (no summaries table, no active_file_sections): cireil must not
    migrate it itself (upstream-formats §4.3); it reads defensively and writes nothing."""
    from cireil.runtime.sessions.upstream_schema import BREAKPOINT, MIGRATIONS

    path = tmp_path / "sessions.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute(
        'CREATE TABLE "__drizzle_migrations" (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric,'
        " name text, applied_at TEXT)"
    )
    for name, created, sql in MIGRATIONS[:5]:
        for statement in sql.split(BREAKPOINT):
            db.execute(statement)
        db.execute('INSERT INTO "__drizzle_migrations" (hash, created_at, name) VALUES (?, ?, ?)', ("h", created, name))
    db.execute(
        "INSERT INTO sessions (id, channel, meta, history, opened_files) VALUES ('tui', 'tui', '{}', ?, '[]')",
        (up.dumps(up.TUI_HISTORY),),
    )
    db.close()
    before = up.snapshot(path)
    store = SessionStore.for_agent(tmp_path)
    try:
        assert store.load_notes() == ["last opened by an older CireilClaw: cireil reads its sessions but writes none"]
        session = store.get("tui")
        assert [m["role"] for m in session.history] == ["user", "assistant", "toolResponse"]
        assert store.query("heartbeat", mode="raw")[1] == 1
        message = user_message("more")
        session.history.append(message)
        with pytest.raises(SessionReadOnly, match="last opened by an older CireilClaw"):
            store.commit(session, [message])
        fresh = store.open_session("notebook:new")
        fresh.history.append(user_message("new"))
        with pytest.raises(SessionReadOnly):
            store.commit(fresh, fresh.history[:])
    finally:
        store.close()
    assert up.snapshot(path) == before


def test_a_picture_attached_in_the_notebook_is_stored_the_originals_way(agent, agent_dir, llm):
    import blake3

    from cireil.kernel.magics.agent import Staged, _store_attachments

    png = b"\x89PNG\r\n\x1a\n a picture"
    message = user_message("what is in this picture?")
    _store_attachments(agent, agent.session.id, message, [Staged("cat.png", "image/png", png)])
    llm.script(reply.tool_calls(("respond", {"content": "A cat."})))
    agent.turn(message)
    ref = blake3.blake3(png).hexdigest()
    assert (agent_dir / "images" / f"{ref}.png").read_bytes() == png
    db = sqlite3.connect(agent_dir / "sessions.db")
    (history_text,) = db.execute("SELECT history FROM sessions WHERE id = 'internal:notebook:main'").fetchone()
    rows = db.execute("SELECT id, session_id, media_type FROM images WHERE id = ?", (ref,)).fetchall()
    db.close()
    first = json.loads(history_text)[0]["content"]
    assert first[-1] == {"id": ref, "mediaType": "image/png", "type": "image_ref"}
    assert rows == [(ref, "internal:notebook:main", "image/png")]
    sent = llm.requests[0].body["messages"]
    assert any(p.get("type") == "image_url" for m in sent if m["role"] == "user" for p in m["content"])
    assert all_problems(agent_dir) == []


def test_schedule_writes_the_originals_cron_jobs_row(agent, agent_dir, llm):
    from datetime import UTC, datetime, timedelta

    at = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0).isoformat()
    llm.script(
        reply.tool_calls(("schedule", {"id": "feed-plants", "at": at, "prompt": "Feed the plants."})),
        reply.tool_calls(("respond", {"content": "scheduled"})),
    )
    agent.turn("remind me tomorrow")
    db = sqlite3.connect(agent_dir / "sessions.db")
    row = db.execute(
        "SELECT type, config, next_run, status, retry_count, last_run, created_at FROM cron_jobs WHERE job_id = ?",
        ("feed-plants",),
    ).fetchone()
    db.close()
    kind, config, next_run, status, retries, last_run, created = row
    assert (kind, status, retries, last_run, next_run) == ("one-shot", "pending", 0, None, at)
    assert json.loads(config) == {
        "delivery": "announce",
        "enabled": True,
        "execution": "isolated",
        "id": "feed-plants",
        "prompt": "Feed the plants.",
        "schedule": {"at": at},
        "target": "notebook:main",
    }
    assert config == up.dumps(json.loads(config))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", created)


def test_a_missing_side_file_is_rebuilt_from_sessions_db(agent_dir):
    store = SessionStore.for_agent(agent_dir)
    session = store.open_session("notebook:main")
    message = user_message("the side file goes away", reactions=["👍"])
    session.history.append(message)
    store.commit(session, [message])
    store.close()
    for leftover in agent_dir.glob("cireil-side.db*"):
        leftover.unlink()
    store = SessionStore.for_agent(agent_dir)
    try:
        assert store.query("side file", mode="raw")[1] == 1
        assert store.query("tomatoes", mode="raw")[1] == 1
        again = store.get("notebook:main").history
        assert again[0]["content"][0]["text"] == "the side file goes away"
        assert "reactions" not in again[0]  # a cireil-only extra: lost with its file, nothing else is
    finally:
        store.close()


def test_numbers_json_parse_cannot_read_are_stored_as_null(agent_dir):
    store = SessionStore.for_agent(agent_dir)
    try:
        session = store.open_session("notebook:nan")
        call = assistant_message([{"type": "toolCall", "id": "call_nan", "name": "exec", "input": {}}])
        result = tool_response("call_nan", "exec", {"ratio": float("nan"), "big": float("inf"), "ok": 1.5})
        session.history += [call, result]
        store.commit(session, [call, result])
    finally:
        store.close()
    db = sqlite3.connect(agent_dir / "sessions.db")
    (text,) = db.execute("SELECT history FROM sessions WHERE id = 'internal:notebook:nan'").fetchone()
    db.close()
    assert '"output":{"ratio":null,"big":null,"ok":1.5}' in text
    assert all_problems(agent_dir) == []


def test_a_write_that_waits_out_the_busy_timeout_fails_in_one_line_and_changes_nothing(agent_dir):
    store = SessionStore.for_agent(agent_dir)
    raw = sqlite3.connect(agent_dir / "sessions.db", isolation_level=None)
    try:
        session = store.open_session("notebook:main")
        raw.execute("BEGIN IMMEDIATE")  # another writer that does not let go
        message = user_message("waits 5 s, then gives up")
        session.history.append(message)
        with pytest.raises(SessionError) as caught:
            store.commit(session, [message])
        assert str(caught.value).startswith("session notebook:main was not written: sessions.db stayed locked")
        assert "\n" not in str(caught.value)
        raw.execute("ROLLBACK")
        assert not store.exists("notebook:main")
        store.commit(session, [message])  # the lock is gone: the same step goes in
        assert store.get("notebook:main").history == [message]
    finally:
        raw.close()
        store.close()


def test_an_unreadable_row_of_the_starting_session_still_lets_the_agent_load_and_is_never_overwritten(agent_dir, llm):
    db = sqlite3.connect(agent_dir / "sessions.db", isolation_level=None)
    db.execute(
        "INSERT INTO sessions (id, channel, meta, history, opened_files) VALUES"
        " ('internal:notebook:main', 'internal', '{}', '\"not an array\"', '[]')"
    )
    db.close()
    before = up.snapshot(agent_dir / "sessions.db")
    agent = cireil.load(agent_dir)
    try:
        notes = [str(w) for w in agent.warnings if w.file == "sessions.db"]
        assert any("session notebook:main: history is a JSON str, not an array" in n for n in notes)
        assert agent.call("read", path="/workspace/notes.md").data["success"] is True
        llm.script(reply.tool_calls(("respond", {"content": "hi"})))
        with pytest.raises(SessionConflict):
            agent.turn("hello")
        assert llm.requests == []  # refused with the user's message, before the model was called
    finally:
        agent.close()
    assert up.snapshot(agent_dir / "sessions.db") == before


OTHER_KERNEL = textwrap.dedent(
    """
    import sys
    import cireil
    agent = cireil.load(sys.argv[1])
    outcome = agent.turn("from the other process")
    print(outcome.ended, flush=True)
    agent.close()
    """
)


def test_a_second_process_writing_the_same_session_makes_this_one_refuse_rather_than_interleave(agent_dir, llm):
    agent = cireil.load(agent_dir)  # notebook:main read now: no row yet
    try:
        llm.script(reply.tool_calls(("respond", {"content": "to the other process"})))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run(
            [sys.executable, "-c", OTHER_KERNEL, str(agent_dir)], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.stdout.strip() == "respond", done.stderr
        llm.script(reply.tool_calls(("respond", {"content": "never sent"})))
        with pytest.raises(SessionConflict, match=r"^session notebook:main changed in sessions\.db"):
            agent.turn("from this process")
        stored = agent.store.get("notebook:main").history
        texts = [m["content"][0]["text"] for m in stored if m["role"] == "user"]
        assert texts == ["from the other process"]  # one conversation per history, never two interleaved
        assert all_problems(agent_dir) == []
    finally:
        agent.close()


def test_an_image_temp_file_a_killed_write_left_is_removed_later(agent_dir):
    images = agent_dir / "images"
    old = images / f".{up.PHOTO_ID}.dead.tmp"
    fresh = images / f".{up.PHOTO_ID}.busy.tmp"
    old.write_bytes(b"half")
    fresh.write_bytes(b"being written")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    SessionStore.for_agent(agent_dir).close()
    assert not old.exists() and fresh.exists()  # a write in progress elsewhere is left alone
    assert (images / f"{up.PHOTO_ID}.webp").read_bytes() == up.PHOTO


def test_cireil_messages_round_trip_through_the_originals_format_without_loss(agent_dir):
    import base64

    picture = base64.b64encode(b"GIF89a tiny").decode()
    messages = [
        user_message(
            "look ✓",
            parts=[
                {"type": "text", "text": "[Attached: a.gif]", "note": "attachments"},
                {"type": "image", "mediaType": "image/gif", "data": picture},
            ],
            timestamp="2026-05-01T12:00:00.250+02:00",
            attachments=[{"id": "a1", "filename": "a.gif", "size": 11, "mediaType": "image/gif"}],
        ),
        assistant_message(
            [
                {"type": "thinking", "thinking": "hm", "signature": "c2ln"},
                {"type": "redactedThinking", "data": "opaque"},
                {"type": "text", "text": "stray text"},
                {"type": "toolCall", "id": "call_rt1", "name": "read", "input": {"path": "/workspace/ä.md"}},
            ],
            usage={"prompt_tokens": 5},
            reactions=["👍"],
        ),
        tool_response("call_rt1", "read", {"content": "x", "nested": {"list": [1, 2.5, None, True]}}),
        user_message("notice", notice=True),
    ]
    for session_id in ("notebook:rt", "discord:1500000000000000001"):
        store = SessionStore.for_agent(agent_dir)
        try:
            session = store.open_session(session_id)
            session.history += [dict(m) for m in messages]
            store.commit(session, list(session.history))
        finally:
            store.close()
        store = SessionStore.for_agent(agent_dir)
        try:
            again = store.get(session_id).history
        finally:
            store.close()
        # equal but for the store's own markers (`_`-prefixed: how the original held it)
        assert [{k: v for k, v in m.items() if not k.startswith("_")} for m in again] == session.history
    assert all_problems(agent_dir) == []


def test_the_index_follows_what_the_original_appends_and_rewrites(agent_dir):
    store = SessionStore.for_agent(agent_dir)
    try:
        side = store.side
        before = side.execute("SELECT rowid, text FROM search WHERE row_id = 'tui' ORDER BY pos").fetchall()
        raw = sqlite3.connect(agent_dir / "sessions.db", isolation_level=None)
        grown = [
            *up.TUI_HISTORY,
            {
                "content": {"content": "a cron main job asked about zucchini", "type": "text"},
                "role": "user",
                "timestamp": 1777900000000,
            },
        ]
        raw.execute("UPDATE sessions SET history = ? WHERE id = 'tui'", (up.dumps(grown),))
        assert store.query("zucchini", mode="raw")[1] == 1
        after = side.execute("SELECT rowid, text FROM search WHERE row_id = 'tui' ORDER BY pos").fetchall()
        assert after[: len(before)] == before  # only the new message was indexed
        assert {s["id"]: s for s in store.list_sessions(limit=30)}["tui"]["messageCount"] == 3
        rewritten = [{**grown[0], "content": {"content": "What is on the pumpkin list?", "type": "text"}}, *grown[1:]]
        raw.execute("UPDATE sessions SET history = ? WHERE id = 'tui'", (up.dumps(rewritten),))
        raw.close()
        assert store.query("heartbeat list", mode="raw")[1] == 0  # a rewrite is indexed whole again
        assert store.query("pumpkin", mode="raw")[1] == 1 and store.query("zucchini", mode="raw")[1] == 1
    finally:
        store.close()
