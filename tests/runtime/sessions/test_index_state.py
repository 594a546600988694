"""The token of sessions.db's content the side index was last complete for (dbstate.py): a load that finds the
file as the index left it looks at no row; any other write, by anyone, while cireil was away or open, is seen."""

from __future__ import annotations

import contextlib
import random
import sqlite3
from pathlib import Path

import pytest
from test_scale_index import history, make_db, save

from cireil.runtime.sessions import SessionStore, dbstate, headers
from cireil.runtime.sessions.indexbuild import ActivitySweep
from cireil.runtime.sessions.messages import user_message
from cireil.runtime.sessions.sidestore import SIDE_FILE


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    rng = random.Random(7)
    make_db(tmp_path, {"internal:x": history(rng, 3), "internal:y": history(rng, 3)})
    SessionStore.for_agent(tmp_path).close()  # indexed whole once; the close keeps the token
    return tmp_path


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each look at every row's header (the `quick` flag of each), counted."""
    seen: list[bool] = []
    real = headers.fingerprints

    def counted(db, columns, *, quick=False):
        seen.append(quick)
        return real(db, columns, quick=quick)

    monkeypatch.setattr(headers, "fingerprints", counted)
    return seen


def ids(store: SessionStore) -> set[str]:
    return {s["id"] for s in store.list_sessions(limit=50)}


def token_kept(directory: Path) -> str | None:
    with contextlib.closing(sqlite3.connect(directory / SIDE_FILE)) as side:
        row = side.execute("SELECT token FROM index_state").fetchone()
    return row[0] if row else None


def test_a_load_finding_the_file_as_the_index_left_it_looks_at_no_row(agent_dir, scans):
    for _ in range(2):
        store = SessionStore.for_agent(agent_dir)
        try:
            assert ids(store) == {"internal:x", "internal:y"}
            assert store.query("garden", mode="raw")[1] > 0
        finally:
            store.close()
    assert scans == []
    assert token_kept(agent_dir) == dbstate.content_token(agent_dir / "sessions.db")


def test_its_own_writes_keep_the_token(agent_dir, scans):
    store = SessionStore.for_agent(agent_dir)
    held = sqlite3.connect(agent_dir / "sessions.db")  # the WAL stays: the token names its frames
    try:
        session = store.open_session("notebook:mine")
        session.history.append(user_message("quince jam"))
        store.commit(session, session.history[-1:])
        assert dbstate.has_frames(token_kept(agent_dir))
        assert token_kept(agent_dir) == dbstate.content_token(agent_dir / "sessions.db")
    finally:
        store.close()
    again = SessionStore.for_agent(agent_dir)
    try:
        assert "notebook:mine" in ids(again) and again.query("quince", mode="raw")[1] == 1
    finally:
        again.close()
        held.close()
    assert scans == []


def _edit(path: Path) -> None:
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("UPDATE sessions SET opened_files = '[\"/a.md\", 7' WHERE id = 'internal:y'")
    raw.close()


def _copy_over(path: Path) -> None:
    """Another database's bytes copied over the file (a restore): same inode, and as many bytes."""
    other = path.parent / "other"
    rng = random.Random(8)
    make_db(other, {"internal:x": history(rng, 3), "internal:z": history(rng, 3)})
    with contextlib.closing(sqlite3.connect(other / "sessions.db")) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert (other / "sessions.db").stat().st_size == path.stat().st_size
    with path.open("r+b") as f:
        f.write((other / "sessions.db").read_bytes())


@pytest.mark.parametrize("held_open", [False, True], ids=["all-closed", "wal-kept-by-another"])
@pytest.mark.parametrize("change", ["edit", "new-row", "delete"])
def test_any_write_while_cireil_was_away_is_seen_at_load(agent_dir, change, held_open):
    path = agent_dir / "sessions.db"
    held = sqlite3.connect(path) if held_open else None  # the other process's connection: its WAL stays
    if held is not None:
        held.execute("SELECT count(*) FROM sessions").fetchone()
    try:
        if change == "edit":
            _edit(path)
        elif change == "new-row":
            save(path, "internal:new", history(random.Random(9), 2))
        else:
            with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as raw:
                raw.execute("DELETE FROM sessions WHERE id = 'internal:x'")
        store = SessionStore.for_agent(agent_dir)
        try:
            listed = ids(store)
            if change == "edit":
                assert "opened_files" in (store.session_error("internal:y") or "")
            elif change == "new-row":
                assert "internal:new" in listed
            else:
                assert listed == {"internal:y"}
        finally:
            store.close()
    finally:
        if held is not None:
            held.close()


def test_a_copy_over_the_file_is_seen_at_load(agent_dir):
    _copy_over(agent_dir / "sessions.db")
    store = SessionStore.for_agent(agent_dir)
    try:
        assert ids(store) == {"internal:x", "internal:z"}
    finally:
        store.close()


def test_a_write_while_cireil_is_open_is_seen_at_the_next_load(agent_dir):
    """Another process wrote, and cireil closed without looking again: the close keeps no token of the content
    with that write."""
    path = agent_dir / "sessions.db"
    store = SessionStore.for_agent(agent_dir)
    held = sqlite3.connect(path)
    try:
        save(path, "internal:new", history(random.Random(10), 2))
        store.close()
        assert token_kept(agent_dir) != dbstate.content_token(path)  # the one from before that write stays
        again = SessionStore.for_agent(agent_dir)
        try:
            assert "internal:new" in ids(again)
        finally:
            again.close()
    finally:
        held.close()


def test_after_a_foreign_write_the_token_waits_for_the_sweep(agent_dir, scans):
    """A foreign write is looked at by the next query, and its last_activity by the sweep after it: the index is
    complete again, and says so, only once the sweep is done."""
    path = agent_dir / "sessions.db"
    store = SessionStore.for_agent(agent_dir)
    held = sqlite3.connect(path)
    try:
        save(path, "internal:y", history(random.Random(11), 4), activity="2026-06-01T00:00:00.000Z")
        assert "internal:y" in ids(store)
        assert store.wait_for_index(30)
        assert token_kept(agent_dir) == dbstate.content_token(path)
        store.close()
        scans.clear()
        again = SessionStore.for_agent(agent_dir)
        try:
            assert scans == []
            assert again.list_sessions(limit=1)[0]["lastActivity"] == "2026-06-01T00:00:00.000Z"
        finally:
            again.close()
    finally:
        held.close()


# -- the token itself ---------------------------------------------------------------------------------


def test_the_token_moves_with_every_commit_and_not_with_reads(tmp_path):
    path = make_db(tmp_path, {"internal:x": history(random.Random(12), 1)})
    reader = sqlite3.connect(path)
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        reader.execute("SELECT count(*) FROM sessions").fetchone()
        seen = {dbstate.content_token(path)}
        for n in range(5):
            writer.execute("UPDATE sessions SET history_cursor = ? WHERE id = 'internal:x'", (n + 1,))
            token = dbstate.content_token(path)
            reader.execute("SELECT * FROM sessions").fetchall()
            assert dbstate.content_token(path) == token
            seen.add(token)
        assert None not in seen and len(seen) == 6
    finally:
        reader.close()
        writer.close()


def test_an_empty_wal_is_no_wal(tmp_path):
    path = make_db(tmp_path, {"internal:x": history(random.Random(13), 1)})
    assert not Path(f"{path}-wal").exists()
    closed = dbstate.content_token(path)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("SELECT count(*) FROM sessions").fetchone()
        assert Path(f"{path}-wal").exists()
        assert dbstate.content_token(path) == closed and not dbstate.has_frames(closed)


@pytest.mark.parametrize(
    "shm",
    [b"", b"\x00" * 10, b"\xff" * 136, None],
    ids=["empty", "short", "garbage", "copies-differ"],
)
def test_a_wal_index_it_cannot_read_gives_no_token(tmp_path, shm):
    path = make_db(tmp_path, {"internal:x": history(random.Random(14), 1)})
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("UPDATE sessions SET history_cursor = 3")  # a frame in the WAL
        assert dbstate.has_frames(dbstate.content_token(path))
        saved = Path(f"{path}-shm").read_bytes()
        if shm is None:
            shm = saved[:48] + bytes(48) + saved[96:136]
        Path(f"{path}-shm").write_bytes(shm)
        assert dbstate.content_token(path) is None
    finally:
        Path(f"{path}-shm").write_bytes(saved)
        db.close()


def test_a_close_before_the_sweep_keeps_the_token_from_before(agent_dir, monkeypatch):
    """What only the sweep sees (a new last_activity of the same length, the history as it was: a failed turn of
    the original) is still looked for at the next load when cireil closed before sweeping."""
    path = agent_dir / "sessions.db"

    def activity(value: str) -> None:
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as raw:
            raw.execute("UPDATE sessions SET last_activity = ? WHERE id = 'internal:y'", (value,))

    activity("2026-06-01T00:00:00.000Z")
    SessionStore.for_agent(agent_dir).close()
    monkeypatch.setattr(ActivitySweep, "DELAY", 60.0)  # asked for, never run before the close
    store = SessionStore.for_agent(agent_dir)
    try:
        activity("2026-07-01T00:00:00.000Z")
        assert ids(store) == {"internal:x", "internal:y"}  # the write is looked at: no header moved
    finally:
        store.close()
    monkeypatch.undo()
    again = SessionStore.for_agent(agent_dir)
    try:
        assert again.wait_for_index(30)
        assert again.list_sessions(limit=1)[0]["lastActivity"] == "2026-07-01T00:00:00.000Z"
    finally:
        again.close()
