"""A session's compare-and-swap asks the WAL first (store.py, _unwritten_since): after another process wrote
rows on other leaf pages, neither the check before a turn nor the commit reads the session's history back (a
write to a row beside it on its leaf page names it too: the row is then read); after it wrote this row in any
way (a save that grows it, a time written in place at the row's size, a hand edit, a delete), the row is read
and the write refused."""

from __future__ import annotations

import contextlib
import json
import random
import sqlite3
from pathlib import Path

import pytest
from test_scale_index import history, make_db, save

from cireil.runtime.sessions import SessionStore
from cireil.runtime.sessions.messages import user_message
from cireil.runtime.sessions.store import SessionConflict

ROW = "internal:big"  # overflows its leaf page: a time written in place lies on an overflow page


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    rng = random.Random(11)
    rows = {f"internal:r{n}": history(rng, 2) for n in range(30)}  # several leaf pages: r0's is not ROW's
    rows[ROW] = history(rng, 12, size=200)
    make_db(tmp_path, rows)
    save(tmp_path / "sessions.db", ROW, rows[ROW], activity="2026-03-01T10:00:00.000Z")
    return tmp_path


@pytest.fixture
def other(agent: Path):
    """Another process's connection, kept open (the WAL stays, as with a running original)."""
    with contextlib.closing(sqlite3.connect(agent / "sessions.db", isolation_level=None)) as db:
        yield db


def reads_of_the_row(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real = store._raw_row

    def counted(db, row_id):
        read.append(row_id)
        return real(db, row_id)

    monkeypatch.setattr(store, "_raw_row", counted)
    return read


def add_turn(store: SessionStore, session, text: str) -> None:
    message = user_message(text)
    session.history.append(message)
    store.commit(session, [message])


def test_writes_to_other_rows_leave_the_history_unread(agent, other, monkeypatch):
    store = SessionStore.for_agent(agent)
    try:
        session = store.get(ROW)
        for n in range(3):
            old = json.loads(other.execute("SELECT history FROM sessions WHERE id = 'internal:r0'").fetchone()[0])
            save(agent / "sessions.db", "internal:r0", old + history(random.Random(n), 1))  # the original's save
            read = reads_of_the_row(store, monkeypatch)
            assert store.conflict_reason(session) is None
            add_turn(store, session, f"turn {n}")
            assert read == []  # neither the check nor the commit read the row back
            monkeypatch.undo()
        assert [m for m in store.get(ROW).history if m["role"] == "user"][-1]["content"][0]["text"] == "turn 2"
    finally:
        store.close()


@pytest.mark.parametrize("write", ["grown", "time-in-place", "hand-edit", "replaced", "deleted"])
def test_any_write_to_the_row_is_refused(agent, other, write):
    store = SessionStore.for_agent(agent)
    try:
        session = store.get(ROW)
        add_turn(store, session, "before")  # the token then comes from this store's own commit
        text = other.execute("SELECT history FROM sessions WHERE id = ?", (ROW,)).fetchone()[0]
        if write == "grown":
            save(agent / "sessions.db", ROW, json.loads(text) + history(random.Random(3), 1))
        elif write == "time-in-place":  # the same length: SQLite overwrites the overflow page holding it
            other.execute("UPDATE sessions SET last_activity = '2026-03-01T10:00:09.000Z' WHERE id = ?", (ROW,))
        elif write == "hand-edit":  # the same length, in the middle of the history
            at = len(text) // 2
            edited = text[:at] + ("x" if text[at] != "x" else "y") + text[at + 1 :]
            other.execute("UPDATE sessions SET history = ? WHERE id = ?", (edited, ROW))
        elif write == "replaced":  # deleted and made again: another rowid
            row = other.execute("SELECT * FROM sessions WHERE id = ?", (ROW,)).fetchone()
            other.execute("DELETE FROM sessions WHERE id = ?", (ROW,))
            other.execute(f"INSERT INTO sessions VALUES ({','.join('?' * len(row))})", row)
        else:
            other.execute("DELETE FROM sessions WHERE id = ?", (ROW,))
        reason = store.conflict_reason(session)
        if write == "replaced":
            assert reason is None  # the very row it was: nothing to refuse
            add_turn(store, session, "after")
        else:
            assert reason is not None and "changed in sessions.db" in reason
            with pytest.raises(SessionConflict):
                add_turn(store, session, "after")
    finally:
        store.close()
