"""cireil's query-sessions/list-sessions index in its side file, kept in step with sessions.db.

The index is derived data: rows of sessions.db are indexed when cireil writes them and re-indexed when
another process changed them (SQLite's data_version says some other connection wrote; a per-session
fingerprint of length(history), cursor, last_activity and length(meta) says which rows), so deleting
the side file only costs one rebuild.
"""

from __future__ import annotations

import hashlib
import heapq
import re
import sqlite3
from typing import Any

from . import history_json as hj
from .errors import SessionFormatError
from .messages import searchable_text
from .rowids import memory_id, stored_id
from .search import compile_query, fold, fts_expression

SEARCHED_ROLES = ("user", "assistant")


def _prefix_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


_FORGET = "INSERT INTO search_fts (search_fts, rowid, folded) VALUES ('delete', ?, ?)"


to_epoch = hj.iso_to_epoch  # what the store and the session tools compare times with


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


class BadText(str):
    """A TEXT value of sessions.db that is not UTF-8 (a hand-edited row): kept with U+FFFD in place of the
    bad bytes so that reading every other row goes on; the row holding it is reported unreadable."""


def text_of_row(raw: bytes) -> str:
    """sqlite3's text_factory for sessions.db."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return BadText(raw.decode("utf-8", "replace"))


UNREADABLE_HINT = "the other sessions work; repair or delete this row of sessions.db to open it"


class SideIndex:
    """Mixed into SessionStore: uses its connections (`_db`, `side`), lock, columns and row decoding."""

    _db: sqlite3.Connection
    side: sqlite3.Connection
    _lock: Any
    _columns: list[str]
    _data_version: int | None
    _matcher: Any
    _raw_row: Any
    _decode: Any
    _row_problem: Any

    # -- cireil's index (side file) ---------------------------------------------------------------

    def _fingerprint_sql(self) -> str:
        have = set(self._columns)
        cursor = "history_cursor" if "history_cursor" in have else "0"
        activity = "COALESCE(last_activity, '')" if "last_activity" in have else "''"
        # every column a row is read from: a hand edit of any of them is looked at again (and reported)
        sections = "COALESCE(length(active_file_sections), -1)" if "active_file_sections" in have else "2"
        return (
            f"length(history) || '|' || {cursor} || '|' || {activity} || '|' || length(meta)"
            f" || '|' || COALESCE(length(opened_files), -1) || '|' || {sections}"
        )

    @staticmethod
    def _fingerprint(row: tuple) -> str:
        def size(value: Any) -> int:
            return len(value) if isinstance(value, str | bytes) else -1

        return f"{len(row[2])}|{row[5]}|{row[4] or ''}|{len(row[1])}|{size(row[3])}|{size(row[6])}"

    def _index_session(
        self,
        side: sqlite3.Connection,
        row_id: str,
        row: tuple,
        history: list[dict],
        first: int,
        *,
        offset: int = 0,
        before: tuple[int, str] | None = None,
        prefix_hash: str | None = None,
    ) -> None:
        """Index positions first.. of a session; history[i] is the stored element at position offset + i.

        `before`: (message count, preview) of the positions before `offset` when history is only a tail;
        `prefix_hash`: the hash of row[2][:-1] when the caller has it already (carried on from its last write)."""
        mem_id = memory_id(row_id)
        old = side.execute("SELECT rowid, text FROM search WHERE row_id = ? AND pos >= ?", (row_id, first)).fetchall()
        for rowid, text in old:  # a contentless index forgets a row only when told the text it was given
            side.execute(_FORGET, (rowid, fold(text)))
        side.execute("DELETE FROM search WHERE row_id = ? AND pos >= ?", (row_id, first))
        (next_id,) = side.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM search").fetchone()
        rows, folded = [], []
        for pos in range(first, offset + len(history)):
            message = history[pos - offset]
            role = message.get("role", "")
            text = searchable_text(message) if role in SEARCHED_ROLES else ""
            if not text:
                continue
            stamp = message.get("timestamp")
            rows.append((next_id, mem_id, row_id, pos, role, stamp, to_epoch(stamp) or 0, text))
            folded.append((next_id, fold(text)))
            next_id += 1
        side.executemany(
            "INSERT INTO search (rowid, session_id, row_id, pos, role, timestamp, ts, text)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        side.executemany("INSERT INTO search_fts (rowid, folded) VALUES (?, ?)", folded)
        conversation = [m for m in history if m.get("role") in SEARCHED_ROLES]
        count, preview = before or (0, "")
        if conversation:
            preview = preview_of(conversation[-1])
        text = row[2] if isinstance(row[2], str) else "[]"
        side.execute(
            "INSERT OR REPLACE INTO indexed_sessions (session_id, mem_id, fingerprint, message_count, preview,"
            " last_activity, last_ts, error, elements, prefix_len, prefix_hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)",
            (
                row_id,
                mem_id,
                self._fingerprint(row),
                count + len(conversation),
                preview,
                row[4],
                to_epoch(row[4]),
                offset + len(history),
                len(text) - 1,
                prefix_hash or _prefix_hash(text[:-1]),
            ),
        )

    def _append_only(self, side: sqlite3.Connection, row_id: str, row: tuple) -> bool:
        """Index just the new messages when the row's history is the indexed one with messages appended
        (how the original saves a session after a turn); False when that cannot be shown cheaply."""
        known = side.execute(
            "SELECT elements, prefix_len, prefix_hash, message_count, preview FROM indexed_sessions"
            " WHERE session_id = ? AND error IS NULL",
            (row_id,),
        ).fetchone()
        text = row[2]
        if known is None or not isinstance(text, str):
            return False
        elements, prefix_len, prefix_hash, count, preview = known
        if not elements or len(text) <= prefix_len + 1 or text[prefix_len] != ",":
            return False
        if _prefix_hash(text[:prefix_len]) != prefix_hash or self._row_problem(row_id, row)[0] is not None:
            return False
        try:
            tail = hj.parse_history("[" + text[prefix_len + 1 :])
            history = [hj.decode_message(e, elements + i, lambda ref, media_type: None) for i, e in enumerate(tail)]
        except hj.HistoryFormatError:
            return False  # the full path says what is wrong
        self._index_session(side, row_id, row, history, elements, offset=elements, before=(count, preview))
        return True

    def _reindex_row(self, side: sqlite3.Connection, row_id: str) -> None:
        if isinstance(row_id, BadText):  # no query can name this row again: listed as unreadable, never opened
            problem = f"sessions.db: a session whose id is not valid UTF-8 ({row_id[:60]!r}) cannot be read"
            side.execute(
                "INSERT OR REPLACE INTO indexed_sessions (session_id, mem_id, fingerprint, message_count, preview,"
                " error) VALUES (?, ?, '', 0, '', ?)",
                (row_id, row_id, problem),
            )
            return
        row = self._raw_row(self._db, row_id)
        if row is None or self._append_only(side, row_id, row):
            return
        try:
            history, _, _ = self._decode(row_id, row, images=False)
        except SessionFormatError as exc:
            self._unindex(side, row_id)
            side.execute(
                "INSERT OR REPLACE INTO indexed_sessions (session_id, mem_id, fingerprint, message_count, preview,"
                " last_activity, last_ts, error) VALUES (?, ?, ?, 0, '', ?, ?, ?)",
                (row_id, memory_id(row_id), self._fingerprint(row), row[4], to_epoch(row[4]), str(exc)),
            )
            return
        self._index_session(side, row_id, row, history, 0)

    def _unindex(self, side: sqlite3.Connection, row_id: str) -> None:
        for rowid, text in side.execute("SELECT rowid, text FROM search WHERE row_id = ?", (row_id,)).fetchall():
            side.execute(_FORGET, (rowid, fold(text)))
        side.execute("DELETE FROM search WHERE row_id = ?", (row_id,))
        side.execute("DELETE FROM indexed_sessions WHERE session_id = ?", (row_id,))

    def refresh_index(self) -> None:
        """Bring the side index in step with sessions.db: nothing to do unless another connection wrote."""
        with self._lock:
            version = self._db.execute("PRAGMA data_version").fetchone()[0]
            if version == self._data_version:
                return
            rows = dict(self._db.execute(f"SELECT id, {self._fingerprint_sql()} FROM sessions").fetchall())
            indexed = dict(self.side.execute("SELECT session_id, fingerprint FROM indexed_sessions").fetchall())
            stale = [rid for rid, fp in rows.items() if indexed.get(rid) != fp]
            gone = [rid for rid in indexed if rid not in rows]
            if stale or gone:
                try:
                    with self._side_transaction() as side:
                        for rid in gone:
                            self._unindex(side, rid)
                        for rid in stale:
                            self._reindex_row(side, rid)
                except sqlite3.Error:
                    # the side file cannot grow (a full disk): reads go on with the index as it was, and the
                    # next look tries again
                    return
            self._data_version = version

    def session_error(self, session_id: str) -> str | None:
        """Why a stored session cannot be read (as indexed), or None."""
        row_id = stored_id(session_id)
        self.refresh_index()
        with self._lock:
            row = self.side.execute("SELECT error FROM indexed_sessions WHERE session_id = ?", (row_id,)).fetchone()
        return row[0] if row else None

    def unreadable(self) -> list[str]:
        """One line per stored session cireil cannot read (what `%cireil load` reports)."""
        self.refresh_index()
        with self._lock:
            rows = self.side.execute("SELECT error FROM indexed_sessions WHERE error IS NOT NULL").fetchall()
        return [f"{r[0].removeprefix('sessions.db: ')}: {UNREADABLE_HINT}" for r in rows]

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
        self.refresh_index()
        where, args = _filters("mem_id", origin, since, "last_ts", "last_activity")
        direction = "ASC" if order == "asc" else "DESC"
        with self._lock:
            rows = self.side.execute(
                "SELECT mem_id, last_activity, message_count, preview, error FROM indexed_sessions"
                f" WHERE {' AND '.join(where)}"
                f" ORDER BY COALESCE(last_ts, 0) {direction}, mem_id {direction} LIMIT ? OFFSET ?",
                (*args, int(limit), int(offset)),
            ).fetchall()
        return [
            {
                "channel": channel_of(mem_id),
                "id": mem_id,
                "lastActivity": last,
                "messageCount": count,
                "preview": preview if error is None else f"[unreadable: {error}]",
            }
            for mem_id, last, count, preview, error in rows
        ]

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
        self.refresh_index()
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
                found = self.side.execute(f"SELECT ts, rowid FROM search WHERE {' AND '.join(where)}", args).fetchall()
            finally:
                self._matcher = None
            pick = heapq.nsmallest if order == "asc" else heapq.nlargest
            page = [rowid for _, rowid in pick(int(offset) + int(limit), found)[int(offset) :]]
            rows = {
                r[0]: r[1:]
                for r in self.side.execute(
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
