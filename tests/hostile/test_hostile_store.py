"""A hand-edited, full or read-only sessions.db: one bad row is one unreadable session, a failed write says why.

Rows whose columns hold bytes that are not UTF-8 (or text that is not JSON) are reported by session id while
every other session is listed, opened, searched and written; a full disk (a real tmpfs as root, SQLite's own
page limit otherwise) and a read-only file or folder (a read-only bind mount as root, file modes otherwise)
fail the write with one line naming the file, and leave the store readable and whole.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cireil
from cireil.runtime.sessions import SessionStore
from cireil.runtime.sessions.errors import SessionError
from cireil.runtime.sessions.messages import user_message
from conftest import make_agent

ROOT = os.geteuid() == 0


def say(store: SessionStore, session_id: str, text: str) -> None:
    session = store.open_session(session_id)
    message = user_message(text)
    session.history.append(message)
    store.commit(session, [message])


def three_sessions(directory: Path) -> Path:
    store = SessionStore.for_agent(directory)
    try:
        say(store, "notebook:a", "hello apples")
        say(store, "notebook:b", "hello bananas")
        say(store, "notebook:c", "hello cherries")
    finally:
        store.close()
    return directory / "sessions.db"


def edit(db_path: Path, sql: str) -> None:
    db = sqlite3.connect(db_path)
    try:
        db.execute(sql)
        db.commit()
    finally:
        db.close()


BAD_ROWS = [
    ("history", "CAST(X'5B22FF225D' AS TEXT)", "history is not valid UTF-8"),
    ("meta", "CAST(X'7B22FF227D' AS TEXT)", "meta is not valid UTF-8"),
    ("last_activity", "CAST(X'FF' AS TEXT)", "last_activity is not valid UTF-8"),
    ("active_file_sections", "CAST(X'7BFF7D' AS TEXT)", "active_file_sections is not valid UTF-8"),
    ("history", "'[{\"role\": '", "history is not valid JSON"),
    ("meta", "'{'", "meta is not a JSON object"),
]


@pytest.mark.parametrize(("column", "value", "why"), BAD_ROWS, ids=[f"{c}-{w.split()[-1]}" for c, _, w in BAD_ROWS])
def test_one_bad_row_is_one_unreadable_session_and_the_rest_works(tmp_path, column, value, why):
    db_path = three_sessions(tmp_path)
    edit(db_path, f"UPDATE sessions SET {column} = {value} WHERE id = 'internal:notebook:b'")
    store = SessionStore.for_agent(tmp_path)  # raised "cannot be read: Could not decode to UTF-8" for all
    try:
        notes = store.load_notes()
        assert len(notes) == 1 and notes[0].startswith(f"session notebook:b: {why}"), notes
        assert "repair or delete this row" in notes[0] and "\n" not in notes[0]
        listed = {s["id"]: s["preview"] for s in store.list_sessions()}
        assert listed["notebook:a"] == "hello apples" and listed["notebook:c"] == "hello cherries"
        assert listed["notebook:b"].startswith("[unreadable: ")
        assert store.get("notebook:a").history[-1]["content"][0]["text"] == "hello apples"
        with pytest.raises(SessionError, match=f"session notebook:b: {why}"):
            store.get("notebook:b")
        matches, total = store.query("hello*")
        assert total == 2 and {m["sessionId"] for m in matches} == {"notebook:a", "notebook:c"}
        say(store, "notebook:c", "still writable")
        assert store.get("notebook:c").history[-1]["content"][0]["text"] == "still writable"
    finally:
        store.close()


def test_a_row_whose_id_is_not_utf8_is_listed_unreadable(tmp_path):
    db_path = three_sessions(tmp_path)
    edit(db_path, "UPDATE sessions SET id = CAST(X'696E7465726E616CFF' AS TEXT) WHERE id = 'internal:notebook:b'")
    store = SessionStore.for_agent(tmp_path)
    try:
        notes = store.load_notes()
        assert len(notes) == 1 and "id is not valid UTF-8" in notes[0], notes
        assert {s["id"] for s in store.list_sessions()} >= {"notebook:a", "notebook:c"}
        assert store.get("notebook:a") is not None
    finally:
        store.close()


def test_a_row_made_unreadable_while_cireil_runs_is_named_at_the_next_look(tmp_path):
    """The look after another process wrote reads the history's length alone and then each changed row whole,
    by its id: a row whose new id is not UTF-8 cannot be named that way, and is taken as it was scanned."""
    db_path = three_sessions(tmp_path)
    store = SessionStore.for_agent(tmp_path)
    try:
        assert store.load_notes() == []
        edit(db_path, "UPDATE sessions SET id = CAST(X'696E7465726E616CFF' AS TEXT) WHERE id = 'internal:notebook:b'")
        listed = {s["id"] for s in store.list_sessions()}
        assert {"notebook:a", "notebook:c"} <= listed and "notebook:b" not in listed
        assert any("id is not valid UTF-8" in note for note in store.unreadable())
    finally:
        store.close()


def test_a_bad_row_does_not_stop_the_agent_or_its_session_tools(tmp_path):
    agent_dir = make_agent(tmp_path, "list-sessions = true\nread-session = true\nquery-sessions = true\n")
    db_path = three_sessions(agent_dir)
    edit(db_path, "UPDATE sessions SET history = CAST(X'5B22FF225D' AS TEXT) WHERE id = 'internal:notebook:b'")
    agent = cireil.load(agent_dir)
    try:
        warnings = [str(w) for w in agent.warnings if w.file == "sessions.db"]
        assert any("session notebook:b: history is not valid UTF-8" in w for w in warnings), warnings
        listed = agent.call("list-sessions").data["sessions"]
        assert {s["id"] for s in listed} >= {"notebook:a", "notebook:b", "notebook:c"}
        assert agent.call("read-session", id="notebook:a").success
        broken = agent.call("read-session", id="notebook:b")
        assert not broken.success and "not valid UTF-8" in broken.data["error"]
        assert agent.call("query-sessions", query="*cherries*").data["totalMatches"] == 1
    finally:
        agent.close()


def test_a_hand_edited_job_row_that_is_not_utf8_is_skipped(tmp_path):
    store = SessionStore.for_agent(tmp_path)
    try:
        store.upsert_job({"id": "good", "prompt": "p", "schedule": {"at": "2030-01-01T00:00:00Z"}})
        store.upsert_job({"id": "bad", "prompt": "p", "schedule": {"at": "2030-01-01T00:00:00Z"}})
    finally:
        store.close()
    edit(tmp_path / "sessions.db", "UPDATE cron_jobs SET config = CAST(X'7B22FF227D' AS TEXT) WHERE job_id = 'bad'")
    store = SessionStore.for_agent(tmp_path)
    try:
        assert [j["id"] for j in store.jobs()] == ["good"]
    finally:
        store.close()


# -- a full disk --------------------------------------------------------------------------------------
def test_a_full_database_says_so_names_the_file_and_stays_usable(tmp_path):
    """SQLite's page limit gives SQLITE_FULL exactly as a full disk does (this runs as any user)."""
    store = SessionStore.for_agent(tmp_path)
    try:
        say(store, "notebook:a", "first")
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages + 2}")
        session = store.open_session("notebook:a")
        big = user_message("x" * 200_000)
        session.history.append(big)
        with pytest.raises(SessionError) as info:
            store.commit(session, [big])  # raised "cannot rollback - no transaction is active"
        message = str(info.value)
        assert "disk is full" in message and str(tmp_path / "sessions.db") in message, message
        assert "\n" not in message and "no transaction" not in message
        assert [m["content"][0]["text"] for m in store.get("notebook:a").history] == ["first"]  # nothing half-written
        assert store.list_sessions()[0]["id"] == "notebook:a"
        store._db.execute("PRAGMA max_page_count = 1073741823")  # space again: the same session saves
        store.commit(session, [big])
        assert len(store.get("notebook:a").history) == 2
        assert store._db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        store.close()


FILL = textwrap.dedent(
    """
    import json, sqlite3, sys
    from pathlib import Path
    from cireil.runtime.sessions import SessionStore
    from cireil.runtime.sessions.errors import SessionError
    from cireil.runtime.sessions.messages import user_message

    directory = Path(sys.argv[1])
    store = SessionStore.for_agent(directory)
    session = store.open_session("notebook:a")
    out = {"error": None}
    for i in range(400):
        message = user_message(f"message {i} " + "x" * 20000)
        session.history.append(message)
        try:
            store.commit(session, [message])
        except SessionError as exc:
            out["error"] = str(exc)
            session.history.pop()
            break
    out["stored"] = len(store.get("notebook:a").history)
    out["listed"] = [s["id"] for s in store.list_sessions()]
    store.close()
    check = sqlite3.connect(directory / "sessions.db")
    out["integrity"] = check.execute("PRAGMA integrity_check").fetchone()[0]
    print(json.dumps(out))
    """
)


@pytest.mark.skipif(not ROOT, reason="mounting a small tmpfs needs root (the page-limit test covers a user)")
def test_a_really_full_disk_is_a_clear_error_and_nothing_is_half_written(tmp_path):
    where = tmp_path / "small"
    where.mkdir()
    script = tmp_path / "fill.py"
    script.write_text(FILL)
    command = f"mount -t tmpfs -o size=700k tmpfs {where} && {sys.executable} {script} {where}"
    done = subprocess.run(["unshare", "-m", "sh", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["error"] is not None and "disk is full" in out["error"], out
    assert str(where / "sessions.db") in out["error"]
    assert out["stored"] >= 1 and out["listed"] == ["notebook:a"] and out["integrity"] == "ok"


# -- read-only ----------------------------------------------------------------------------------------
READ = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from cireil.runtime.sessions import SessionStore
    from cireil.runtime.sessions.errors import SessionError
    from cireil.runtime.sessions.messages import user_message

    store = SessionStore.for_agent(Path(sys.argv[1]))
    out = {"notes": store.load_notes()}
    out["read"] = store.get("notebook:a").history[-1]["content"][0]["text"]
    out["listed"] = sorted(s["id"] for s in store.list_sessions())
    out["found"] = store.query("hello*")[1]
    errors = []
    for target in ("notebook:a", "notebook:new"):
        session = store.open_session(target)
        message = user_message("more")
        session.history.append(message)
        try:
            store.commit(session, [message])
            errors.append(None)
        except SessionError as exc:
            errors.append(str(exc))
    try:
        store.upsert_job({"id": "j", "schedule": {"at": "2030-01-01T00:00:00Z"}})
        errors.append(None)
    except SessionError as exc:
        errors.append(str(exc))
    out["errors"] = errors
    print(json.dumps(out))
    """
)


def run_read_only(tmp_path: Path, how: str) -> dict:
    agent = tmp_path / "agent"
    agent.mkdir()
    three_sessions(agent)
    script = tmp_path / "read.py"
    script.write_text(READ)
    target = agent / "sessions.db" if how == "file" else agent
    if ROOT:  # root writes through any file mode: a read-only bind mount is what refuses root
        mount = f"mount --bind {target} {target} && mount -o remount,bind,ro {target}"
        command = ["unshare", "-m", "sh", "-c", f"{mount} && {sys.executable} {script} {agent}"]
    else:
        os.chmod(target, 0o444 if how == "file" else 0o555)
        command = [sys.executable, str(script), str(agent)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    finally:
        os.chmod(target, 0o600 if how == "file" else 0o755)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("how", ["file", "folder"])
def test_a_read_only_store_is_read_and_a_write_names_the_file_and_what_to_do(tmp_path, how):
    out = run_read_only(tmp_path, how)
    db_path = str(tmp_path / "agent" / "sessions.db")
    assert any("read-only" in n and db_path in n for n in out["notes"]), out["notes"]
    assert out["read"] == "hello apples"
    assert out["listed"] == ["notebook:a", "notebook:b", "notebook:c"] and out["found"] == 3
    for error in out["errors"]:
        assert error is not None and db_path in error and "read-only" in error and "writable" in error, error
        assert "\n" not in error
