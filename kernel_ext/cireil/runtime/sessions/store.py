"""SessionStore: one agent's sessions, messages, attachments and one-shot jobs in `sessions.db`.

One message per row, so a turn appends a few rows instead of rewriting the whole history, and a
trigram FTS5 index over folded message text keeps query-sessions fast on large stores (search.py).
The runtime loop thread and the kernel's main thread share one connection behind one lock.
"""

from __future__ import annotations

import heapq
import json
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from ..messages import now_iso, searchable_text
from ..session import Session, platform_of
from .search import compile_query, fold, fts_expression

SCHEMA_VERSION = 1
SEARCHED_ROLES = ("user", "assistant")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    platform TEXT NOT NULL,
    created TEXT,
    last_activity TEXT,
    last_activity_ts REAL,
    cursor INTEGER NOT NULL DEFAULT 0,
    opened_files TEXT NOT NULL DEFAULT '[]',
    active_sections TEXT NOT NULL DEFAULT '{}',
    summaries TEXT NOT NULL DEFAULT '[]',
    provider TEXT,
    model TEXT,
    meta TEXT NOT NULL DEFAULT '{}',
    message_count INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS messages (
    rowid INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (session_id, seq),
    UNIQUE (session_id, message_id)
);
-- What query-sessions reads, apart from the big message bodies: a scan or an index probe stays in
-- a few small pages. One row per user/assistant message with text; rowid = the message's rowid.
CREATE TABLE IF NOT EXISTS search (
    rowid INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    role TEXT NOT NULL,
    timestamp TEXT,
    ts REAL NOT NULL,
    text TEXT NOT NULL
);
-- Trigrams of fold(text), without positions (detail=none): a prefilter only, every literal becomes
-- an AND of its trigrams and the real matcher checks each candidate.
CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(
    folded, content='', detail=none, tokenize='trigram case_sensitive 1'
);
CREATE TABLE IF NOT EXISTS attachments (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    filename TEXT NOT NULL,
    media_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS attachments_by_message ON attachments (session_id, message_id);
CREATE TABLE IF NOT EXISTS cron_jobs (
    job_id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    config TEXT NOT NULL,
    next_run TEXT,
    status TEXT NOT NULL
);
"""


def to_epoch(value: Any) -> float | None:
    """ISO-8601 -> seconds; a time without an offset is taken as local time. None when unparseable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo else parsed.astimezone().timestamp()


def channel_of(session_id: str) -> str:
    return session_id.split(":", 1)[0]


def _cut(text: str, limit: int = 100) -> str:
    return text[:limit] + "..." if len(text) > limit else text


_TAG = re.compile(r"<[^>]+>")


def preview_of(message: dict | None) -> str:
    """list-sessions' preview of a session's last user/assistant message (reference §4.15)."""
    if message is None:
        return ""
    content = message.get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
    text_part = next((p for p in parts if p.get("type") == "text" and p.get("text")), None)
    if text_part is not None:
        raw = text_part["text"]
        return _cut(_TAG.sub("", raw).strip() or raw)
    calls = [p for p in parts if p.get("type") == "toolCall"]
    responds = [c for c in calls if c.get("name") == "respond" and isinstance(c.get("input", {}).get("content"), str)]
    if responds:
        return _cut(responds[-1]["input"]["content"])
    if calls:
        return f"Tool: {calls[0].get('name', '')}"
    if any(p.get("type") == "image" for p in parts):
        return "[Image]"
    return ""


def _origins(origin: str | list[str] | tuple[str, ...] | None) -> list[str]:
    if origin is None:
        return []
    return [origin] if isinstance(origin, str) else list(origin)


def _filters(
    id_column: str, origin: Any, since: str | None, time_column: str, text_column: str
) -> tuple[list[str], list[Any]]:
    """WHERE clauses shared by list-sessions and query-sessions: no cron sessions, origin prefixes, since."""
    where = [f"substr({id_column}, 1, 5) != 'cron:'"]
    args: list[Any] = []
    prefixes = _origins(origin)
    if prefixes:
        # SQL LIKE on purpose (reference §4.15): `%` and `_` in an origin act as wildcards
        where.append("(" + " OR ".join(f"{id_column} LIKE ? || '%'" for _ in prefixes) + ")")
        args += prefixes
    if since:
        epoch = to_epoch(since)
        if epoch is not None:
            where.append(f"{time_column} >= ?")
            args.append(epoch)
        else:  # not a date we can read: the reference's plain string comparison
            where.append(f"{text_column} >= ?")
            args.append(since)
    return where, args


class SessionStore:
    """Thread-safe: every public method holds the store's lock for its whole database work."""

    def __init__(self, db_path: Path) -> None:
        self.path = Path(db_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Created 0600 before SQLite touches it: the file holds whole conversations.
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        os.close(fd)
        os.chmod(self.path, 0o600)
        self._lock = threading.RLock()
        self._matcher: Any = None  # the query being run, for the SQL function below
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        # Reads through the OS page cache instead of copies into SQLite's own: a large store searches
        # fast without the kernel process holding its pages twice.
        self._db.execute("PRAGMA mmap_size=268435456")
        self._db.create_function("cireil_match", 1, self._match, deterministic=True)
        self._migrate()

    @classmethod
    def for_agent(cls, agent_dir: Path) -> SessionStore:
        return cls(Path(agent_dir) / "sessions.db")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing -------------------------------------------------------------------------------

    def _migrate(self) -> None:
        with self._lock:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RuntimeError(f"{self.path} has schema version {version}; this cireil knows {SCHEMA_VERSION}")
            if version < SCHEMA_VERSION:  # one script, one transaction: a half-made schema never stays
                try:
                    self._db.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {SCHEMA_VERSION};COMMIT;")
                except sqlite3.Error:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _match(self, text: str | None) -> bool:
        return text is not None and self._matcher.test(text)

    # -- sessions -------------------------------------------------------------------------------

    def open_session(self, session_id: str, *, platform: str | None = None) -> Session:
        with self._lock:
            found = self.get(session_id)
            if found is not None:
                return found
            session = Session(id=session_id, platform=platform or platform_of(session_id), created=now_iso())
            with self._transaction() as db:
                created = db.execute(
                    "INSERT OR IGNORE INTO sessions (id, platform, created) VALUES (?, ?, ?)",
                    (session.id, session.platform, session.created),
                ).rowcount
            # another process (a second kernel on the same agent) may have created it in between
            return session if created else self.get(session_id) or session

    def get(self, session_id: str) -> Session | None:
        with self._lock:
            row = self._db.execute(
                "SELECT platform, created, last_activity, cursor, opened_files, active_sections, summaries,"
                " provider, model, meta FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
            if row is None:
                return None
            bodies = self._db.execute(
                "SELECT body FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
        platform, created, last_activity, cursor, opened, sections, summaries, provider, model, meta = row
        return Session(
            id=session_id,
            platform=platform,
            opened_files=json.loads(opened),
            active_sections=json.loads(sections),
            history=[json.loads(b) for (b,) in bodies],
            cursor=cursor,
            summaries=json.loads(summaries),
            last_activity=last_activity,
            created=created,
            provider=provider,
            model=model,
            meta=json.loads(meta),
        )

    def exists(self, session_id: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None

    def session_ids(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT id FROM sessions ORDER BY id")]

    def _write_state(self, db: sqlite3.Connection, session: Session) -> None:
        cur = db.execute(
            "UPDATE sessions SET platform = ?, created = ?, last_activity = ?, last_activity_ts = ?, cursor = ?,"
            " opened_files = ?, active_sections = ?, summaries = ?, provider = ?, model = ?, meta = ? WHERE id = ?",
            (
                session.platform,
                session.created,
                session.last_activity,
                to_epoch(session.last_activity),
                session.cursor,
                json.dumps(session.opened_files, ensure_ascii=False),
                json.dumps(session.active_sections, ensure_ascii=False),
                json.dumps(session.summaries, ensure_ascii=False),
                session.provider,
                session.model,
                json.dumps(session.meta, ensure_ascii=False, default=list),
                session.id,
            ),
        )
        if cur.rowcount == 0:  # a Session made outside the store: it becomes a stored one
            db.execute(
                "INSERT INTO sessions (id, platform, created) VALUES (?, ?, ?)",
                (session.id, session.platform, session.created or now_iso()),
            )
            self._write_state(db, session)

    def save_state(self, session: Session) -> None:
        with self._transaction() as db:
            self._write_state(db, session)

    def commit(self, session: Session, new_messages: list[dict]) -> None:
        """Append `new_messages` (already in session.history) and save the state: all of it, or nothing."""
        kept = [m for m in new_messages if m.get("persistent", True) is not False]
        users = [m.get("timestamp") for m in kept if m.get("role") == "user" and m.get("timestamp")]
        last_activity = users[-1] if users else session.last_activity
        previous = session.last_activity
        session.last_activity = last_activity
        try:
            with self._transaction() as db:
                self._write_state(db, session)  # first: it creates the row of a session made elsewhere
                (seq,) = db.execute(
                    "SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE session_id = ?", (session.id,)
                ).fetchone()
                counted = 0
                for offset, message in enumerate(kept):
                    self._insert_message(db, session.id, seq + offset, message)
                    counted += message.get("role") in SEARCHED_ROLES
                if counted:
                    db.execute(
                        "UPDATE sessions SET message_count = message_count + ? WHERE id = ?", (counted, session.id)
                    )
        except BaseException:
            session.last_activity = previous
            raise

    def _insert_message(self, db: sqlite3.Connection, session_id: str, seq: int, message: dict) -> None:
        cur = db.execute(
            "INSERT INTO messages (session_id, seq, message_id, role, body) VALUES (?, ?, ?, ?, ?)",
            (
                session_id,
                seq,
                message.get("id") or f"seq{seq}",
                message.get("role", ""),
                json.dumps(message, ensure_ascii=False),
            ),
        )
        self._index(db, cur.lastrowid, session_id, message)

    def _index(self, db: sqlite3.Connection, rowid: int | None, session_id: str, message: dict) -> None:
        role = message.get("role", "")
        text = searchable_text(message) if role in SEARCHED_ROLES else ""
        if not text:
            return
        timestamp = message.get("timestamp")
        db.execute(
            "INSERT INTO search (rowid, session_id, role, timestamp, ts, text) VALUES (?, ?, ?, ?, ?, ?)",
            (rowid, session_id, role, timestamp, to_epoch(timestamp) or 0, text),
        )
        db.execute("INSERT INTO search_fts (rowid, folded) VALUES (?, ?)", (rowid, fold(text)))

    def _unindex(self, db: sqlite3.Connection, rowid: int) -> None:
        row = db.execute("SELECT text FROM search WHERE rowid = ?", (rowid,)).fetchone()
        if row is None:
            return
        # a contentless index forgets a row only when told the text it was given
        db.execute("INSERT INTO search_fts (search_fts, rowid, folded) VALUES ('delete', ?, ?)", (rowid, fold(row[0])))
        db.execute("DELETE FROM search WHERE rowid = ?", (rowid,))

    # -- single messages ------------------------------------------------------------------------

    def find_message(self, session_id: str, message_id: str) -> dict | None:
        with self._lock:
            row = self._db.execute(
                "SELECT body FROM messages WHERE session_id = ? AND message_id = ?", (session_id, message_id)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def update_message(self, session_id: str, message: dict) -> None:
        """Replace the stored message with the same id (a reaction was added); KeyError when there is none."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT rowid FROM messages WHERE session_id = ? AND message_id = ?", (session_id, message.get("id"))
            ).fetchone()
            if row is None:
                raise KeyError(f"message {message.get('id')!r} is not stored in session {session_id!r}")
            db.execute(
                "UPDATE messages SET role = ?, body = ? WHERE rowid = ?",
                (message.get("role", ""), json.dumps(message, ensure_ascii=False), row[0]),
            )
            self._unindex(db, row[0])
            self._index(db, row[0], session_id, message)

    # -- listing and search ---------------------------------------------------------------------

    def list_sessions(
        self,
        *,
        limit: int = 15,
        offset: int = 0,
        order: str = "desc",
        origin: str | list[str] | None = None,
        since: str | None = None,
    ) -> list[dict]:
        where, args = _filters("id", origin, since, "last_activity_ts", "last_activity")
        direction = "ASC" if order == "asc" else "DESC"
        with self._lock:
            rows = self._db.execute(
                "SELECT id, COALESCE(last_activity, created), message_count FROM sessions"
                f" WHERE {' AND '.join(where)}"
                f" ORDER BY COALESCE(last_activity_ts, 0) {direction}, id {direction} LIMIT ? OFFSET ?",
                (*args, int(limit), int(offset)),
            ).fetchall()
            out = []
            for session_id, last, count in rows:
                last_row = self._db.execute(
                    "SELECT body FROM messages WHERE session_id = ? AND role IN ('user', 'assistant')"
                    " ORDER BY seq DESC LIMIT 1",
                    (session_id,),
                ).fetchone()
                out.append(
                    {
                        "channel": channel_of(session_id),
                        "id": session_id,
                        "lastActivity": last,
                        "messageCount": count,
                        "preview": preview_of(json.loads(last_row[0]) if last_row else None),
                    }
                )
        return out

    def last_active(self) -> str | None:
        """The id of the most recently active session (channel "last"), as list-sessions orders them."""
        recent = self.list_sessions(limit=1, order="desc")
        return recent[0]["id"] if recent else None

    def query(
        self,
        query: str,
        *,
        mode: str = "glob",
        limit: int = 15,
        offset: int = 0,
        order: str = "desc",
        origin: str | list[str] | None = None,
        since: str | None = None,
    ) -> tuple[list[dict], int]:
        """(matches, totalMatches). Raises re.error for an invalid regex."""
        matcher = compile_query(query, mode)
        where, args = _filters("session_id", origin, since, "ts", "timestamp")
        if matcher.literals:
            where.append("rowid IN (SELECT rowid FROM search_fts WHERE search_fts MATCH ?)")
            args.append(fts_expression(matcher.literals))
        if matcher.substring is not None:
            where.append("instr(text, ?) > 0")  # exact and case-sensitive, like `in`, without a Python call
            args.append(matcher.substring)
        else:
            where.append("cireil_match(text)")
        with self._lock:
            self._matcher = matcher
            try:
                # every match as (time, rowid), unsorted: the total, and the page picked with a heap,
                # cost one pass over the candidates and no sort of all of them
                found = self._db.execute(f"SELECT ts, rowid FROM search WHERE {' AND '.join(where)}", args).fetchall()
            finally:
                self._matcher = None
            pick = heapq.nsmallest if order == "asc" else heapq.nlargest
            page = [rowid for _, rowid in pick(int(offset) + int(limit), found)[int(offset) :]]
            rows = {
                r[0]: r[1:]
                for r in self._db.execute(
                    f"SELECT rowid, session_id, role, timestamp, text FROM search"
                    f" WHERE rowid IN ({','.join('?' * len(page))})",
                    page,
                )
            }
        matches = []
        for rowid in page:
            session_id, role, timestamp, text = rows[rowid]
            item: dict[str, Any] = {"channel": channel_of(session_id), "content": text, "role": role}
            item["sessionId"] = session_id
            if timestamp:
                item["timestamp"] = timestamp
            matches.append(item)
        return matches, len(found)

    # -- attachments ----------------------------------------------------------------------------

    def add_attachment(self, session_id: str, message_id: str, filename: str, media_type: str, data: bytes) -> dict:
        attachment_id = "a" + secrets.token_hex(6)
        with self._transaction() as db:
            db.execute(
                "INSERT INTO attachments (id, session_id, message_id, filename, media_type, size, data)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (attachment_id, session_id, message_id, filename, media_type, len(data), bytes(data)),
            )
        return {"id": attachment_id, "filename": filename, "size": len(data), "mediaType": media_type}

    def attachments(self, session_id: str, message_id: str) -> list[tuple[dict, bytes]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, filename, size, media_type, data FROM attachments"
                " WHERE session_id = ? AND message_id = ? ORDER BY rowid",
                (session_id, message_id),
            ).fetchall()
        return [({"id": i, "filename": f, "size": s, "mediaType": t}, bytes(d)) for i, f, s, t, d in rows]

    # -- one-shot jobs (schedule, reference §4.19) ----------------------------------------------

    def upsert_job(self, job: dict) -> None:
        next_run = (job.get("schedule") or {}).get("at")
        with self._transaction() as db:
            db.execute(
                "INSERT INTO cron_jobs (job_id, type, config, next_run, status) VALUES (?, 'one-shot', ?, ?, ?)"
                " ON CONFLICT (job_id) DO UPDATE SET type = excluded.type, config = excluded.config,"
                " next_run = excluded.next_run, status = excluded.status",
                (job["id"], json.dumps(job, ensure_ascii=False), next_run, job.get("status", "pending")),
            )

    def delete_job(self, job_id: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM cron_jobs WHERE job_id = ?", (job_id,))

    def jobs(self) -> list[dict]:
        with self._lock:
            rows = self._db.execute("SELECT config FROM cron_jobs ORDER BY next_run, job_id").fetchall()
        return [json.loads(c) for (c,) in rows]
