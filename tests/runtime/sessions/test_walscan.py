"""Which rows were written since a content token, read from the WAL (walscan.py): every row written is named,
anything it cannot be sure of gives None, and a store that looks only at those rows keeps an index equal to
one that looked at every row."""

from __future__ import annotations

import contextlib
import json
import random
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_scale_index import history, make_db, save

import upstream_db as up
from cireil.runtime.sessions import SessionStore, dbstate, headers, indexbuild, walscan


def changed_rowids(db: Path, since: str | None, now: str | None) -> set[int] | None:
    """The rowids walscan names as written between two content tokens, or None when it cannot tell."""
    found = walscan.changes(db, since, now)
    return None if found is None else found.rowids


def rowid_of(path: Path, row_id: str) -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT rowid FROM sessions WHERE id = ?", (row_id,)).fetchone()[0]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    rng = random.Random(3)
    path = make_db(tmp_path, {f"internal:r{n}": history(rng, 1 + n % 7, size=8 + 40 * (n % 3)) for n in range(30)})
    return path


@pytest.fixture
def held(db: Path):
    """Another process's connection kept open: the WAL stays between writes, as with a running original."""
    with contextlib.closing(sqlite3.connect(db)) as other:
        other.execute("SELECT count(*) FROM sessions").fetchall()  # opened, and no read left running
        yield other


def test_the_leaf_pages_of_a_file_name_every_row(db):
    with contextlib.closing(sqlite3.connect(db)) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = raw.execute("PRAGMA page_size").fetchone()[0]
        rowids = {r for (r,) in raw.execute("SELECT rowid FROM sessions")}
    data = db.read_bytes()
    found = set()
    for number in range(1, len(data) // page + 1):
        found.update(walscan.leaf_rowids(data[(number - 1) * page : number * page], number))
    assert rowids <= found


@pytest.mark.parametrize("change", ["append", "shrink", "other-column", "insert"])
def test_a_write_names_its_row(db, held, change):
    since = dbstate.content_token(db)
    if change == "insert":
        save(db, "internal:new", history(random.Random(4), 2))
        target = "internal:new"
    else:
        target = "internal:r7"
        with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as raw:
            if change == "append":
                raw.execute(
                    "UPDATE sessions SET history = substr(history, 1, length(history) - 1) || ',{}]' WHERE id = ?",
                    (target,),
                )
            elif change == "shrink":
                raw.execute("UPDATE sessions SET history = '[]' WHERE id = ?", (target,))
            else:
                raw.execute("UPDATE sessions SET opened_files = '[\"/a.md\"]' WHERE id = ?", (target,))
    found = changed_rowids(db, since, dbstate.content_token(db))
    assert found is not None and rowid_of(db, target) in found
    assert len(found) < 30  # the pages written, not the file


def test_nothing_written_names_no_row(db, held):
    token = dbstate.content_token(db)
    assert changed_rowids(db, token, token) == set()


def test_two_restarts_since_give_none(db, held):
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as raw:
        _big(raw, "internal:r2", 100)
        since = dbstate.content_token(db)
        for n in range(2):
            raw.execute("PRAGMA wal_checkpoint")
            raw.execute("UPDATE sessions SET history_cursor = ? WHERE id = 'internal:r3'", (n + 7,))
    assert changed_rowids(db, since, dbstate.content_token(db)) is None


def test_a_restart_whose_frames_reach_past_since_gives_none(db, held):
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as raw:
        raw.execute("UPDATE sessions SET history_cursor = 1 WHERE id = 'internal:r1'")
        since = dbstate.content_token(db)
        raw.execute("PRAGMA wal_checkpoint")
        raw.execute("UPDATE sessions SET history_cursor = 2 WHERE id = 'internal:r2'")  # starts the WAL again
    now = dbstate.content_token(db)
    assert dbstate.parse(now).salts != dbstate.parse(since).salts
    assert changed_rowids(db, since, now) is None


def _big(raw: sqlite3.Connection, row_id: str, kilobytes: int) -> None:
    raw.execute("UPDATE sessions SET history = ? WHERE id = ?", (up.dumps([{"x": "y" * 1024 * kilobytes}]), row_id))


def test_after_one_restart_the_frames_the_generation_before_left_are_read(db, held):
    """A write after the last look, a checkpoint, and a write that started the WAL again: the first write's
    frames still lie past the new generation's, up to a frame of an older one."""
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as raw:
        _big(raw, "internal:r1", 400)  # a long first generation: older frames lie past what follows
        raw.execute("PRAGMA wal_checkpoint")
        _big(raw, "internal:r2", 200)  # starts a second generation, shorter
        since = dbstate.content_token(db)
        raw.execute("UPDATE sessions SET history_cursor = 5 WHERE id = 'internal:r3'")
        raw.execute("PRAGMA wal_checkpoint")
        raw.execute("UPDATE sessions SET history_cursor = 6 WHERE id = 'internal:r28'")  # a third generation
    now = dbstate.content_token(db)
    old, new = dbstate.parse(since), dbstate.parse(now)
    assert walscan._one_restart(old.salts, new.salts)
    found = changed_rowids(db, since, now)
    assert found is not None and {rowid_of(db, "internal:r3"), rowid_of(db, "internal:r28")} <= found
    third = walscan._Commits(None, new.page_size)  # the third generation's own frames: not r3, the one before's
    with Path(f"{db}-wal").open("rb") as wal:
        walscan._frames(wal.fileno(), 1, new.frames, new.salts, new.page_size, third)
    assert rowid_of(db, "internal:r3") not in third.found.rowids


def test_after_one_restart_the_frames_up_to_the_end_of_the_file_are_read(db, held):
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as raw:
        _big(raw, "internal:r2", 100)  # the first generation: nothing older lies past it
        since = dbstate.content_token(db)
        raw.execute("UPDATE sessions SET history_cursor = 5 WHERE id = 'internal:r3'")
        raw.execute("PRAGMA wal_checkpoint")
        raw.execute("UPDATE sessions SET history_cursor = 6 WHERE id = 'internal:r28'")
    found = changed_rowids(db, since, dbstate.content_token(db))
    assert found is not None and {rowid_of(db, "internal:r3"), rowid_of(db, "internal:r28")} <= found


@pytest.mark.parametrize("cut", ["truncate-checkpoint", "journal-size-limit"])
def test_a_wal_cut_since_gives_none(db, held, cut):
    """Cut, the WAL may have lost frames of the generation before the restart that followed `since`."""
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as raw:
        _big(raw, "internal:r2", 100)
        since = dbstate.content_token(db)
        raw.execute("UPDATE sessions SET history_cursor = 5 WHERE id = 'internal:r3'")
        if cut == "truncate-checkpoint":
            assert raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
        else:
            raw.execute("PRAGMA journal_size_limit = 0")
            raw.execute("PRAGMA wal_checkpoint")
        raw.execute("UPDATE sessions SET history_cursor = 6 WHERE id = 'internal:r28'")
    now = dbstate.content_token(db)
    assert walscan._one_restart(dbstate.parse(since).salts, dbstate.parse(now).salts)
    assert Path(f"{db}-wal").stat().st_size < dbstate.parse(since).wal_size
    assert changed_rowids(db, since, now) is None


def test_a_file_changed_outside_the_wal_gives_none(db):
    since = dbstate.content_token(db)  # every connection closed: no WAL
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as raw:
        raw.execute("UPDATE sessions SET history_cursor = 1 WHERE id = 'internal:r1'")
    # its close checkpointed the frame into the file and deleted the WAL
    assert changed_rowids(db, since, dbstate.content_token(db)) is None


@pytest.mark.parametrize("damage", ["truncated", "garbage", "salts", "magic", "cells"])
def test_a_wal_it_cannot_trust_gives_none(db, held, damage):
    """Frames whose headers do not hold (a short file, other salts, no WAL magic) or whose leaf pages do not parse
    give None; pages of garbage behind good headers (what SQLite's own checksums would refuse) give some rows,
    and never an error."""
    since = dbstate.content_token(db)
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as raw:
        raw.execute("UPDATE sessions SET history = '[]' WHERE id = 'internal:r7'")
    now = dbstate.content_token(db)
    wal = Path(f"{db}-wal")
    saved = wal.read_bytes()
    page = dbstate.parse(now).page_size
    frames = dbstate.parse(now).frames
    try:
        data = bytearray(saved)
        first = 32 + dbstate.parse(since).frames * (24 + page)
        if damage == "truncated":
            data = data[: first + 10]
        elif damage == "garbage":
            data[first + 24 : 32 + frames * (24 + page)] = random.Random(5).randbytes(
                32 + frames * (24 + page) - first - 24
            )
        elif damage == "salts":
            data[first + 8] ^= 0xFF
        elif damage == "magic":
            data[0] ^= 0xFF
        else:  # every page written claims to be a table leaf with more cells than fit
            for at in range(first, 32 + frames * (24 + page), 24 + page):
                data[at + 24 : at + 24 + 8] = bytes([0x0D, 0, 0, 0xFF, 0xFF, 0, 0, 0])
        wal.write_bytes(bytes(data))
        found = changed_rowids(db, since, now)
        assert found is None if damage != "garbage" else isinstance(found, set | None)
    finally:
        wal.write_bytes(saved)


def test_more_than_it_reads_at_one_look_gives_none(db, held, monkeypatch):
    since = dbstate.content_token(db)
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as raw:
        raw.execute("UPDATE sessions SET history = '[]' WHERE id = 'internal:r7'")
    monkeypatch.setattr(walscan, "MAX_BYTES", 4096)
    assert changed_rowids(db, since, dbstate.content_token(db)) is None


def _time(second: int) -> str:
    return f"2026-03-0{1 + second // 60 % 9}T10:00:{second % 60:02d}.000Z"  # always 24 characters


def test_a_row_written_in_place_at_its_size_leaves_the_changes_not_whole(db, held):
    """The original's save of a failed Discord turn: the same history, a new time of the same length. SQLite
    then overwrites the overflow page holding the time and leaves the row's leaf page as it was, so the rowids
    may not name the row: `whole` must then be False (the activity sweep reads every row)."""
    row_id = "internal:r29"  # of the biggest rows: its time lies on an overflow page
    messages = json.loads(held.execute("SELECT history FROM sessions WHERE id = ?", (row_id,)).fetchone()[0])
    save(db, row_id, messages, activity=_time(1))
    since = dbstate.content_token(db)
    save(db, row_id, messages, activity=_time(2))
    found = walscan.changes(db, since, dbstate.content_token(db))
    assert found is not None and (not found.whole or rowid_of(db, row_id) in found.rowids)
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as raw:
        since = dbstate.content_token(db)
        raw.execute("UPDATE sessions SET last_activity = ? WHERE id = ?", (_time(3), row_id))
    found = walscan.changes(db, since, dbstate.content_token(db))
    assert found is not None and (not found.whole or rowid_of(db, row_id) in found.rowids)


def test_saves_that_grow_rows_and_deletes_are_whole(db, held):
    """The original's usual save (a history grown) writes the row's cell and a new overflow chain in one commit;
    a delete frees the chain onto the freelist: every page they write is accounted for."""
    since = dbstate.content_token(db)
    messages = json.loads(held.execute("SELECT history FROM sessions WHERE id = 'internal:r29'").fetchone()[0])
    save(db, "internal:r29", messages + history(random.Random(6), 2, size=60), activity=_time(4))
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as raw:
        raw.execute("DELETE FROM sessions WHERE id = 'internal:r26'")
    found = walscan.changes(db, since, dbstate.content_token(db))
    assert found is not None and found.whole and rowid_of(db, "internal:r29") in found.rowids


def test_after_the_originals_usual_save_the_activity_sweep_reads_the_rows_written_alone(db, held, monkeypatch):
    """The sweep for a time the row fingerprints cannot see reads every row's (at 1.1 GB, every overflow page:
    0.4 s) only when the WAL cannot say which rows hold a new one."""
    swept: list[set[int] | None] = []
    real = indexbuild._activity
    monkeypatch.setattr(indexbuild, "_activity", lambda *args: swept.append(args[2]) or real(*args))
    store = SessionStore.for_agent(db.parent)
    try:
        row = rowid_of(db, "internal:r29")
        messages = json.loads(held.execute("SELECT history FROM sessions WHERE id = 'internal:r29'").fetchone()[0])
        shown = "SELECT last_activity FROM indexed_sessions WHERE session_id = 'internal:r29'"
        save(db, "internal:r29", messages + history(random.Random(7), 1), activity=_time(5))
        store.refresh_index()
        assert store.wait_for_index(30) and store.side.execute(shown).fetchone()[0] == _time(5)
        assert swept[-1] is not None and row in swept[-1] and len(swept[-1]) < 30  # of the 30 rows
        save(db, "internal:r29", messages, activity=_time(6))  # shorter history: the cell is written anew
        save(db, "internal:r29", messages, activity=_time(7))  # the same size: in place
        store.refresh_index()
        assert store.wait_for_index(30) and store.side.execute(shown).fetchone()[0] == _time(7)
        assert swept[-1] is None or row in swept[-1]
    finally:
        store.close()


# -- a store that looks only at those rows ----------------------------------------------------------


KINDS = ["append", "rewrite", "other", "insert", "delete", "checkpoint", "truncate", "refresh", "reload"]
KINDS += ["time", "time-save"]  # a time written alone: in place on an overflow page of the bigger rows
OPS = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 11)), min_size=1, max_size=25)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
@example(ops=[("other", 0), ("checkpoint", 0), ("refresh", 0), ("reload", 0)])  # a quick look, then a load
@example(ops=[("refresh", 0), ("time-save", 1), ("refresh", 0), ("time", 3), ("refresh", 0)])  # times in place
def test_the_index_follows_every_write_as_a_scan_of_every_row_would(tmp_path_factory, ops):
    """Random writes of another process (the original's saves, hand edits, new and deleted rows, times written in
    place, checkpoints, WAL restarts and cuts), looked at by a store between them: after each look every indexed
    fingerprint and time is the row's own, and no row is missing or left over."""
    directory = tmp_path_factory.mktemp("walscan")
    rng = random.Random(len(ops))
    # every other row overflows its leaf page: a time written in place then lies on an overflow page
    path = make_db(directory, {f"internal:r{n}": history(rng, 1 + n % 4, size=8 + 150 * (n % 2)) for n in range(8)})
    store = SessionStore.for_agent(directory)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        for op, n in ops:
            row_id = f"internal:r{n}"
            if op == "append":
                old = other.execute("SELECT history FROM sessions WHERE id = ?", (row_id,)).fetchone()
                messages = (json.loads(old[0]) if old else []) + history(rng, 1)
                save(path, row_id, messages)
            elif op == "rewrite":
                save(path, row_id, history(rng, 1 + n % 3))
            elif op == "other":
                other.execute(
                    "UPDATE sessions SET opened_files = ? WHERE id = ?", ("[" + '"/a",' * n + '"/b"]', row_id)
                )
            elif op == "insert":
                save(path, f"internal:new{n}", history(rng, 1))
            elif op == "time":  # a hand edit of the time alone
                other.execute("UPDATE sessions SET last_activity = ? WHERE id = ?", (_time(rng.randrange(500)), row_id))
            elif op == "time-save":  # a failed Discord turn's save: the history as it was, a new time
                old = other.execute("SELECT history FROM sessions WHERE id = ?", (row_id,)).fetchone()
                if old:
                    save(path, row_id, json.loads(old[0]), activity=_time(rng.randrange(500)))
            elif op == "delete":
                other.execute("DELETE FROM sessions WHERE id = ?", (row_id,))
            elif op == "checkpoint":
                other.execute("PRAGMA wal_checkpoint")
            elif op == "truncate":  # not the original's, but a tool's: the WAL cut to nothing
                other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            elif op == "refresh":
                store.refresh_index()
                _check(store, whole=False)
            else:
                store.close()
                store = SessionStore.for_agent(directory)
                _check(store, whole=True)
        store.refresh_index()
        _check(store, whole=False)
    finally:
        other.close()
        store.close()


def _check(store: SessionStore, *, whole: bool) -> None:
    """After a load every column's length is the indexed one; after a look following another process's write, at
    least the history's (a hand edit of another column alone is left to the next load: headers.py)."""
    assert store.wait_for_index(30)
    now = {rid: fp for rid, (fp, _) in headers.fingerprints(store._db, store._columns, quick=not whole).items()}
    indexed = dict(store.side.execute("SELECT session_id, fingerprint FROM indexed_sessions").fetchall())
    assert set(indexed) == set(now)
    for rid, fp in now.items():
        assert headers.matches(indexed[rid].removeprefix("?"), fp), rid
    # and every time list-sessions shows is the row's own (the activity sweep's part)
    times = dict(store._db.execute("SELECT id, last_activity FROM sessions WHERE typeof(last_activity) = 'text'"))
    shown = dict(store.side.execute("SELECT session_id, last_activity FROM indexed_sessions"))
    assert {rid: shown[rid] for rid in times} == times
