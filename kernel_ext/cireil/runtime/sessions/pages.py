"""read-session pages: a page of a stored session costs the messages it returns, not the session.

The side file keeps, per session, where each user and assistant message lies in the row's history text, in
UTF-8 bytes, with its role and time (`pages`, one row each), and what the row looked like then (`paged_sessions`:
its header fingerprint, headers.py, and where its last element ends). A page is then picked in SQL (since,
order, offset, limit, and the total), and only its messages are read: through a blob handle on the history
value, each message's bytes from where it lies, never the whole text, and json-decoded one by one.

The layout is taken the first time a session is paged (one parse of the row), and follows the row from there:
messages appended by cireil's own writes or by the original's saves are added from where the last one ended;
any other change leaves the layout to be taken again at the next page. A page is only served from a layout whose
fingerprint is the row's current one, and each message read back must sit between a `[`/`,` and a `,`/`]` and
have the role the layout says: anything else (an edit that kept the row's byte length, say) falls back to
decoding the whole session, which is always right.
"""

from __future__ import annotations

import json
import sqlite3
from json import scanner
from typing import Any

from . import headers
from . import history_json as hj
from .rowids import stored_id
from .rowtext import signature

SEARCHED_ROLES = ("user", "assistant")
_WS = " \t\n\r"
_BEFORE = frozenset(b"[," + _WS.encode())
_AFTER = frozenset(b",]" + _WS.encode())
_SCAN = scanner.make_scanner(json.JSONDecoder())
# within this many seconds of `since`, a message's time as stored (ms) and as read-session compares it (cireil's
# own offset-bearing time, from the side file's extras) could fall on two sides: such a page is read whole
_SINCE_MARGIN = 0.002


def _no_images(ref: str, media_type: str) -> None:
    return None  # read-session shows a picture as [image]: its bytes are never needed


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WS:
        at += 1
    return at


def spans_after(text: str, at: int, first: bool) -> list[tuple[int, int]] | None:
    """(start, end) of each element of the JSON array `text` after position `at`: just after its `[` (first) or
    after an element; None when the text from there is not the rest of an array."""
    spans: list[tuple[int, int]] = []
    at = _skip(text, at)
    if not first and text[at : at + 1] == ",":
        at = _skip(text, at + 1)
    elif text[at : at + 1] == "]":
        return spans if _skip(text, at + 1) == len(text) else None
    elif not first:
        return None
    while True:
        try:
            _, end = _SCAN(text, at)
        except (StopIteration, ValueError, RecursionError):
            return None
        spans.append((at, end))
        at = _skip(text, end)
        if text[at : at + 1] == ",":
            at = _skip(text, at + 1)
            continue
        if text[at : at + 1] == "]" and _skip(text, at + 1) == len(text):
            return spans
        return None


def _utf8(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def stamp_of(element: Any) -> float:
    """A stored element's time as read-session compares it (to_epoch of the decoded timestamp, or 0)."""
    stamp = element.get("timestamp") if isinstance(element, dict) else None
    return stamp / 1000 if type(stamp) is int else 0


class Pages:
    """Mixed into SessionStore (through SideIndex): uses its connections, lock and columns."""

    _db: sqlite3.Connection
    side: sqlite3.Connection
    _lock: Any
    _columns: list[str]
    _side_transaction: Any
    refresh_index: Any

    def _layout_rows(
        self,
        row_id: str,
        text: str,
        spans: list[tuple[int, int]],
        kinds: list[tuple[str, float]],
        first: int,
        char_at: int,
        byte_at: int,
    ) -> tuple[list[tuple], int, int]:
        """pages rows for elements first.. (their spans and (role, time)), counting bytes on from a known place."""
        rows = []
        for pos, ((start, end), (role, ts)) in enumerate(zip(spans, kinds, strict=True), first):
            start_byte = byte_at + _utf8(text[char_at:start])
            byte_at = start_byte + _utf8(text[start:end])
            char_at = end
            if role in SEARCHED_ROLES:
                rows.append((row_id, pos, role, ts, start_byte, byte_at))
        return rows, char_at, byte_at

    def _take_layout(self, row_id: str, fingerprint: str) -> bool:
        """Parse the row once and keep where its messages lie (the store's lock is held)."""
        db = self._db
        db.execute("BEGIN")
        try:
            now = headers.fingerprint(db, self._columns, row_id)
            row = db.execute("SELECT history FROM sessions WHERE id = ?", (row_id,)).fetchone()
        finally:
            db.execute("COMMIT")
        if now is None or now[0] != fingerprint or row is None or not isinstance(row[0], str):
            return False
        text = row[0]
        try:
            elements, spans = hj.parse_history_spans(text)
        except hj.HistoryFormatError:
            return False
        if spans is None:
            return False
        start = text.index("[") + 1
        kinds = [(e.get("role") if isinstance(e, dict) else None, stamp_of(e)) for e in elements]
        try:
            rows, char_end, byte_end = self._layout_rows(row_id, text, spans, kinds, 0, start, _utf8(text[:start]))
        except UnicodeEncodeError:
            return False
        try:
            with self._side_transaction() as side:
                side.execute("DELETE FROM pages WHERE session_id = ?", (row_id,))
                side.executemany("INSERT INTO pages VALUES (?, ?, ?, ?, ?, ?)", rows)
                side.execute(
                    "INSERT OR REPLACE INTO paged_sessions (session_id, fingerprint, elements, char_end, byte_end)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (row_id, fingerprint, len(elements), char_end, byte_end),
                )
        except sqlite3.Error:
            return False  # a side file that cannot grow: pages are read the whole way
        return True

    def _follow_layout(
        self,
        side: sqlite3.Connection,
        row_id: str,
        first: int,
        kinds: list[tuple[str, float]],
        old: str | None,
        new: str,
        text: Any,
        char_base: int = 0,
        byte_base: int = 0,
    ) -> None:
        """The row changed from position `first` on (kinds: role and time of each element from there), inside
        the side transaction that indexes it: a layout of the row as it was (`old` fingerprint) follows when
        messages were only appended; else it is dropped, to be taken again by the next page read. text: the
        history text from `char_base` (`byte_base` in bytes) to its end, holding at least elements first.."""
        paged = side.execute(
            "SELECT fingerprint, elements, char_end, byte_end FROM paged_sessions WHERE session_id = ?", (row_id,)
        ).fetchone()
        if paged is None:
            return
        fingerprint, elements, char_end, byte_end = paged
        rows = None
        at = char_end - char_base
        sure = bool(new) and not new.startswith("?")  # of the row as indexed (sideindex._written_fingerprint)
        if sure and old is not None and fingerprint == old and first == elements and isinstance(text, str) and at >= 0:
            spans = spans_after(text, at, first=elements == 0)
            if spans is not None and len(spans) == len(kinds):
                try:
                    rows, at, byte_end = self._layout_rows(row_id, text, spans, kinds, first, at, byte_end)
                except UnicodeEncodeError:
                    rows = None
        if rows is None:
            side.execute("DELETE FROM paged_sessions WHERE session_id = ?", (row_id,))
            return
        side.executemany("INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?, ?)", rows)
        side.execute(
            "UPDATE paged_sessions SET fingerprint = ?, elements = ?, char_end = ?, byte_end = ? WHERE session_id = ?",
            (new, first + len(kinds), char_base + at, byte_end, row_id),
        )

    def _slices(self, row_id: str, fingerprint: str, rows: list[tuple]) -> list[tuple[int, dict]] | None:
        """The page's stored elements, read from where the layout says they lie, or None when the row is not
        the one the layout was taken from (the store's lock is held)."""
        db = self._db
        db.execute("BEGIN")  # the fingerprint and the bytes from one snapshot
        try:
            now = headers.fingerprint(db, self._columns, row_id)
            if now is None or now[0] != fingerprint:
                return None
            (rowid,) = db.execute("SELECT rowid FROM sessions WHERE id = ?", (row_id,)).fetchone()
            out = []
            with db.blobopen("sessions", "history", rowid, readonly=True) as blob:
                size = len(blob)
                for pos, role, start, end in rows:
                    if not 0 < start < end < size:
                        return None
                    blob.seek(start - 1)
                    data = blob.read(end - start + 2)
                    if data[0] not in _BEFORE or data[-1] not in _AFTER:
                        return None
                    element = json.loads(data[1:-1])
                    if not isinstance(element, dict) or element.get("role") != role:
                        return None
                    out.append((pos, element))
            return out
        except (ValueError, RecursionError, sqlite3.Error):
            return None
        finally:
            if db.in_transaction:
                db.execute("COMMIT")

    def read_page(
        self, session_id: str, *, since: str | None = None, order: str = "desc", offset: int = 0, limit: int = 50
    ) -> tuple[list[dict], int] | None:
        """(the page of the stored session's user and assistant messages, as read-session picks them from a
        whole decode: `since`, `order`, `offset`, `limit`; how many there are after `since`), or None when the
        page cannot be served from the side file (the caller then decodes the whole session)."""
        row_id = stored_id(session_id)
        if row_id is None:
            return None
        since_epoch = hj.iso_to_epoch(since)
        self.refresh_index()
        with self._lock:
            found = headers.fingerprint(self._db, self._columns, row_id)
            if found is None:
                return None
            fingerprint = found[0]
            indexed = self.side.execute(
                "SELECT fingerprint, error FROM indexed_sessions WHERE session_id = ?", (row_id,)
            ).fetchone()
            if indexed is None or tuple(indexed) != (fingerprint, None):
                return None  # not indexed as it is now (being built, or unreadable): the whole way says why
            paged = self.side.execute(
                "SELECT fingerprint FROM paged_sessions WHERE session_id = ?", (row_id,)
            ).fetchone()
            if (paged is None or paged[0] != fingerprint) and not self._take_layout(row_id, fingerprint):
                return None
            where, args = "session_id = ?", [row_id]
            if since_epoch is not None:
                near = self.side.execute(
                    "SELECT 1 FROM pages WHERE session_id = ? AND ts BETWEEN ? AND ? LIMIT 1",
                    (row_id, since_epoch - _SINCE_MARGIN, since_epoch + _SINCE_MARGIN),
                ).fetchone()
                if near is not None:
                    return None
                where += " AND ts >= ?"
                args.append(since_epoch)
            (total,) = self.side.execute(f"SELECT count(*) FROM pages WHERE {where}", args).fetchone()
            direction = "ASC" if order == "asc" else "DESC"
            rows = self.side.execute(
                f"SELECT pos, role, byte_start, byte_end FROM pages WHERE {where} ORDER BY pos {direction}"
                " LIMIT ? OFFSET ?",
                (*args, int(limit), int(offset)),
            ).fetchall()
            elements = self._slices(row_id, fingerprint, rows)
            if elements is None:
                return None
            extras = {
                pos: (fp, extra)
                for pos, fp, extra in self.side.execute(
                    f"SELECT pos, fingerprint, extras FROM message_extras WHERE session_id = ?"
                    f" AND pos IN ({','.join('?' * len(elements))})",
                    (row_id, *(pos for pos, _ in elements)),
                )
            }
        messages = []
        for pos, element in elements:
            try:
                message = hj.decode_message(element, pos, _no_images)
            except hj.HistoryFormatError:
                return None
            if pos in extras and signature(element) == extras[pos][0]:
                # as SessionStore.get attaches cireil's extras to the message they were written with
                extra = json.loads(extras[pos][1])
                parts = message.get("content")
                for index, keys in extra.pop("parts", {}).items():
                    if isinstance(parts, list) and int(index) < len(parts):
                        parts[int(index)].update(keys)
                message.update(extra)
            messages.append(message)
        return messages, total
