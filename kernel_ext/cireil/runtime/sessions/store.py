"""SessionStore: one agent's sessions in the original runtime's `sessions.db`, cireil's extras beside it.

sessions.db keeps the original's schema and JSON exactly (upstream-formats §4–7): a database the original
made is used as it is, a new one is made as the original would make it, and only session rows,
`images`/`summaries` rows of sessions written on purpose and `cron_jobs` rows of `schedule` change.
Whatever cireil needs beyond that (the query-sessions index, per-message extras) lives in its side file
(sidestore.py), rebuilt from sessions.db when missing or stale.

Sharing the agent with a running original (§6): a turn is written once, whole, when it ends, in one short
`BEGIN IMMEDIATE` transaction that checks the row is what this session was loaded from (SessionConflict
otherwise) and, with the write lock held, asks afresh whether the original runs (holders.py) and whether it
would write this session back from its memory (SessionReadOnly then: its Discord sessions, and the session a
`main` cron job or the heartbeat runs in). A write encodes only what changed since the last one (rowtext.py).
The runtime loop thread and the kernel's main thread share the connections behind one lock.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import json
import os
import re
import secrets
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..files.pictures import Unreadable, stored_image
from ..files.safefs import read_host_file
from . import dbstate, walscan
from . import history_json as hj
from . import upstream_schema as us
from .errors import SessionConflict, SessionError, SessionFormatError, SessionReadOnly, SessionStoreError
from .holders import Holder, HolderProbe
from .indexbuild import gc_paused, prefix_digest, prefix_hasher
from .messages import now_iso
from .rowids import channel_for, id_problem, memory_id, meta_for_new, stored_id
from .rowtext import Plan, RowText, preview_before, signature
from .sideindex import BadText, SideIndex, channel_of, preview_of, shown_time, to_epoch
from .sideindex import text_of_row as _text
from .sidestore import SIDE_FILE, open_memory_side, open_side
from .state import Session, platform_of

IMAGES_DIR = "images"
_ROW = "channel, meta, history, opened_files, last_activity, history_cursor, active_file_sections"
_PRUNE_WARNED = "prune_warned_at"  # cireil's name for the original's meta.lastContextWarningCursor
# How long after a cireil first saw the original hold sessions.db its load is surely done: it opens the file
# and reads every row within milliseconds (`initDb` then `loadSessions`, upstream-formats §6.1); the snapshot
# of that read starts before this margin is up, whatever the database's size
_SETTLE_S = 2.0


__all__ = [
    "SessionConflict",
    "SessionError",
    "SessionFormatError",
    "SessionReadOnly",
    "SessionStore",
    "SessionStoreError",
    "channel_of",
    "preview_of",
    "to_epoch",
]


def _rollback(db: sqlite3.Connection) -> None:
    """Undo the open transaction, if SQLite has not already (it rolls back by itself on a full disk: a second
    ROLLBACK then fails with "no transaction is active", hiding why the write failed)."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


def _write_problem(exc: BaseException) -> str:
    """What a failed write of a sessions file means, and what to do, in words."""
    text = str(exc)
    code = getattr(exc, "errno", None)
    if (isinstance(exc, sqlite3.Error) and "full" in text) or code in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return f"the disk is full ({text}); free some space, then try again"
    if "readonly" in text or "read-only" in text or code in (errno.EPERM, errno.EACCES, errno.EROFS):
        return f"it is read-only ({text}); make the file and its folder writable, then try again"
    if "locked" in text or "busy" in text:
        return f"another process held it locked for 5 s ({text}); try again"
    return f"the write failed ({text}); check the disk, then try again"


def _summaries_sig(summaries: list[dict]) -> str:
    keys = ("slug", "displayName", "startMessageId", "endMessageId", "preserve", "summary")
    return json.dumps(sorted(([s.get(k) for k in keys] for s in summaries), key=str))


def select_of(columns: list[str]) -> str:
    """The SELECT list of a row as the store reads it, from the columns sessions.db has (older files lack some)."""
    have = set(columns)
    defaults = {"last_activity": "NULL", "history_cursor": "0", "active_file_sections": "'{}'"}
    return ", ".join(c if c in have else defaults[c] for c in _ROW.split(", "))


def row_problem(row_id: str, row: tuple) -> tuple[str | None, Any]:
    """(what is wrong with the row apart from its history, or None; its meta)."""
    bad = [name for name, value in zip(_ROW.split(", "), row, strict=True) if isinstance(value, BadText)]
    if isinstance(row_id, BadText):
        bad.insert(0, "id")
    if bad:
        return f"{' and '.join(bad)} {'is' if len(bad) == 1 else 'are'} not valid UTF-8 text", None
    try:
        meta = json.loads(row[1])
    except (ValueError, TypeError):
        meta = None
    problem = id_problem(row_id, row[0], meta)
    if problem is None:
        try:
            opened = json.loads(row[3])
        except (ValueError, TypeError):
            opened = None
        if not isinstance(opened, list) or not all(isinstance(p, str) for p in opened):
            problem = "opened_files is not a JSON array of strings"
    return problem, meta


def decode_row(row_id: str, row: tuple, *, images: Any = None) -> tuple[list[dict], list, dict]:
    """(memory history, the stored elements as parsed, meta) of a row as the store reads it; SessionFormatError
    naming the problem. images: the loader of a stored picture's bytes (None or False: no picture is read)."""
    history, elements, meta, _ = _decoded(
        row_id, row, lambda text: (hj.parse_history(text), None), images or (lambda ref, media_type: None)
    )
    return history, elements, meta


def _decoded(row_id: str, row: tuple, parse: Any, loader: Any) -> tuple[list[dict], list, dict, Any]:
    """decode_row, the history parsed by `parse` (text -> elements and what else it tells), and that too."""
    problem, meta = row_problem(row_id, row)
    if problem is None:
        try:
            elements, told = parse(row[2] if isinstance(row[2], str) else "")
            history = [hj.decode_message(e, i, loader) for i, e in enumerate(elements)]
        except hj.HistoryFormatError as exc:
            problem = str(exc)
    if problem is not None:
        raise SessionFormatError(f"sessions.db: session {memory_id(row_id)}: {problem}; it was left unchanged")
    return history, elements, meta, told


def _weak_match(store: SessionStore) -> Any:
    """The SQL function behind query-sessions, holding its store weakly: a connection keeps the functions
    registered on it alive, and a bound method would keep the store (and so both databases' files) open
    after the agent is gone, a cycle the garbage collector cannot see into."""
    ref = weakref.ref(store)

    def match(text: str | None) -> bool:
        owner = ref()
        return owner is not None and owner._match(text)

    return match


class SessionStore(SideIndex):
    """Thread-safe: every public method holds the store's lock for its whole database work."""

    def __init__(self, db_path: Path) -> None:
        self.path = Path(db_path)
        self.agent_dir = self.path.parent
        self.images_dir = self.agent_dir / IMAGES_DIR
        self._lock = threading.RLock()
        self._matcher: Any = None  # the query being run, for the SQL function below
        self._probe = HolderProbe(self.path, self.agent_dir / SIDE_FILE)
        self._data_version: int | None = None
        self.notes: list[str] = []  # what happened on opening, for load_notes
        self.created = False  # set by _open_upstream
        self._db = self._open_upstream()
        try:
            self.current = us.is_current(self._db)
            self._columns = us.columns(self._db, "sessions")
            self._has_summaries = "summaries" in us.tables(self._db)
            self._sweep_image_temps()
            self.side = self._open_side()
            self.side.create_function("cireil_match", 1, _weak_match(self), deterministic=True)
            # query-sessions' since, compared as text: a search row's time as shown (it depends on the local zone)
            self.side.create_function("cireil_iso", 1, lambda ts: shown_time("", ts))
            self.refresh_index()
        except sqlite3.Error as exc:
            self._db.close()
            raise SessionStoreError(f"{self.path}: cannot be read: {exc}") from None

    # -- opening ----------------------------------------------------------------------------------

    def _open_upstream(self) -> sqlite3.Connection:
        path = self.path
        new = not path.exists() or path.stat().st_size == 0
        self.created = new  # made by this store just now: no other process can have it open yet
        if new:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)  # private before SQLite writes a byte
                os.close(fd)
                os.chmod(path, 0o600)
            except OSError as exc:
                raise SessionStoreError(f"{path}: cannot be created: {_write_problem(exc)}") from None
        try:
            db = self._connect(path, new)
            if new:
                db.execute("PRAGMA journal_mode=WAL")
                us.create(db)
                return db
            found = us.tables(db)
        except sqlite3.Error as exc:
            raise SessionStoreError(f"{path}: cannot be opened: {exc}") from None
        if us.is_old_cireil(found, us.columns(db, "sessions") if "sessions" in found else []):
            db.close()
            # only an agent an earlier cireil wrote needs the converter: every other load skips importing it
            from .oldcireil import convert

            try:
                backup = convert(path, type(self))
            except Exception as exc:
                raise SessionStoreError(
                    f"{path} is in the private format of an earlier cireil and could not be converted to the "
                    f"original runtime's ({exc}); move it aside to start a new one"
                ) from None
            self.notes.append(
                f"converted from an earlier cireil's private format to the original runtime's; "
                f"the old file is kept as {backup.name}"
            )
            return self._open_upstream()
        problem = us.schema_problem(db)
        if problem is not None:
            db.close()
            raise SessionStoreError(f"{path}: not a CireilClaw sessions database: {problem}")
        return db

    def _open_side(self) -> sqlite3.Connection:
        """cireil's side file; in memory when the folder (or the file) cannot be written."""
        if self.read_only is None:
            try:
                side = open_side(self.agent_dir)
                side.execute("BEGIN IMMEDIATE")  # writable? (a read-only file opens, then fails at the index)
                side.execute("ROLLBACK")
                return side
            except (OSError, sqlite3.Error) as exc:
                self.notes.append(
                    f"{self.agent_dir / SIDE_FILE} cannot be written ({getattr(exc, 'strerror', None) or exc}): "
                    "the search index is kept in memory for this load"
                )
        else:
            self.notes.append(
                f"{self.path} is read-only ({self.read_only}): sessions are read and searched, none is saved; "
                "make the file and its folder writable, then load again, to save"
            )
        return open_memory_side()

    def _connect(self, path: Path, new: bool) -> sqlite3.Connection:
        """sessions.db for reading and writing; else (a read-only file, folder or mount) for reading only, with
        `read_only` saying why, so that every session can still be read and searched."""
        self.read_only: str | None = None
        # mode=rw: never a silently created empty file in place of a missing one
        modes = ("rw",) if new else ("rw", "ro", "ro&immutable=1")
        for mode in modes:
            db = sqlite3.connect(
                f"file:{path}?mode={mode}", uri=True, check_same_thread=False, isolation_level=None, timeout=5.0
            )
            db.text_factory = _text  # one row of bytes that are not UTF-8 must not make every read fail
            try:
                db.execute("PRAGMA foreign_keys=ON")
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
                # SQLite opens a file of a read-only mount "rw" all the same and fails only at the first write
                if mode == "rw" and not new and not os.access(path, os.W_OK):
                    raise sqlite3.OperationalError(f"{path.name} is read-only")
                if mode == "rw" and not new and not os.access(path.parent, os.W_OK):
                    raise sqlite3.OperationalError(f"its folder {path.parent} is read-only")
            except sqlite3.Error as exc:
                db.close()
                if mode == modes[-1] or "locked" in str(exc) or "busy" in str(exc):
                    raise
                if mode == "rw":
                    self.read_only = str(exc)
                continue
            self._db_uri = f"file:{path}?mode={mode}"  # how the index's background threads open it too
            return db
        raise AssertionError("unreachable")

    @classmethod
    def for_agent(cls, agent_dir: Path) -> SessionStore:
        return cls(Path(agent_dir) / "sessions.db")

    def close(self) -> None:
        self._stop_background()  # the index's threads end first: they take the lock
        with self._lock:
            try:
                self._note_complete()
                kept = self._complete_for_now()
                swept = self._stored_token()[1]
            except sqlite3.Error:
                kept = False
            self._db.close()
            if kept:
                self._after_last_close(swept)
            self.side.close()

    def _after_last_close(self, swept: bool) -> None:
        """The last connection to close checkpoints the WAL into the file and deletes it, which moves the
        file's token (dbstate.py): the index is complete for the file as that close left it. Taken when the
        WAL is gone: another process that opened the file after this close, wrote and closed again, all
        before the stat below, would be missed (it would have to do all three within microseconds)."""
        token = dbstate.content_token(self.path)
        if token is None or dbstate.has_frames(token) or os.path.exists(f"{self.path}-wal"):
            return
        try:
            with self._side_transaction() as side:
                self._keep_token(side, token, swept)
        except sqlite3.Error:
            pass  # the token kept stays

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _side_transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self.side.execute("BEGIN IMMEDIATE")
            try:
                yield self.side
                self.side.execute("COMMIT")  # inside: a COMMIT that fails (a full disk) is rolled back too
            except BaseException:
                _rollback(self.side)
                raise

    def _match(self, text: str | None) -> bool:
        return text is not None and self._matcher.test(text)

    def holders(self) -> list[int]:
        """Other processes with sessions.db open that are not cireil (the original's `run`, most likely), asked
        afresh (holders.py): a cached answer let turns be stored just as the original loaded the session."""
        return [holder.pid for holder, _ in self._originals()]

    def _originals(self) -> list[tuple[Holder, float]]:
        """The running originals, each with the Unix time a cireil first saw it hold sessions.db."""
        found = [h for h in self._probe.holders() if not h.cireil]
        if not found:
            return []
        now = time.time()
        seen: dict[tuple[int, int], float] = {}
        try:
            with self._side_transaction() as side:
                for holder in found:
                    side.execute(
                        "INSERT OR IGNORE INTO original_holders (pid, started, first_seen) VALUES (?, ?, ?)",
                        (holder.pid, holder.started, now),
                    )
                    row = side.execute(
                        "SELECT first_seen FROM original_holders WHERE pid = ? AND started = ?",
                        (holder.pid, holder.started),
                    ).fetchone()
                    seen[(holder.pid, holder.started)] = row[0] if row else now
                # a holder gone is a process that loaded its sessions and has ended: when it (or another)
                # opens the file again, it loads again, and is first seen then
                live = [(h.pid, h.started) for h in found]
                for pid, started in side.execute("SELECT pid, started FROM original_holders").fetchall():
                    if (pid, started) not in live:
                        side.execute("DELETE FROM original_holders WHERE pid = ? AND started = ?", (pid, started))
        except sqlite3.Error:
            pass  # no side file to remember it in: each holder counts as first seen now (the careful answer)
        return [(h, seen.get((h.pid, h.started), now)) for h in found]

    # -- reading rows -----------------------------------------------------------------------------

    def _select(self) -> str:
        return select_of(self._columns)

    def _raw_row(self, db: sqlite3.Connection, row_id: str) -> tuple | None:
        return db.execute(f"SELECT {self._select()} FROM sessions WHERE id = ?", (row_id,)).fetchone()

    def _load_image(self, ref: str, media_type: str) -> bytes | None:
        if not re.fullmatch(r"[0-9a-zA-Z]+", ref):
            return None
        try:  # inside images/ only, no symlink, a regular file, size-capped: a row may name anything there
            return stored_image(self.images_dir, f"{ref}{hj.ext_for(media_type)}")
        except Unreadable:
            return None

    @staticmethod
    def _row_problem(row_id: str, row: tuple) -> tuple[str | None, Any]:
        return row_problem(row_id, row)

    def _decode(self, row_id: str, row: tuple, *, images: bool = True) -> tuple[list[dict], list, dict]:
        """(memory history, the stored elements as parsed, meta); SessionFormatError naming the problem."""
        return decode_row(row_id, row, images=self._load_image if images else None)

    def _decode_spans(self, row_id: str, row: tuple) -> tuple[list[dict], list, dict, list[tuple[int, int]] | None]:
        """_decode, with where each element's text lies in the row's history text."""
        return _decoded(row_id, row, hj.parse_history_spans, self._load_image)

    def get(self, session_id: str) -> Session | None:
        """The stored session, or None; SessionFormatError (one line) when its row cannot be read."""
        row_id = stored_id(session_id)
        if row_id is None:
            return None
        with self._lock:
            version = self._db.execute("PRAGMA data_version").fetchone()[0]  # before the read: never too new
            token = dbstate.content_token(self.path)  # and this too: the WAL after it holds every later write
            row = self._raw_row(self._db, row_id)
            if row is None:
                return None
            with gc_paused():  # tens of thousands of new containers: each GC pass would walk them all again
                history, elements, meta, spans = self._decode_spans(row_id, row)
            extras = {
                pos: (fp, json.loads(ex))
                for pos, fp, ex in self.side.execute(
                    "SELECT pos, fingerprint, extras FROM message_extras WHERE session_id = ?", (row_id,)
                )
            }
            side = self.side.execute(
                "SELECT created, meta, summaries FROM session_extras WHERE session_id = ?", (row_id,)
            ).fetchone()
            summaries = self._summaries(row_id)
        side_extras: dict[int, dict] = {}
        for pos, (fp, extra) in extras.items():
            if pos < len(elements) and signature(elements[pos]) == fp:
                side_extras[pos] = copy.deepcopy(extra)  # as encode_message gives it back for this message
                parts = history[pos].get("content")
                for index, keys in extra.pop("parts", {}).items():
                    if isinstance(parts, list) and int(index) < len(parts):
                        parts[int(index)].update(keys)
                history[pos].update(extra)  # an extra "id" replaces the positional one; _noid keeps it unwritten
        try:
            sections = json.loads(row[6])
        except (ValueError, TypeError):
            sections = {}
        if not isinstance(sections, dict):
            sections = {}
        cireil_meta = json.loads(side[1]) if side else {}
        if isinstance(meta.get("lastContextWarningCursor"), int):
            cireil_meta[_PRUNE_WARNED] = meta["lastContextWarningCursor"]
        cursor = row[5] if isinstance(row[5], int) else 0
        session = Session(
            id=session_id,
            platform=platform_of(session_id),
            opened_files=json.loads(row[3]),
            active_sections={k: list(v) for k, v in sections.items() if isinstance(v, list)},
            history=history,
            cursor=max(0, min(cursor, len(history))),
            summaries=summaries + (json.loads(side[2]) if side else []),
            last_activity=row[4],
            created=side[0] if side else None,
            provider=meta.get("selectedProvider"),
            model=meta.get("selectedModel"),
            meta=cireil_meta,
        )
        session.store_state = {"row_id": row_id, "base": tuple(row), "meta": meta, "count": len(elements)}
        session.store_state["data_version"] = version
        session.store_state["token"] = token
        session.store_state["committed"] = {id(m) for m in history}
        session.store_state["summaries_sig"] = _summaries_sig(summaries)
        # each message's stored element and text: an unchanged message is written back byte for byte, unencoded
        with gc_paused():
            session.store_state["rows"] = RowText.loaded(history, elements, row[2], spans, side_extras)
        return session

    def _summaries(self, row_id: str) -> list[dict]:
        if not self._has_summaries:
            return []
        out = []
        for slug, name, start, end, preserve, summary in self._db.execute(
            "SELECT slug, display_name, start_message_id, end_message_id, preserve, summary"
            " FROM summaries WHERE session_id = ? ORDER BY id",
            (row_id,),
        ):
            try:
                kept = json.loads(preserve)
            except (ValueError, TypeError):
                kept = []
            out.append(
                {
                    "slug": slug,
                    "displayName": name,
                    "startMessageId": start,
                    "endMessageId": end,
                    "preserve": kept if isinstance(kept, list) else [],
                    "summary": summary,
                }
            )
        return out

    def open_session(self, session_id: str, *, platform: str | None = None) -> Session:
        """The stored session, or a new one in memory: its row is written with its first commit."""
        with self._lock:
            found = self.get(session_id)
            if found is not None:
                return found
        return Session(id=session_id, platform=platform or platform_of(session_id), created=now_iso())

    def exists(self, session_id: str) -> bool:
        row_id = stored_id(session_id)
        if row_id is None:
            return False
        with self._lock:
            return self._db.execute("SELECT 1 FROM sessions WHERE id = ?", (row_id,)).fetchone() is not None

    def session_ids(self) -> list[str]:
        with self._lock:
            return sorted(memory_id(r[0]) for r in self._db.execute("SELECT id FROM sessions"))

    # -- writing ----------------------------------------------------------------------------------

    def read_only_reason(self, session: Session) -> str | None:
        """Why this session must not be written now (§6.3), or None: asked before a turn starts, and again
        inside the transaction that stores it (`_sharing_problem`), where the answer is final."""
        row_id = stored_id(session.id)
        if row_id is None:
            return None
        fixed = self._fixed_reason(session, row_id)
        if fixed is not None:
            return fixed
        with self._lock:
            return self._sharing_problem(self._db, session.id, row_id)

    def conflict_reason(self, session: Session) -> str | None:
        """Why a turn in this session would end refused by the commit's compare-and-swap (another process wrote
        the row since cireil read it, or the row cannot be read), or None: asked before the turn starts, so the
        model is not called for a turn that could not be stored. Costs one row read, and only after another
        connection wrote to sessions.db (PRAGMA data_version)."""
        row_id = stored_id(session.id)
        if row_id is None:
            return None
        state = getattr(session, "store_state", None)
        base = state.get("base") if state else None
        with self._lock:
            version = self._db.execute("PRAGMA data_version").fetchone()[0]
            if state is not None and base is not None and len(base) > 1 and state.get("data_version") == version:
                return None
            if state is not None and base is not None and len(base) > 1 and self._unwritten_since(state, row_id):
                state["data_version"] = version
                return None
            current = self._raw_row(self._db, row_id)
        if (tuple(current) if current else None) == (tuple(base) if base else None):
            if state is not None:
                state["data_version"] = version
            return None
        return (
            f"session {session.id} changed in sessions.db since cireil read it (another process wrote it, or its "
            "row cannot be read); nothing was sent or stored: cireil reads it again, send the message again to continue"
        )

    def _unwritten_since(self, state: dict, row_id: str) -> bool:
        """Whether no commit wrote the row since the content token the session's base was read or written at
        (state["token"]), as the WAL tells it (walscan.Changes: `whole`, and its rowid not among those written):
        then the row is still the base, without reading a history of megabytes back to compare. The caller holds
        the lock and read PRAGMA data_version before this; the token is moved on to now."""
        since = state.get("token")
        if since is None:
            return False
        now = dbstate.content_token(self.path)
        found = walscan.changes(self.path, since, now)
        if found is None or not found.whole:
            return False
        rowid = self._db.execute("SELECT rowid FROM sessions WHERE id = ?", (row_id,)).fetchone()
        if rowid is None or rowid[0] in found.rowids:
            return False
        state["token"] = now
        return True

    def _fixed_reason(self, session: Session, row_id: str) -> str | None:
        if not self.current:
            return (
                f"sessions.db was last opened by an older CireilClaw (its migrations are not all applied); "
                f"cireil only reads it, session {session.id} is read-only until the original has opened it"
            )
        state = getattr(session, "store_state", None) or {}
        if state.get("legacy"):
            return f"session {session.id} has a legacy id the original renames at load; cireil leaves it read-only"
        return None

    def _sharing_problem(self, db: sqlite3.Connection, shown: str, row_id: str) -> str | None:
        """Why a running original would overwrite what cireil stores in this session, or None.

        The original reads every row once at its start and later writes whole rows back from memory
        (upstream-formats §6.1-6.2), but only in three cases: a Discord session at each of its messages; the
        session a `main` cron job or the heartbeat runs in (named by its target, or picked by target "last":
        the loaded session with the latest Discord activity, the first loaded one on a tie); nothing else
        (`respond` cannot reach a notebook, TUI or internal session: `run` has no handler to send there). A
        session none of these can pick is never written by it, loaded or not, so cireil's writes there last."""
        originals = self._originals()
        if not originals:
            return None
        pids = ", ".join(str(holder.pid) for holder, _ in originals)
        advice = (
            "it is read-only here while that process runs: stop the original to continue here, or continue in a "
            "session of cireil's own that it never writes (a new notebook session: agent.use_session('NAME'))"
        )
        channel = channel_for(row_id)
        if channel in ("discord", "matrix"):
            return (
                f"session {shown} belongs to the original runtime, which has sessions.db open (pid {pids}) and "
                f"writes this {channel.title()} session from its memory at every message; {advice}"
            )
        in_memory = self._in_memory_of(row_id, [seen for _, seen in originals])
        for what, target in self._run_targets():
            picked = target == row_id
            if target == "last" and in_memory:
                picked = self._could_be_last(db, row_id)
            if picked:
                how = "" if target == row_id else ' (target "last": no session has newer Discord activity)'
                return (
                    f"session {shown} is where {what}{how} runs, and the original runtime (running: pid {pids}) "
                    f"saves it from its memory after each run, overwriting what cireil stores; {advice}"
                )
        return None

    def _in_memory_of(self, row_id: str, first_seen: list[float]) -> bool:
        """Whether a running original may hold this row in memory: yes unless cireil created the row more than
        the settling margin after every one of them was first seen holding the file (it had loaded by then)."""
        row = self.side.execute("SELECT born FROM row_births WHERE session_id = ?", (row_id,)).fetchone()
        if row is None:
            return self._raw_row(self._db, row_id) is not None  # made by someone else, or before cireil noted it
        return row[0] <= max(first_seen) + _SETTLE_S

    @staticmethod
    def _could_be_last(db: sqlite3.Connection, row_id: str) -> bool:
        """Whether target "last" may pick this session: no other row has newer activity (only the original's
        Discord messages set it, and cireil never does, §4.4), so ties (all unset) count as possible."""
        mine = db.execute("SELECT last_activity FROM sessions WHERE id = ?", (row_id,)).fetchone()
        if mine is None:
            return False
        newer = db.execute(
            "SELECT 1 FROM sessions WHERE id != ? AND last_activity IS NOT NULL AND (? IS NULL OR last_activity > ?)"
            " LIMIT 1",
            (row_id, mine[0], mine[0]),
        ).fetchone()
        return newer is None

    def last_active(self) -> str | None:
        """Target "last" as the original resolves it (agent/index.ts resolveTarget): the loaded session with the
        latest activity, the first loaded (row order) on a tie; rows it skips at load (another channel) out.

        The activities come from the side index once it holds every row: sessions.db stores last_activity after
        the history, so reading it there walks every history's overflow pages (60 ms at 283 MB, for each
        respond to "last" and each job run there). The index follows each row whose history changed at once,
        and a new time alone (a Discord turn of the original that failed) after its sweep, a moment later."""
        best: tuple[float, str] | None = None
        self.refresh_index()
        with self._lock:
            loaded = " WHERE channel IN ('discord', 'matrix', 'tui', 'internal') ORDER BY rowid"
            ids = [row_id for (row_id,) in self._db.execute(f"SELECT id FROM sessions{loaded}")]
            builder = self._builder
            known = dict(self.side.execute("SELECT session_id, last_activity FROM indexed_sessions").fetchall())
            if (builder is None or builder.finished) and all(row_id in known for row_id in ids):
                rows = [(row_id, known[row_id]) for row_id in ids]
            else:  # the first index is being built: read from sessions.db
                rows = self._db.execute(f"SELECT id, last_activity FROM sessions{loaded}").fetchall()
        for row_id, activity in rows:
            if isinstance(row_id, BadText) or isinstance(activity, BadText):
                continue
            epoch = to_epoch(activity) or 0.0  # NULL and what Date.parse cannot read count as 0
            if best is None or epoch > best[0]:
                best = (epoch, row_id)
        return memory_id(best[1]) if best is not None else None

    def _run_targets(self) -> list[tuple[str, str]]:
        """What of the original runs inside a session and saves it (upstream-formats §3.4, §3.5): enabled
        `main` cron jobs and the enabled heartbeat, each with its target ("last" when unset), as (what, target)."""
        import tomllib

        found: list[tuple[str, str]] = []
        config = self.agent_dir / "config"
        try:
            cron = tomllib.loads(read_host_file(config / "cron.toml").decode("utf-8"))  # a FIFO: no hang
        except (OSError, ValueError, RecursionError):
            cron = {}
        jobs = cron.get("jobs") if isinstance(cron.get("jobs"), list) else []
        for job in jobs:
            if not isinstance(job, dict) or job.get("execution") != "main" or job.get("enabled", True) is False:
                continue
            target = job.get("target", "last")
            if isinstance(target, str):
                found.append((f"the cron job {job.get('id')!r} (config/cron.toml)", target))
        try:
            heartbeat = tomllib.loads(read_host_file(config / "heartbeat.toml").decode("utf-8"))  # a FIFO: no hang
        except (OSError, ValueError, RecursionError):
            heartbeat = {}
        target = heartbeat.get("target", "last")
        if heartbeat.get("enabled") is True and isinstance(target, str):
            found.append(("the heartbeat (config/heartbeat.toml)", target))
        return found

    def _sweep_image_temps(self) -> None:
        """Temp files of image writes a killed process left (never named as images): gone after an hour."""
        cutoff = time.time() - 3600
        for temp in self.images_dir.glob(".*.tmp") if self.images_dir.is_dir() else ():
            try:
                if temp.is_file() and temp.stat().st_mtime < cutoff:
                    temp.unlink()
            except OSError:
                continue

    def _store_image(self, data: bytes, media_type: str) -> str:
        """BLAKE3-named file under images/, written (atomically, never overwritten) before any row names it."""
        import blake3  # the original names image files by BLAKE3 of their bytes (§4.7)

        ref = blake3.blake3(data).hexdigest()
        target = self.images_dir / f"{ref}{hj.ext_for(media_type)}"
        if not target.exists():
            self.images_dir.mkdir(parents=True, exist_ok=True)
            temp = self.images_dir / f".{ref}.{secrets.token_hex(4)}.tmp"
            try:
                temp.write_bytes(data)
                os.replace(temp, target)
            except OSError:
                temp.unlink(missing_ok=True)  # no half-written image is left behind
                raise
        return ref

    def _not_written(
        self, what: str, exc: BaseException, *, ro: bool = False, where: Path | None = None
    ) -> SessionError:
        """One line for a write that failed: what, which file, why, what to do; nothing was changed."""
        why = _write_problem(exc)
        if ro:
            why = f"it was opened read-only ({exc}); make the file and its folder writable, then load the agent again"
        return SessionError(f"{what} was not written to {where or self.path}: {why} (nothing was changed)")

    def _upstream_meta(self, session: Session, base_meta: dict) -> dict:
        """The row's meta: the original's keys in its order, unset ones omitted, never null or empty (§4.4)."""
        meta = dict(base_meta)
        for key, value in (("selectedProvider", session.provider), ("selectedModel", session.model)):
            meta.pop(key, None)
            if isinstance(value, str) and value:
                meta[key] = value
        warned = session.meta.get(_PRUNE_WARNED)
        meta.pop("lastContextWarningCursor", None)
        if isinstance(warned, int) and not isinstance(warned, bool) and warned >= 0:
            meta["lastContextWarningCursor"] = warned
        order = (
            "channelId",
            "guildId",
            "parentChannelId",
            "roomId",
            "isNsfw",
            "historyBarrier",
            "lastContextWarningCursor",
            "selectedProvider",
            "selectedModel",
        )
        return {k: meta[k] for k in order if k in meta} | {k: v for k, v in meta.items() if k not in order}

    def _write(self, session: Session, *, committed_only: bool) -> None:
        # one critical section from reading what the row was based on to recording what it is now: two threads
        # saving one session (a widget's call and a turn) must not see each other as another process
        with self._lock:
            self._write_locked(session, committed_only=committed_only)

    def _write_locked(self, session: Session, *, committed_only: bool) -> None:
        row_id = stored_id(session.id)
        if row_id is None:
            return  # isolated cron runs are never saved (§5)
        state = getattr(session, "store_state", None)
        if state is None:
            state = {"row_id": row_id, "base": None, "meta": meta_for_new(row_id), "count": 0, "committed": set()}
            session.store_state = state
        channel = channel_for(row_id)
        committed = state["committed"]
        rows: RowText = state.setdefault("rows", RowText())

        def encode(message: dict, refs: list[tuple[str, str]]) -> tuple[dict | None, dict]:
            try:
                return hj.encode_message(message, channel, self._store_image, refs)
            except OSError as exc:  # an image file could not be written (a full disk): no row names it yet
                raise self._not_written(f"session {session.id}", exc, where=self.images_dir) from None

        # everything before the database transaction: JSON, image files (written before their rows); no cyclic
        # collection meanwhile: copying a long session's kept lists would set off several, each walking them all
        with gc_paused():
            plan = rows.plan(
                session.history, session.cursor, session.touched, committed if committed_only else None, encode
            )
        texts, refs = plan.texts, plan.refs
        written_ids, cursor, first_change = plan.written_ids, plan.cursor, plan.first_change
        history_text = plan.history_text
        meta_text = hj.dumps(self._upstream_meta(session, state["meta"]))
        base = state["base"]
        # only a Discord message moves it in the original (§4.4), and its target "last" picks by it: cireil,
        # which runs no Discord turn, keeps what the row holds (NULL for a row it creates)
        last_activity = base[4] if base and len(base) > 4 else None  # a row made elsewhere: the CAS refuses
        new_row = (
            channel,
            meta_text,
            history_text,
            hj.dumps(list(session.opened_files)),
            last_activity,
            cursor,
            hj.dumps({k: list(v) for k, v in session.active_sections.items()}),
        )
        upstream_summaries, side_summaries = [], []
        for summary in session.summaries:
            named = [summary.get("startMessageId"), summary.get("endMessageId"), *summary.get("preserve", [])]
            (upstream_summaries if all(n in written_ids for n in named) else side_summaries).append(summary)
        summaries_sig = _summaries_sig(upstream_summaries)
        unchanged = base is not None and tuple(base) == new_row and state.get("summaries_sig") == summaries_sig
        if unchanged:  # sessions.db already holds exactly this: only cireil's side file may have news
            with self._lock:
                try:
                    self._after_write(session, row_id, new_row, plan, len(texts), side_summaries, None, rows.extras)
                except sqlite3.Error as exc:
                    raise self._not_written(f"session {session.id}", exc, where=self.agent_dir / SIDE_FILE) from None
                rows.accept(plan)
                session.touched.clear()
            return
        reason = self._fixed_reason(session, row_id)
        if reason is not None:
            raise SessionReadOnly(reason)
        if self.read_only is not None:
            raise self._not_written(f"session {session.id}", sqlite3.OperationalError(self.read_only), ro=True)
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:  # busy for the whole busy timeout: the other writer holds on
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise self._not_written(f"session {session.id}", exc) from None
                raise SessionError(
                    f"session {session.id} was not written: sessions.db stayed locked by another process for 5 s "
                    f"({exc}); nothing was changed, try again"
                ) from None
            try:
                # asked here, with the write lock held, right before the commit: an original that starts later
                # reads either the row before this commit or after it, and the rule above holds for both
                reason = self._sharing_problem(db, session.id, row_id)
                if reason is not None:
                    raise SessionReadOnly(reason)
                born = time.time()  # before the commit: a row's birth is never later than it really was
                version = db.execute("PRAGMA data_version").fetchone()[0]
                # no other connection has committed since this session was read or written here: the row is
                # still what it was (reading a long history back just to compare it is most of a write's cost)
                same = base is not None and len(base) > 1 and state.get("data_version") == version
                # else the WAL may tell that no commit since wrote the row (the write lock is held: none can now)
                same = same or (base is not None and len(base) > 1 and self._unwritten_since(state, row_id))
                current = base if same else self._raw_row(db, row_id)
                if (tuple(current) if current else None) != (tuple(base) if base else None):
                    raise SessionConflict(
                        f"session {session.id} changed in sessions.db since cireil read it (another process wrote "
                        "it); nothing was overwritten: cireil reads it again, send the message again to continue"
                    )
                # a plain UPDATE of a row that is there: an upsert builds the whole record twice (insert, then
                # update on the conflict), and the record is the history, megabytes long
                updated = (
                    current is not None
                    and db.execute(
                        "UPDATE sessions SET channel = ?, meta = ?, history = ?, opened_files = ?, last_activity = ?,"
                        " history_cursor = ?, active_file_sections = ? WHERE id = ?",
                        (*new_row, row_id),
                    ).rowcount
                )
                if not updated:
                    db.execute(
                        "INSERT INTO sessions (id, channel, meta, history, opened_files, last_activity,"
                        " history_cursor, active_file_sections) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (row_id, *new_row),
                    )
                db.executemany(
                    "INSERT OR IGNORE INTO images (id, session_id, media_type) VALUES (?, ?, ?)",
                    [(ref, row_id, media_type) for ref, media_type in dict.fromkeys(refs)],
                )
                if self._has_summaries:
                    self._sync_summaries(db, row_id, upstream_summaries)
                db.execute("COMMIT")
            except sqlite3.Error as exc:  # a full disk, a file made read-only meanwhile, an I/O error
                _rollback(db)
                raise self._not_written(f"session {session.id}", exc) from None
            except BaseException:
                _rollback(db)
                raise
            created_row = base is None
            state["base"] = new_row
            state["data_version"] = version
            # this commit's content, unless another connection committed right after it (read after the token)
            token = dbstate.content_token(self.path)
            after = db.execute("PRAGMA data_version").fetchone()[0]
            state["token"] = token if after == version else None
            state["meta"] = json.loads(meta_text)
            if not committed_only:
                state["committed"] = set(map(id, session.history))
            first = min(state["count"], len(texts), len(texts) if first_change is None else first_change)
            state["count"] = len(texts)
            previous = rows.extras
            if plan.hasher is None:  # encoded whole (or the first write since the load): hashed whole, once
                plan.hasher = prefix_hasher(memoryview(history_text.encode("utf-8"))[:-1])
            rows.accept(plan)
            session.touched.clear()
            state["summaries_sig"] = summaries_sig
            try:
                self._after_write(
                    session, row_id, new_row, plan, first, side_summaries, born if created_row else None, previous
                )
            except sqlite3.Error:
                # sessions.db holds the session; only cireil's derived index missed it (a full disk): the next
                # refresh compares every row's fingerprint again and re-indexes this one
                self._data_version = None

    def _sync_summaries(self, db: sqlite3.Connection, row_id: str, summaries: list[dict]) -> None:
        existing = {
            slug: (rid, (name, start, end, preserve, text))
            for rid, slug, name, start, end, preserve, text in db.execute(
                "SELECT id, slug, display_name, start_message_id, end_message_id, preserve, summary"
                " FROM summaries WHERE session_id = ?",
                (row_id,),
            )
        }
        wanted = {s["slug"]: s for s in summaries}
        for slug, (rid, _) in existing.items():
            if slug not in wanted:
                db.execute("DELETE FROM summaries WHERE id = ?", (rid,))
        for slug, s in wanted.items():
            values = (
                s.get("displayName") or slug,
                s["startMessageId"],
                s["endMessageId"],
                hj.dumps(list(s.get("preserve", []))),
                s.get("summary", ""),
            )
            if slug in existing:
                if existing[slug][1] == values:
                    continue
                db.execute("DELETE FROM summaries WHERE id = ?", (existing[slug][0],))
            created = int(time.time())  # Unix seconds, as the original writes them (§4.8)
            db.execute(
                "INSERT INTO summaries (session_id, slug, display_name, start_message_id, end_message_id, preserve,"
                " summary, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (row_id, slug, *values, created),
            )

    def _after_write(
        self,
        session: Session,
        row_id: str,
        row: tuple,
        plan: Plan,
        first: int,
        side_summaries: list[dict],
        born: float | None,
        previous: dict[int, tuple[str, dict]] | None = None,
    ) -> None:
        """cireil's side file follows the row just written: extras that changed, and the index from the first
        change on; `born`: the row was created by this write, at that time; `previous`: the extras the side
        file holds (None: unknown, all are written again). Nothing is written when nothing changed."""
        cireil_meta = {k: v for k, v in session.meta.items() if k != _PRUNE_WARNED}
        meta_json = json.dumps(cireil_meta, default=list)
        state = session.store_state or {}
        side_sig = (meta_json, hj.dumps(side_summaries), session.created)
        old = previous if previous is not None and state.get("extras_known") else None
        changed = [pos for pos, entry in plan.extras.items() if old is None or old.get(pos) is not entry]
        dropped = [pos for pos in (old or {}) if pos not in plan.extras]
        nothing = (
            old is not None
            and not changed
            and not dropped
            and born is None
            and first >= len(plan.texts)
            and state.get("side_sig") == side_sig
            and state.get("indexed") == len(plan.texts)
        )
        if nothing:
            return
        with self._side_transaction() as side:
            if old is None:
                side.execute("DELETE FROM message_extras WHERE session_id = ?", (row_id,))
            else:
                side.executemany(
                    "DELETE FROM message_extras WHERE session_id = ? AND pos = ?", [(row_id, p) for p in dropped]
                )
            side.executemany(
                "INSERT OR REPLACE INTO message_extras (session_id, pos, fingerprint, extras) VALUES (?, ?, ?, ?)",
                [(row_id, pos, plan.extras[pos][0], hj.dumps(plan.extras[pos][1])) for pos in changed],
            )
            if state.get("side_sig") != side_sig or born is not None:
                side.execute(
                    "INSERT INTO session_extras (session_id, created, own, meta, summaries) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT(session_id) DO UPDATE SET created = COALESCE(session_extras.created,"
                    " excluded.created), own = MAX(session_extras.own, excluded.own), meta = excluded.meta,"
                    " summaries = excluded.summaries",
                    (row_id, session.created, int(born is not None), meta_json, side_sig[1]),
                )
            if born is not None:
                side.execute("INSERT OR REPLACE INTO row_births (session_id, born) VALUES (?, ?)", (row_id, born))
            first = min(first, len(plan.texts))
            last = preview_before(plan.written, first)
            before = (plan.conv[first - 1] if first else 0, preview_of(last) if last is not None else "")
            hasher = plan.hasher
            self._index_session(
                side,
                row_id,
                row,
                plan.written[first:],
                first,
                offset=first,
                before=before,
                prefix_hash=prefix_digest(hasher) if hasher is not None else None,
            )
            self._note_complete(side)
        state["side_sig"] = side_sig
        state["extras_known"] = True
        state["indexed"] = len(plan.texts)

    def save_state(self, session: Session) -> None:
        """Write the session's state with its committed history (a turn in progress stays out)."""
        state = getattr(session, "store_state", None)
        if state is None and not (session.opened_files or session.summaries or session.active_sections):
            return  # nothing worth a row yet
        self._write(session, committed_only=True)

    def commit(self, session: Session, new_messages: list[dict]) -> None:
        """Write the session with `new_messages` (already at the end of session.history): all of it, or nothing."""
        kept = [m for m in new_messages if m.get("persistent", True) is not False]
        state = getattr(session, "store_state", None)
        fresh = state is None
        if state is None:
            state = {"row_id": stored_id(session.id), "base": None, "count": 0, "committed": set()}
            state["meta"] = meta_for_new(state["row_id"] or "")
            session.store_state = state
            if state["row_id"] is not None and self.exists(session.id):
                state["base"] = ("(made outside the store)",)  # a Session made elsewhere never overwrites a row
        before = set(state["committed"])
        # a new session's whole history is its first step; otherwise only these messages join what is committed
        state["committed"] = before | {id(m) for m in (session.history if fresh else kept)}
        try:
            self._write(session, committed_only=True)
        except BaseException:
            state["committed"] = before
            raise

    # -- single messages ------------------------------------------------------------------------

    def find_message(self, session_id: str, message_id: str) -> dict | None:
        try:
            session = self.get(session_id)
        except SessionError:
            return None
        if session is None:
            return None
        return next((m for m in session.history if m.get("id") == message_id), None)

    def update_message(self, session_id: str, message: dict) -> None:
        """Replace the stored message with the same id (a reaction was added); KeyError when there is none."""
        with self._lock:
            session = self.get(session_id)
            if session is None:
                raise KeyError(f"message {message.get('id')!r} is not stored in session {session_id!r}")
            for index, stored in enumerate(session.history):
                if stored.get("id") == message.get("id"):
                    session.history[index] = message
                    session.store_state["committed"].add(id(message))
                    break
            else:
                raise KeyError(f"message {message.get('id')!r} is not stored in session {session_id!r}")
            self._write(session, committed_only=True)

    # -- attachments (files a person attached in the notebook; cireil's side file) -----------------

    def add_attachment(self, session_id: str, message_id: str, filename: str, media_type: str, data: bytes) -> dict:
        attachment_id = "a" + secrets.token_hex(6)
        try:
            with self._side_transaction() as side:
                side.execute(
                    "INSERT INTO attachments (id, session_id, message_id, filename, media_type, size, data)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (attachment_id, session_id, message_id, filename, media_type, len(data), bytes(data)),
                )
        except sqlite3.Error as exc:
            raise self._not_written(f"attachment {filename!r}", exc, where=self.agent_dir / SIDE_FILE) from None
        return {"id": attachment_id, "filename": filename, "size": len(data), "mediaType": media_type}

    def attachments(self, session_id: str, message_id: str) -> list[tuple[dict, bytes]]:
        with self._lock:
            rows = self.side.execute(
                "SELECT id, filename, size, media_type, data FROM attachments"
                " WHERE session_id = ? AND message_id = ? ORDER BY rowid",
                (session_id, message_id),
            ).fetchall()
        return [({"id": i, "filename": f, "size": s, "mediaType": t}, bytes(d)) for i, f, s, t, d in rows]

    # -- one-shot jobs: the original's cron_jobs table, written as its schedule tool writes (§4.9) --

    def upsert_job(self, job: dict) -> None:
        next_run = (job.get("schedule") or {}).get("at")
        with self._lock:
            if self.read_only is not None:
                raise self._not_written(f"job {job.get('id')!r}", sqlite3.OperationalError(self.read_only), ro=True)
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._not_written(f"job {job.get('id')!r}", exc) from None
            try:
                self._db.execute(
                    "INSERT INTO cron_jobs (job_id, type, config, next_run, status, retry_count, created_at)"
                    " VALUES (?, 'one-shot', ?, ?, 'pending', 0, ?) ON CONFLICT (job_id) DO UPDATE SET"
                    " type = excluded.type, config = excluded.config, next_run = excluded.next_run,"
                    " status = excluded.status, retry_count = excluded.retry_count, created_at = excluded.created_at",
                    (job["id"], hj.dumps(job), next_run, us.iso_now()),
                )
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(self._db)
                raise self._not_written(f"job {job.get('id')!r}", exc) from None
            except BaseException:
                _rollback(self._db)
                raise

    def job_left_to_original(self, job_id: str) -> bool:
        """Whether a running original runs this one-shot job itself: it reads `cron_jobs` once, at its start
        (§4.9), so it knows a row written before it was first seen holding sessions.db (plus the margin), and
        not one written later (that one is cireil's to run)."""
        originals = self._originals()
        if not originals:
            return False
        with self._lock:
            row = self._db.execute("SELECT created_at FROM cron_jobs WHERE job_id = ?", (job_id,)).fetchone()
        created = to_epoch(row[0]) if row and not isinstance(row[0], BadText) else None
        return created is None or created <= max(seen for _, seen in originals) + _SETTLE_S

    def delete_job(self, job_id: str) -> None:
        with self._lock:
            if self.read_only is not None:
                raise self._not_written(f"the removal of job {job_id!r}", sqlite3.OperationalError(self.read_only))
            try:
                self._db.execute("DELETE FROM cron_jobs WHERE job_id = ?", (job_id,))
            except sqlite3.Error as exc:
                raise self._not_written(f"the removal of job {job_id!r}", exc) from None

    def jobs(self) -> list[dict]:
        with self._lock:
            if "cron_jobs" not in us.tables(self._db):
                return []
            rows = self._db.execute(
                "SELECT config FROM cron_jobs WHERE type = 'one-shot' AND status = 'pending' ORDER BY next_run, job_id"
            ).fetchall()
        out = []
        for (config,) in rows:
            if isinstance(config, BadText):
                continue  # a hand-edited row: never run with its bytes guessed
            try:
                job = json.loads(config)
            except (ValueError, TypeError):
                continue
            if isinstance(job, dict) and isinstance(job.get("id"), str):
                out.append(job)
        return out

    def load_notes(self) -> list[str]:
        """What loading the agent says about its sessions, one line each (read-only, unreadable sessions)."""
        notes = list(self.notes)
        # A database this store has just made has no other holder yet: scanning every process's open files
        # (most of a --demo load's time) waits for the first write, which asks before it writes.
        pids = [] if self.created else self.holders()
        if pids:
            notes.append(
                f"open in another process (pid {', '.join(map(str, pids))}, the original runtime?): while it runs, "
                "its Discord sessions and those its main cron jobs and heartbeat run in are read-only here (it "
                "writes them from its memory), and it runs the cron jobs and heartbeat, not cireil"
            )
        elif not self.current:
            notes.append("last opened by an older CireilClaw: cireil reads its sessions but writes none")
        notes += self.unreadable()
        status = self.index_status()
        if status is not None:
            notes.append(
                f"the search index of its {status['indexing']['sessions']} sessions is being built in the background: "
                "list-sessions and query-sessions say how far it is and answer from what is indexed so far; every "
                "other tool and turn works now"
            )
        return notes
