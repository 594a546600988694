"""`<agent>/cireil-recordings.db`: recorded turns, their steps (model calls) and tool calls.

Messages, tool definitions and tool results are stored once by content (blake2b of their JSON, the
`blobs` table); a step keeps the request body with each message and tool replaced by its hash, so the
prefix a step shares with the one before costs a few bytes. `turn_blobs` says which turn uses which blob:
evicting a turn (oldest first, beyond the configured count or size) deletes the blobs no turn uses.

The file carries its format number. A file of format 1 (before step mode's reviews were kept) is
migrated in place, in one transaction; a file of any other format is refused with a message saying
what to do, never rewritten.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The lists of a request body stored item by item, each item once (a step stores what changed): chat
# completions and Messages API `messages`, Responses API (openai-codex) `input`, every kind's `tools`.
LISTS = ("messages", "input", "tools")
RECORDINGS_FILE = "cireil-recordings.db"
FORMAT = 2

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE blobs (hash TEXT PRIMARY KEY, json TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    started REAL NOT NULL,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    user_message TEXT,
    ended TEXT NOT NULL DEFAULT 'running',
    error TEXT,
    steps INTEGER NOT NULL DEFAULT 0,
    usage TEXT NOT NULL DEFAULT '{}',
    seconds REAL,
    origin TEXT  -- a fork's origin: {"turn", "step", "session"} as JSON
);
CREATE INDEX turns_session ON turns (session_id, id);
CREATE TABLE steps (
    turn_id INTEGER NOT NULL REFERENCES turns (id),
    n INTEGER NOT NULL,
    request TEXT NOT NULL,
    reply TEXT NOT NULL,
    estimate INTEGER,
    ttft REAL,
    latency REAL,
    PRIMARY KEY (turn_id, n)
) WITHOUT ROWID;
CREATE TABLE calls (
    turn_id INTEGER NOT NULL,
    step INTEGER NOT NULL,
    position INTEGER NOT NULL,
    call_id TEXT,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    result TEXT NOT NULL,
    duration REAL NOT NULL,
    review TEXT,  -- step mode: what the person did, as JSON ({"action": "edited", "asked": {...}}, ...)
    PRIMARY KEY (turn_id, step, position)
) WITHOUT ROWID;
CREATE TABLE turn_blobs (turn_id INTEGER NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (turn_id, hash)) WITHOUT ROWID;
CREATE INDEX turn_blobs_hash ON turn_blobs (hash);
"""

# format N -> the statements that make it format N + 1 (the format number itself is updated with them)
MIGRATIONS = {
    1: "ALTER TABLE calls ADD COLUMN review TEXT;",
}


TURN_KEYS = (
    "id",
    "session_id",
    "started",
    "model",
    "provider",
    "user",
    "ended",
    "error",
    "steps",
    "usage",
    "seconds",
    "origin",
)


class RecordingStoreError(Exception):
    """The recordings file cannot be used; the message names it and says what to do."""


@dataclass
class StepRow:
    turn_id: int
    n: int
    request: dict  # the body with its LISTS ("messages", "input", "tools") as lists of blob hashes
    reply: dict
    estimate: int | None
    ttft: float | None
    latency: float | None


def _locked(method: Any) -> Any:
    @functools.wraps(method)
    def run(self: RecordingStore, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)

    return run


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class RecordingStore:
    """Thread-safe: turns write on the runtime thread while the notebook reads; one lock serialises both."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.RLock()
        if not path.exists():  # created 0600 before SQLite touches it: it holds whole conversations
            os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
        try:
            self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self._check_format()
        except RecordingStoreError:
            self.db.close()
            raise
        except sqlite3.DatabaseError as exc:
            if hasattr(self, "db"):
                self.db.close()
            raise RecordingStoreError(
                f"{path}: not a readable recordings file ({exc}); move it away and cireil starts a new one"
            ) from None

    def _check_format(self) -> None:
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            # one transaction: a file left half-created by a crash would be refused as "not ours" forever
            self.db.executescript(f"BEGIN;{SCHEMA}INSERT INTO meta VALUES ('format', '{FORMAT}');COMMIT;")
            return
        found = None
        if "meta" in tables:
            row = self.db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
            found = row[0] if row else None
        if found is not None and found.isdigit() and int(found) in MIGRATIONS:
            self._migrate(int(found))
            return
        if found != str(FORMAT):
            what = f"format {found}" if found else "a file without a format number (an older recorder's, or not ours)"
            newer = found is not None and found.isdigit() and int(found) > FORMAT
            advice = (
                "it was written by a newer cireil; update cireil to read it"
                if newer
                else f"no migration to format {FORMAT} exists; move it away to start a new recording"
            )
            raise RecordingStoreError(f"{self.path}: {what}, this cireil records format {FORMAT}: {advice}")

    def _migrate(self, found: int) -> None:
        """Bring a file of an older format up to FORMAT, all steps in one transaction: a crash leaves it as it was."""
        steps = "".join(MIGRATIONS[n] for n in range(found, FORMAT))
        self.db.executescript(f"BEGIN;{steps}UPDATE meta SET value = '{FORMAT}' WHERE key = 'format';COMMIT;")

    @_locked
    def close(self) -> None:
        self.db.close()

    # -- writing -------------------------------------------------------------------------------
    @_locked
    def begin_turn(
        self, session_id: str, model: str, provider: str, user: dict | None, origin: dict | None = None
    ) -> int:
        cur = self.db.execute(
            "INSERT INTO turns (session_id, started, model, provider, user_message, origin) VALUES (?, ?, ?, ?, ?, ?)",
            (
                session_id,
                time.time(),
                model,
                provider,
                _dumps(user) if user is not None else None,
                _dumps(origin) if origin else None,
            ),
        )
        return int(cur.lastrowid)

    @_locked
    def write_step(
        self,
        turn_id: int,
        n: int,
        request: dict,
        reply: dict,
        blobs: list[tuple[str, str]],
        estimate: int | None,
        ttft: float | None,
        latency: float | None,
        calls: list[tuple],
    ) -> None:
        """One model call and its tool calls, in one transaction; `blobs` are (hash, json) new to this turn."""
        db = self.db
        db.execute("BEGIN")
        try:
            if blobs:
                db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", blobs)
                db.executemany("INSERT OR IGNORE INTO turn_blobs VALUES (?, ?)", [(turn_id, h) for h, _ in blobs])
            db.execute(
                "INSERT OR REPLACE INTO steps VALUES (?, ?, ?, ?, ?, ?, ?)",
                (turn_id, n, _dumps(request), _dumps(reply), estimate, ttft, latency),
            )
            if calls:
                db.executemany(
                    "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(turn_id, n, *c) for c in calls],
                )
            db.execute("UPDATE turns SET steps = ? WHERE id = ?", (n, turn_id))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @_locked
    def end_turn(self, turn_id: int, ended: str, error: str | None, usage: dict, seconds: float) -> None:
        self.db.execute(
            "UPDATE turns SET ended = ?, error = ?, usage = ?, seconds = ? WHERE id = ?",
            (ended, error, _dumps(usage), seconds, turn_id),
        )

    # -- size ----------------------------------------------------------------------------------
    def used_bytes(self) -> int:
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        free = self.db.execute("PRAGMA freelist_count").fetchone()[0]
        size = self.db.execute("PRAGMA page_size").fetchone()[0]
        return (pages - free) * size

    @_locked
    def evict(self, max_turns: int, max_bytes: int) -> int:
        """Delete the oldest turns beyond `max_turns`, then while the file holds more than `max_bytes`;
        returns how many went. The newest turn always stays."""
        gone = 0
        count = self.db.execute("SELECT count(*) FROM turns").fetchone()[0]
        if count > max_turns:
            gone += self._drop_oldest(count - max_turns)
            count -= gone
        while count > 1 and self.used_bytes() > max_bytes:
            n = self._drop_oldest(max(1, count // 10))
            gone += n
            count -= n
        return gone

    def _drop_oldest(self, n: int) -> int:
        db = self.db
        ids = [r[0] for r in db.execute("SELECT id FROM turns ORDER BY id LIMIT ?", (n,))]
        if not ids:
            return 0
        marks = ",".join("?" * len(ids))
        db.execute("BEGIN")
        try:
            for table, column in (
                ("calls", "turn_id"),
                ("steps", "turn_id"),
                ("turn_blobs", "turn_id"),
                ("turns", "id"),
            ):
                db.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", ids)
            db.execute("DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM turn_blobs)")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return len(ids)

    # -- reading -------------------------------------------------------------------------------
    @_locked
    def turns(self, session_id: str | None = None) -> list[dict]:
        query = (
            "SELECT id, session_id, started, model, provider, user_message, ended, error, steps, usage, seconds, origin"
            " FROM turns"
        )
        rows = (
            self.db.execute(query + " WHERE session_id = ? ORDER BY id", (session_id,))
            if session_id is not None
            else self.db.execute(query + " ORDER BY id")
        )
        keys = TURN_KEYS
        out = []
        for row in rows:
            turn = dict(zip(keys, row, strict=True))
            turn["user"] = json.loads(turn["user"]) if turn["user"] else None
            turn["usage"] = json.loads(turn["usage"])
            turn["origin"] = json.loads(turn["origin"]) if turn["origin"] else None
            out.append(turn)
        return out

    def turn(self, turn_id: int) -> dict | None:
        found = [t for t in self.turns() if t["id"] == turn_id]  # small table; turns() is the one reader
        return found[0] if found else None

    @_locked
    def steps(self, turn_id: int) -> list[StepRow]:
        rows = self.db.execute(
            "SELECT turn_id, n, request, reply, estimate, ttft, latency FROM steps WHERE turn_id = ? ORDER BY n",
            (turn_id,),
        )
        return [StepRow(r[0], r[1], json.loads(r[2]), json.loads(r[3]), r[4], r[5], r[6]) for r in rows]

    @_locked
    def calls(self, turn_id: int) -> list[dict]:
        rows = self.db.execute(
            "SELECT step, position, call_id, name, arguments, result, duration, review FROM calls WHERE turn_id = ? "
            "ORDER BY step, position",
            (turn_id,),
        )
        return [
            {
                "step": r[0],
                "position": r[1],
                "id": r[2],
                "name": r[3],
                "arguments": json.loads(r[4]),
                "result": json.loads(r[5]),
                "duration": r[6],
                "review": json.loads(r[7]) if r[7] else None,
            }
            for r in rows
        ]

    @_locked
    def blobs(self, hashes: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        unique = list(dict.fromkeys(hashes))
        for i in range(0, len(unique), 500):
            chunk = unique[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for h, text in self.db.execute(f"SELECT hash, json FROM blobs WHERE hash IN ({marks})", chunk):
                out[h] = json.loads(text)
        return out
