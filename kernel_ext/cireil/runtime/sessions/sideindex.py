"""cireil's query-sessions/list-sessions index in its side file, kept in step with sessions.db.

The index is derived data: rows of sessions.db are indexed when cireil writes them and re-indexed when another
process changed them. SQLite's data_version says some other connection wrote; the WAL's frames since the last
look name the rows on the pages written (walscan.py), and a fingerprint of each of those rows taken from its
record header (headers.py: rowid, the byte lengths of its columns, meta's length, channel), read without
reading any history, says which changed. When the WAL cannot tell (it restarted more than once since, or was
cut), every row's fingerprint is read. A load that finds sessions.db as the index was last complete for
(dbstate.py) looks at no row. A row the original only appended to (its usual save) is indexed from where it
was, after its earlier text hashed the same (_append_only). Deleting the side file only costs a
rebuild: one of more than INLINE_INDEX_BYTES of history (the first open of an original's agent) is built in the
background (indexbuild.py) while everything else works; list-sessions and query-sessions then answer from what
is indexed so far and say how far the build is (`index_status`)."""

from __future__ import annotations

import heapq
import sqlite3
from pathlib import Path
from typing import Any

from . import dbstate, headers, walscan
from . import history_json as hj
from .indexbuild import (
    SEARCHED_ROLES,
    ActivitySweep,
    IndexBuilder,
    RowIndex,
    entry_of_row,
    of_messages,
    prefix_digest,
    prefix_hash_of,
    prefix_hasher,
    preview_of,
    read_row,
    shown_time,
)
from .pages import Pages
from .rowids import memory_id, stored_id
from .search import compile_query, fold, fts_expression

__all__ = ["SEARCHED_ROLES", "BadText", "SideIndex", "channel_of", "preview_of", "text_of_row", "to_epoch"]


_CHUNK = 1 << 20  # bytes of a history hashed at a time: the hash lets other threads run meanwhile
_UNSWEPT = "~unswept"  # after a stored token: the activity sweep was still to run for that content
_FORGET = "INSERT INTO search_fts (search_fts, rowid, folded) VALUES ('delete', ?, ?)"


to_epoch = hj.iso_to_epoch  # what the store and the session tools compare times with


def channel_of(session_id: str) -> str:
    return session_id.split(":", 1)[0]


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


class SideIndex(Pages):
    """Mixed into SessionStore: uses its connections (`_db`, `side`), lock, columns and row decoding."""

    # history bytes of stale rows above which they are indexed in the background, not inside the call that
    # found them (about 0.1 s of work: a load, or the first query after another process wrote)
    INLINE_INDEX_BYTES = 8_000_000
    INLINE_APPEND_BYTES = 64_000_000  # of rows checked for appended messages (hashed at ~1 GB/s) the same way

    _db: sqlite3.Connection
    side: sqlite3.Connection
    _lock: Any
    _columns: list[str]
    _data_version: int | None
    _db_uri: str
    path: Path
    _matcher: Any
    _raw_row: Any
    _decode: Any
    _row_problem: Any
    _side_transaction: Any
    _select: Any
    _builder: IndexBuilder | None = None
    # the content token (dbstate.py) up to which every commit is looked at: the next look reads the WAL's
    # frames after it (walscan.py); None: look at every row
    _wal_mark: str | None = None
    _quick_looked = False  # the last look at every row read their histories' lengths alone (headers.py)
    _sweep: ActivitySweep | None = None

    # -- connections of the background threads ----------------------------------------------------

    def _reader_connection(self) -> sqlite3.Connection:
        """A connection of its own to sessions.db, for a background thread: reads only."""
        db = sqlite3.connect(self._db_uri, uri=True, check_same_thread=False, isolation_level=None, timeout=5.0)
        db.text_factory = text_of_row
        return db

    # -- writing one session's index --------------------------------------------------------------

    def _store_index(self, side: sqlite3.Connection, entry: RowIndex, first: int = 0) -> None:
        """Write a row's index entry: its search rows from position `first` on (those before stay), its figures."""
        row_id = entry.row_id
        mem_id = memory_id(row_id)
        old = side.execute("SELECT rowid, text FROM search WHERE row_id = ? AND pos >= ?", (row_id, first)).fetchall()
        for rowid, text in old:  # a contentless index forgets a row only when told the text it was given
            side.execute(_FORGET, (rowid, fold(text)))
        side.execute("DELETE FROM search WHERE row_id = ? AND pos >= ?", (row_id, first))
        rows, folded = [], []
        if entry.error is None and entry.items:
            (next_id,) = side.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM search").fetchone()
            for pos, role, stamp, ts, text in entry.items:
                if pos < first:
                    continue
                rows.append((next_id, mem_id, row_id, pos, role, stamp, ts, text))
                folded.append((next_id, fold(text)))
                next_id += 1
            side.executemany(
                "INSERT INTO search (rowid, session_id, row_id, pos, role, timestamp, ts, text)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            side.executemany("INSERT INTO search_fts (rowid, folded) VALUES (?, ?)", folded)
        side.execute(
            "INSERT OR REPLACE INTO indexed_sessions (session_id, mem_id, fingerprint, message_count, preview,"
            " last_activity, last_ts, error, elements, prefix_len, prefix_hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row_id,
                mem_id,
                entry.fingerprint,
                entry.count,
                entry.preview,
                entry.last_activity,
                to_epoch(entry.last_activity),
                entry.error,
                entry.elements,
                entry.prefix_len,
                entry.prefix_hash,
            ),
        )

    def _written_fingerprint(self, row_id: str) -> str:
        """The fingerprint of a row this connection has just written. When another connection committed since the
        index last looked, it may have written this row after that commit, and the header would describe its row,
        not the one indexed: the fingerprint is then marked unsure ('?'), never equal to a row's, so the next
        refresh looks at the row and finds it as written by hashing it, without decoding it (_append_only)."""
        found = headers.fingerprint(self._db, self._columns, row_id)
        if found is None:
            return ""
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        return found[0] if version == self._data_version else "?" + found[0]

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
        fingerprint: str | None = None,
    ) -> None:
        """Index positions first.. of a session; history[i] is the stored element at position offset + i.

        `before`: (message count, preview) of the positions before `offset` when history is only a tail;
        `prefix_hash`: the hash of row[2][:-1] when the caller has it already (carried on from its last write);
        `fingerprint`: the row's, read before the row (None: a row this store has just written)."""
        text = row[2] if isinstance(row[2], str) else "[]"
        self._index_tail(
            side,
            row_id,
            history,
            first,
            offset=offset,
            before=before,
            last_activity=row[4],
            prefix=(len(text) - 1, prefix_hash or prefix_hash_of(text)),
            fingerprint=fingerprint,
            tail=(row[2], 0, 0),
        )

    def _index_tail(
        self,
        side: sqlite3.Connection,
        row_id: str,
        history: list[dict],
        first: int,
        *,
        offset: int,
        before: tuple[int, str] | None,
        last_activity: Any,
        prefix: tuple[int, str],
        fingerprint: str | None,
        tail: tuple[Any, int, int],
    ) -> None:
        """_index_session's work. prefix: (length, hash) of the history text without its closing ]; tail: (the
        part of the history text that holds elements first.. to its end, where that part starts in the text in
        characters and in bytes), for the page layout to follow."""
        known = side.execute("SELECT fingerprint FROM indexed_sessions WHERE session_id = ?", (row_id,)).fetchone()
        if fingerprint is None:
            fingerprint = self._written_fingerprint(row_id)
        entry = of_messages(row_id, fingerprint, history, offset)
        count, preview = before or (0, "")
        entry.count += count
        if not any(m.get("role") in SEARCHED_ROLES for m in history):
            entry.preview = preview
        entry.last_activity = last_activity
        entry.prefix_len, entry.prefix_hash = prefix
        builder = self._builder
        if builder is not None and row_id in builder.pending:
            # the background build has not stored this row yet: what is before `first` is not indexed, so nothing
            # may take this entry for the whole row (the build stores it whole when it gets to it)
            entry.fingerprint, entry.prefix_hash = "", None
        self._store_index(side, entry, first)
        kinds = [(m.get("role"), to_epoch(m.get("timestamp")) or 0) for m in history[first - offset :]]
        self._follow_layout(side, row_id, first, kinds, known[0] if known else None, entry.fingerprint, *tail)

    def _append_only(self, side: sqlite3.Connection, row_id: str, fingerprint: str) -> bool:
        """Index just the new messages when the row's history is the indexed one with messages appended (how the
        original saves a session after a turn), or nothing when it is the indexed one (a row this store wrote just
        as another process wrote too); False when that cannot be shown cheaply. Read through a blob handle, as
        bytes: the indexed part is hashed (about 1 ms a megabyte, without the GIL), only the new part decoded."""
        known = side.execute(
            "SELECT elements, prefix_len, prefix_hash, message_count, preview, fingerprint FROM indexed_sessions"
            " WHERE session_id = ? AND error IS NULL",
            (row_id,),
        ).fetchone()
        if known is None or not known[2] or not known[0]:
            return False
        elements, prefix_len, prefix_hash, count, preview, old = known
        old_bytes = headers.history_bytes(old.removeprefix("?"))  # the indexed text's end: appended ones follow
        if old_bytes is None or old_bytes < 2:
            return False
        db = self._db
        columns = self._select().split(", ")
        columns[2] = "rowid"  # the history itself is read in parts, below
        hasher = prefix_hasher()
        db.execute("BEGIN")  # the row's other columns and its history's bytes from one snapshot
        try:
            row = db.execute(f"SELECT {', '.join(columns)} FROM sessions WHERE id = ?", (row_id,)).fetchone()
            if row is None or self._row_problem(row_id, row)[0] is not None:
                return False
            with db.blobopen("sessions", "history", row[2], readonly=True) as blob:
                size = len(blob)
                if size < old_bytes:
                    return False
                left = old_bytes - 1
                while left > 0:
                    chunk = blob.read(min(left, _CHUNK))
                    hasher.update(chunk)
                    left -= len(chunk)
                rest = blob.read(size - old_bytes + 1)  # "]" as indexed, or ",{...},{...}]"
        except sqlite3.Error:
            return False
        finally:
            if db.in_transaction:
                db.execute("COMMIT")
        if prefix_digest(hasher) != prefix_hash:
            return False
        if size == old_bytes:
            if rest != b"]":
                return False
            side.execute(
                "UPDATE indexed_sessions SET fingerprint = ?, last_activity = ?, last_ts = ? WHERE session_id = ?",
                (fingerprint, row[4], to_epoch(row[4]), row_id),
            )
            self._follow_layout(side, row_id, elements, [], old, fingerprint, "]", prefix_len, old_bytes - 1)
            return True
        if rest[:1] != b",":
            return False
        try:
            text = rest.decode("utf-8")
            tail = hj.parse_history("[" + text[1:])
            history = [hj.decode_message(e, elements + i, lambda ref, media_type: None) for i, e in enumerate(tail)]
        except (UnicodeDecodeError, hj.HistoryFormatError):
            return False  # the full path says what is wrong
        hasher.update(rest[:-1])
        self._index_tail(
            side,
            row_id,
            history,
            elements,
            offset=elements,
            before=(count, preview),
            last_activity=row[4],
            prefix=(prefix_len + len(text) - 1, prefix_digest(hasher)),
            fingerprint=fingerprint,
            tail=(text, prefix_len, old_bytes - 1),
        )
        return True

    def _reindex_row(self, side: sqlite3.Connection, row_id: str, fingerprint: str, *, append: bool = True) -> None:
        """Index a row as it is now (only its new messages when it was only appended to, and `append`)."""
        if isinstance(row_id, BadText):  # no query can name this row again: listed as unreadable, never opened
            problem = f"sessions.db: a session whose id is not valid UTF-8 ({row_id[:60]!r}) cannot be read"
            side.execute(
                "INSERT OR REPLACE INTO indexed_sessions (session_id, mem_id, fingerprint, message_count, preview,"
                " error) VALUES (?, ?, ?, 0, '', ?)",
                (row_id, row_id, fingerprint, problem),
            )
            return
        if append and self._append_only(side, row_id, fingerprint):
            return
        row, raw = read_row(self._db, self._select(), row_id)
        if row is None:
            return
        # with the hash of its text, a later append is indexed alone
        self._store_index(side, entry_of_row(row_id, row, raw, fingerprint, self._decode, self._row_problem))

    def _unindex(self, side: sqlite3.Connection, row_id: str) -> None:
        for rowid, text in side.execute("SELECT rowid, text FROM search WHERE row_id = ?", (row_id,)).fetchall():
            side.execute(_FORGET, (rowid, fold(text)))
        side.execute("DELETE FROM search WHERE row_id = ?", (row_id,))
        side.execute("DELETE FROM indexed_sessions WHERE session_id = ?", (row_id,))
        side.execute("DELETE FROM paged_sessions WHERE session_id = ?", (row_id,))
        side.execute("DELETE FROM pages WHERE session_id = ?", (row_id,))

    # -- keeping in step ----------------------------------------------------------------------------

    def refresh_index(self) -> None:
        """Bring the side index in step with sessions.db: nothing to do unless another connection wrote."""
        with self._lock:
            version = self._db.execute("PRAGMA data_version").fetchone()[0]
            if version == self._data_version:
                return
            loaded = self._data_version is not None
            # the token kept serves a load alone: a look after that goes on from the mark of the last one
            stored, swept = (None, True) if loaded else self._stored_token()
            # read after the version and before the rows: what is committed up to it is all looked at below
            now = dbstate.content_token(self.path)
            if stored is not None and stored == now:
                # a load finding sessions.db as the index was last complete for: no row to look at (a write after
                # the token was read moves the version, and the next look sees it)
                self._data_version = version
                self._wal_mark = stored
                if not swept:
                    self._sweep_activity()
                return
            # the rows on the pages written since the last look (walscan.py), when the WAL tells; else every row:
            # after another connection wrote, the history lengths tell its saves (the original rewrites the history
            # whenever it saves); a load looks at every column's length, for a hand edit of one of them alone: an
            # unreadable row is named at load, not a moment later
            since = self._wal_mark if loaded else stored
            changes = walscan.changes(self.path, since, now) if since is not None else None
            rowids = changes.rowids if changes is not None else None
            builder = self._builder
            building = builder.pending if builder is not None and builder.running() else set()
            if rowids is None:
                quick = loaded
                indexed = self._indexed()
                rows = headers.fingerprints(self._db, self._columns, quick=quick)
                gone = [rid for rid in indexed if rid not in rows]
                # a quick look leaves a hand edit of a column beside the history to the next load: no token
                # may say the index is complete before a whole look again
                self._quick_looked = quick
            else:
                quick = False  # whole fingerprints, of those rows alone
                # every row has its entry but those the build has yet to store: then no count tells a row went
                doubt = bool(building) or (builder is not None and builder.failure is not None)
                rows, indexed, gone = self._written_rows(rowids, doubt)
            stale = [(rid, fp, size) for rid, (fp, size) in rows.items() if not headers.matches(indexed.get(rid), fp)]
            if quick and stale:  # what is stored is the whole fingerprint
                # a row whose id is not UTF-8 cannot be named in a query: it is indexed as unreadable as scanned
                whole = {
                    rid: (fp, size) if isinstance(rid, BadText) else headers.fingerprint(self._db, self._columns, rid)
                    for rid, fp, size in stale
                }
                stale = [(rid, found[0], found[1]) for rid, found in whole.items() if found is not None]
            later = [rid for rid, _, _ in stale if rid in building]
            stale = [item for item in stale if item[0] not in building]
            # no indexed row has a fingerprint of this cireil's form (a side file of an earlier cireil), and
            # much to index: emptied first, so the build does not forget each old search row one by one (as
            # costly as adding it); never so after the WAL told which rows to look at (a token of this cireil's)
            earlier = rowids is None and all(
                headers.history_bytes(fp.removeprefix("?")) is None for fp in indexed.values()
            )
            wipe = bool(indexed) and earlier and not later and sum(size for *_, size in stale) > self.INLINE_INDEX_BYTES
            background: list[tuple[str, int]] = []
            if gone or stale:
                try:
                    with self._side_transaction() as side:
                        if wipe:
                            side.execute("DELETE FROM search")
                            side.execute("INSERT INTO search_fts (search_fts) VALUES ('delete-all')")
                        for rid in gone:
                            self._unindex(side, rid)
                            if builder is not None:
                                builder.forget(rid)
                        rest, hashed = [], 0
                        for rid, fp, size in stale:
                            if isinstance(rid, BadText):  # its id is not valid UTF-8: never decoded, said unreadable
                                self._reindex_row(side, rid, fp)
                                continue
                            # only appended to (the original's usual save): its earlier text hashed, its new
                            # messages indexed, up to INLINE_APPEND_BYTES of rows here (a load after a long day)
                            hashed += size
                            tried = not wipe and rid in indexed and hashed <= self.INLINE_APPEND_BYTES
                            if not (tried and self._append_only(side, rid, fp)):
                                rest.append((rid, fp, size))
                        # what must be read whole: here when it is little, else in the background
                        if sum(size for _, _, size in rest) > self.INLINE_INDEX_BYTES:
                            background = [(rid, size) for rid, _, size in rest]
                        else:
                            for rid, fp, _ in rest:
                                self._reindex_row(side, rid, fp, append=False)
                except sqlite3.Error:
                    # the side file cannot grow (a full disk): reads go on with the index as it was, and the
                    # next look tries again
                    return
            if background:
                self._build_in_background(background)
            self._wal_mark = now
            swept = loaded or self._indexed_count() > len(stale)
            if swept:
                # another process wrote since the last look (or this is a load with an index from before): the
                # one change a fingerprint can miss that list-sessions shows is looked for off this thread, in
                # the rows written alone when the WAL says no other row can hold it
                self._sweep_activity(rowids if changes is not None and changes.whole else None)
            self._data_version = version
            if not swept:  # else the sweep notes it when it is done
                self._note_complete()

    # -- the content the index is complete for ----------------------------------------------------

    def _stored_token(self) -> tuple[str | None, bool]:
        """The token of sessions.db's content the side index was last complete for (dbstate.py), if any, and
        whether the activity sweep had been done for it (else a load that finds it sweeps again)."""
        stored = self.side.execute("SELECT token FROM index_state").fetchone()
        if stored is None:
            return None, True
        token: str = stored[0]
        return token.removesuffix(_UNSWEPT), not token.endswith(_UNSWEPT)

    def _complete_for_now(self) -> bool:
        token = dbstate.content_token(self.path)
        return token is not None and self._stored_token()[0] == token

    def _building(self) -> bool:
        builder = self._builder
        return builder is not None and (builder.failure is not None or bool(builder.pending))

    def _sweeping(self) -> bool:
        sweep = self._sweep
        return sweep is not None and (sweep.failure is not None or not sweep.swept_all())

    def _note_complete(self, side: sqlite3.Connection | None = None) -> None:
        """Keep the token of sessions.db's content as the index is complete for it, when it is: no row left to
        the background build, and no other connection wrote since the last look (data_version, read after the
        token: a write in between shows); marked unswept while the activity sweep is still to run. Else the
        token kept stays: the index was complete for that content, and what changed since lies in frames after
        it, which the next load reads (or, when the WAL cannot tell, it looks at every row). The store's lock is
        held; `side`: a side transaction to write in (else one of its own)."""
        token = dbstate.content_token(self.path)
        seen = (
            token is not None
            and self._data_version is not None
            and self._db.execute("PRAGMA data_version").fetchone()[0] == self._data_version
        )
        if seen:
            self._wal_mark = token  # every commit up to it is this store's own, or was looked at
        if not seen or self._building() or self._quick_looked:  # some rows may be as they were before
            return
        swept = not self._sweeping()
        if side is None:
            try:
                with self._side_transaction() as own:
                    self._keep_token(own, token, swept)
            except sqlite3.Error:
                pass  # a full disk: the token kept stays
        else:
            self._keep_token(side, token, swept)

    @staticmethod
    def _keep_token(side: sqlite3.Connection, token: str, swept: bool) -> None:
        stored = token if swept else token + _UNSWEPT
        side.execute("INSERT OR REPLACE INTO index_state (id, token) VALUES (1, ?)", (stored,))

    def _indexed(self) -> dict[str, str]:
        """Every indexed row's fingerprint."""
        return dict(self.side.execute("SELECT session_id, fingerprint FROM indexed_sessions").fetchall())

    def _indexed_count(self) -> int:
        return self.side.execute("SELECT count(*) FROM indexed_sessions").fetchone()[0]

    def _written_rows(self, rowids: set[int], doubt: bool) -> tuple[dict, dict[str, str], list[str]]:
        """What to compare after the WAL named the rowids written since the last look: the rows' whole
        fingerprints, their index entries, and the rows gone. Every row there was has its entry, and every row
        written since is among those named: when the row count is the entries' and the new rows', none went,
        and no other entry is read (`doubt`: rows left to the background build have none yet)."""
        rows, count = headers.at_rowids(self._db, self._columns, rowids)
        ids = list(rows)
        entries: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            sql = f"SELECT session_id, fingerprint FROM indexed_sessions WHERE session_id IN ({marks})"
            entries.update(self.side.execute(sql, part).fetchall())
        new = sum(1 for rid in rows if rid not in entries)
        if not doubt and count == self._indexed_count() + new:
            return rows, entries, []
        indexed = self._indexed()
        rows, present = headers.with_unknown(self._db, self._columns, rowids, set() if doubt else set(indexed))
        return rows, indexed, [rid for rid in indexed if rid not in present]

    def _build_in_background(self, rows: list[tuple[str, int]]) -> None:
        builder = self._builder
        if builder is not None and builder.add(rows):
            return
        if builder is not None and builder.failure is not None:
            return  # it failed (a full disk): the index stays as it is, and index_status says why
        self._builder = IndexBuilder(self, self._reader_connection, rows)
        self._builder.start()

    def _store_built(self, batch: list[RowIndex], builder: IndexBuilder) -> None:
        """The background builder's batch, stored under the store's lock: a row changed since the builder read
        it (this store wrote it, or another process did) is indexed here again, as it is now."""
        try:
            with self._side_transaction() as side:
                for entry in batch:
                    if entry.row_id not in builder.pending:
                        continue
                    now = headers.fingerprint(self._db, self._columns, entry.row_id)
                    if now is None:
                        self._unindex(side, entry.row_id)
                    elif now[0] != entry.fingerprint:
                        self._reindex_row(side, entry.row_id, now[0])
                    else:
                        self._store_index(side, entry)
                    builder.pending.discard(entry.row_id)
                    builder.done += 1
        except sqlite3.Error as exc:
            builder.failure = f"cireil-side.db could not be written: {exc}"
            builder.stop(timeout=0)
            self._data_version = None

    def _sweep_activity(self, rowids: set[int] | None = None) -> None:
        if self._sweep is None:
            path = self.side.execute("PRAGMA database_list").fetchone()[2]  # '' for a side file in memory
            self._sweep = ActivitySweep(self, self._reader_connection, Path(path) if path else None)
        self._sweep.request(rowids)

    def _apply_activity(self, rows: list[tuple[str, Any]]) -> None:
        """The sweep's last_activity values, where they differ from the indexed ones (the store's lock is held)."""
        if not rows:
            return
        known = dict(self.side.execute("SELECT session_id, last_activity FROM indexed_sessions").fetchall())
        changed = [(value, to_epoch(value), rid) for rid, value in rows if rid in known and known[rid] != value]
        if changed:
            try:
                with self._side_transaction() as side:
                    side.executemany(
                        "UPDATE indexed_sessions SET last_activity = ?, last_ts = ? WHERE session_id = ?", changed
                    )
            except sqlite3.Error:
                self._data_version = None  # looked at again at the next refresh

    def index_status(self) -> dict | None:
        """What list-sessions and query-sessions add while the index is being built in the background (they
        answer from the sessions indexed so far), or None when it is complete."""
        builder = self._builder
        if builder is None or (builder.finished and builder.failure is None):
            return None
        progress = {"indexed": builder.done, "sessions": builder.total}
        if builder.failure is not None:
            return {
                "indexing": {**progress, "failed": builder.failure},
                "note": (
                    f"The session index could not be completed ({builder.failure}): these results cover only "
                    f"the {builder.done} of {builder.total} sessions indexed. Free disk space, then load the agent "
                    "again."
                ),
            }
        return {
            "indexing": progress,
            "note": (
                f"Still indexing sessions in the background ({builder.done} of {builder.total} done): these "
                "results cover only the sessions indexed so far. Ask again in a moment for all of them."
            ),
        }

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Wait for the background build and sweep (tests, benchmarks); True when both are done."""
        builder, sweep = self._builder, self._sweep
        done = builder.wait(timeout) if builder is not None else True
        return (sweep.wait(timeout) if sweep is not None else True) and done

    def _stop_background(self) -> None:
        """End the background threads (close(): never with the store's lock held, they take it)."""
        for worker in (self._builder, self._sweep):
            if worker is not None:
                worker.stop()

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
        where, args = _filters(
            "session_id", origin, since, "ts", "CASE timestamp WHEN '' THEN cireil_iso(ts) ELSE timestamp END"
        )
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
                    f"SELECT rowid, session_id, role, timestamp, text, ts FROM search"
                    f" WHERE rowid IN ({','.join('?' * len(page))})",
                    page,
                )
            }
        matches = []
        for rowid in page:
            session_id, role, timestamp, text, ts = rows[rowid]
            item: dict[str, Any] = {"channel": channel_of(session_id), "content": text, "role": role}
            item["sessionId"] = session_id
            timestamp = shown_time(timestamp, ts)
            if timestamp:
                item["timestamp"] = timestamp
            matches.append(item)
        return matches, len(found)
