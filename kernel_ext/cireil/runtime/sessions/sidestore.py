"""cireil's own SQLite file beside sessions.db: what cireil keeps that the original's format has no place for.

`<agent>/cireil-side.db` (upstream-formats §7: a file inside the agent directory with a name the original
never uses; never a directory under agents/, never a table or column in sessions.db). It holds
  - the query-sessions index (search rows + trigram FTS5) and list-sessions' per-session figures,
    derived from sessions.db and rebuilt from it when missing or stale (a per-row fingerprint read from the
    row's record header, headers.py; a big first build runs in the background, indexbuild.py);
  - where each user and assistant message lies in its row's history text, for read-session pages (pages.py);
  - per-message extras (reactions, usage, notice/media flags, ids a Discord history cannot hold),
    tied to a message position and that message's role, time and ids, so when the original rewrites
    the history they are dropped instead of attached to the wrong message;
  - per-session extras (when cireil created it, cireil's own meta, summaries the original cannot hold);
  - notebook attachments that are not images (the original keeps only Discord URLs for those).
It is general by design: later recorders (turns, saved calls) add their own tables here.
Losing the file loses only those extras; everything the original can express lives in sessions.db.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

SIDE_FILE = "cireil-side.db"
SIDE_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS indexed_sessions (
    session_id TEXT PRIMARY KEY,      -- the row id in sessions.db
    mem_id TEXT NOT NULL,             -- the id cireil shows (notebook:main for internal:notebook:main)
    fingerprint TEXT NOT NULL,        -- the row's header fingerprint when indexed (headers.py); '' unknown
    message_count INTEGER NOT NULL,
    preview TEXT NOT NULL,
    last_activity TEXT,
    last_ts REAL,
    error TEXT,                       -- why the row cannot be read, or NULL
    elements INTEGER NOT NULL DEFAULT 0,  -- history elements indexed
    prefix_len INTEGER NOT NULL DEFAULT 0,  -- length of the history text without its closing ]
    prefix_hash TEXT                  -- of that text's bytes (NULL: not taken): a history that only grew is
                                      -- indexed from where it was
);
CREATE INDEX IF NOT EXISTS indexed_by_time ON indexed_sessions (last_ts);
CREATE TABLE IF NOT EXISTS search (
    rowid INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,         -- memory id, as query-sessions reports it
    row_id TEXT NOT NULL,             -- sessions.db row id
    pos INTEGER NOT NULL,
    role TEXT NOT NULL,
    timestamp TEXT,
    ts REAL NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS search_by_row ON search (row_id, pos);
-- Trigrams of fold(text), without positions (detail=none): a prefilter only, every literal becomes
-- an AND of its trigrams and the real matcher checks each candidate.
CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(
    folded, content='', detail=none, tokenize='trigram case_sensitive 1'
);
-- merged 16 segments at a time, not 4: the first build of a big agent commits a segment per batch, and
-- merging them four by four took a fifth of its time (queries were no slower)
INSERT INTO search_fts (search_fts, rank) VALUES ('automerge', 16);
CREATE TABLE IF NOT EXISTS message_extras (
    session_id TEXT NOT NULL,         -- sessions.db row id
    pos INTEGER NOT NULL,             -- index in the stored history array
    fingerprint TEXT NOT NULL,        -- role|timestamp|id|call id of that element when written
    extras TEXT NOT NULL,
    PRIMARY KEY (session_id, pos)
);
CREATE TABLE IF NOT EXISTS session_extras (
    session_id TEXT PRIMARY KEY,      -- sessions.db row id
    created TEXT,
    own INTEGER NOT NULL DEFAULT 0,   -- 1: cireil created this row (writable while the original runs)
    meta TEXT NOT NULL DEFAULT '{}',  -- cireil's own session meta
    summaries TEXT NOT NULL DEFAULT '[]'  -- summaries naming ids the original's history cannot hold
);
CREATE TABLE IF NOT EXISTS attachments (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,         -- memory id
    message_id TEXT NOT NULL,
    filename TEXT NOT NULL,
    media_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS attachments_by_message ON attachments (session_id, message_id);
"""

# Added to version 1 files as they are opened (CREATE ... IF NOT EXISTS): what cireil knows of a running
# original, to tell which sessions it has in memory (store.py, SessionStore._in_memory_of).
_SHARING = """
CREATE TABLE IF NOT EXISTS original_holders (
    pid INTEGER NOT NULL,
    started INTEGER NOT NULL,         -- /proc/<pid>/stat start time: with the pid, one process
    first_seen REAL NOT NULL,         -- Unix time a cireil first saw it with sessions.db open
    PRIMARY KEY (pid, started)
);
CREATE TABLE IF NOT EXISTS row_births (
    session_id TEXT PRIMARY KEY,      -- a sessions.db row cireil created
    born REAL NOT NULL                -- Unix time just after the commit that created it
);
"""


# Added to version 1 files as they are opened: where each user and assistant message of a session lies in its
# row's history text, so that read-session decodes only the messages of a page (pages.py).
_PAGES = """
CREATE TABLE IF NOT EXISTS paged_sessions (
    session_id TEXT PRIMARY KEY,      -- sessions.db row id
    fingerprint TEXT NOT NULL,        -- the row's header fingerprint (headers.py) the layout was taken from
    elements INTEGER NOT NULL,        -- stored elements of every role
    char_end INTEGER NOT NULL,        -- where the last of them ends in the history text, in characters
    byte_end INTEGER NOT NULL         -- the same in UTF-8 bytes: messages appended later are counted on from here
);
CREATE TABLE IF NOT EXISTS pages (
    session_id TEXT NOT NULL,         -- sessions.db row id
    pos INTEGER NOT NULL,             -- index in the stored history array
    role TEXT NOT NULL,               -- user or assistant (no other role is ever a page's)
    ts REAL NOT NULL,                 -- its time, Unix seconds (0: none), for read-session's since
    byte_start INTEGER NOT NULL,      -- [start, end) of its JSON in the history value, in UTF-8 bytes
    byte_end INTEGER NOT NULL,
    PRIMARY KEY (session_id, pos)
) WITHOUT ROWID;
"""

# Added to version 1 files as they are opened: the content of sessions.db the index was last complete for
# (dbstate.py), so that a load that finds sessions.db as it was then looks at no row; and list-sessions' order
# as an index, so that a page of it reads that page's rows, not every session's.
_STATE = """
CREATE TABLE IF NOT EXISTS index_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    token TEXT NOT NULL               -- dbstate.content_token of sessions.db
);
CREATE INDEX IF NOT EXISTS indexed_by_shown_time ON indexed_sessions (COALESCE(last_ts, 0), mem_id);
"""
# what each of those scripts makes: run (all of it is IF NOT EXISTS) when one is missing
_ADDED = (
    (("original_holders", "row_births"), _SHARING),
    (("paged_sessions", "pages"), _PAGES),
    (("index_state", "indexed_by_shown_time"), _STATE),
)


def open_memory_side() -> sqlite3.Connection:
    """A side file in memory, for an agent folder cireil cannot write: the index is rebuilt at each load and
    the extras of this process are lost at its end (sessions.db itself is then read-only too)."""
    db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    db.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}{_SHARING}{_PAGES}{_STATE}PRAGMA user_version = {SIDE_VERSION};COMMIT;")
    return db


def open_side(agent_dir: Path) -> sqlite3.Connection:
    """Open (creating when missing) cireil's side file; a file of another version is rebuilt from scratch."""
    path = Path(agent_dir) / SIDE_FILE
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA mmap_size=268435456")
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version not in (0, SIDE_VERSION):  # derived data and extras of another cireil: start again
        db.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        return open_side(agent_dir)
    if version == 0:
        db.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {SIDE_VERSION};COMMIT;")
    present = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    for names, script in _ADDED:
        if not present.issuperset(names):
            db.executescript(f"BEGIN IMMEDIATE;{script}COMMIT;")
    return db
