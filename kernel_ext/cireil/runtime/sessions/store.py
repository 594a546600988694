"""SessionStore: one agent's sessions in the original runtime's `sessions.db`, cireil's extras beside it.

sessions.db keeps the original's schema and JSON exactly (upstream-formats §4–7): a database the original
made is used as it is, a new one is made as the original would make it, and only session rows,
`images`/`summaries` rows of sessions written on purpose and `cron_jobs` rows of `schedule` change.
Whatever cireil needs beyond that (the query-sessions index, per-message extras) lives in its side file
(sidestore.py), rebuilt from sessions.db when missing or stale.

Sharing the agent with a running original (§6): every write is one short `BEGIN IMMEDIATE` transaction
that re-reads the row and refuses (SessionConflict) when it is not what this session was loaded from;
only committed steps are written; while another process has sessions.db open, the sessions the original
owns are read-only here (SessionReadOnly) and only cireil's own `internal:` sessions are written.
The runtime loop thread and the kernel's main thread share the connections behind one lock.
"""

from __future__ import annotations

import contextlib
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..files.pictures import Unreadable, stored_image
from ..files.safefs import read_host_file
from . import history_json as hj
from . import upstream_schema as us
from .errors import SessionConflict, SessionError, SessionFormatError, SessionReadOnly, SessionStoreError
from .messages import now_iso
from .rowids import channel_for, id_problem, memory_id, meta_for_new, other_holders, stored_id
from .sideindex import BadText, SideIndex, channel_of, preview_of, to_epoch
from .sideindex import text_of_row as _text
from .sidestore import SIDE_FILE, open_memory_side, open_side
from .state import Session, platform_of

IMAGES_DIR = "images"
_ROW = "channel, meta, history, opened_files, last_activity, history_cursor, active_file_sections"
_PRUNE_WARNED = "prune_warned_at"  # cireil's name for the original's meta.lastContextWarningCursor
_HOLDERS_TTL = 2.0


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


def _iso_activity(value: Any) -> str | None:
    """last_activity exactly as Date.toISOString() writes it (§7), from any ISO-8601 cireil holds."""
    epoch = to_epoch(value)
    if epoch is None:
        return None
    return us.iso_ms(datetime.fromtimestamp(epoch, UTC))


def _summaries_sig(summaries: list[dict]) -> str:
    keys = ("slug", "displayName", "startMessageId", "endMessageId", "preserve", "summary")
    return json.dumps(sorted(([s.get(k) for k in keys] for s in summaries), key=str))


def _signature(element: dict) -> str:
    """What ties cireil's extras to one stored message: its role, time and id (cheap; an edit of the text by
    the original keeps them, a different message at that position does not)."""
    content = element.get("content")
    call = content.get("id") if isinstance(content, dict) and content.get("type") == "toolResponse" else ""
    return f"{element.get('role')}|{element.get('timestamp')}|{element.get('id', '')}|{call}"


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
        self._holders: tuple[float, list[int]] = (0.0, [])
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
            return db
        raise AssertionError("unreachable")

    @classmethod
    def for_agent(cls, agent_dir: Path) -> SessionStore:
        return cls(Path(agent_dir) / "sessions.db")

    def close(self) -> None:
        with self._lock:
            self._db.close()
            self.side.close()

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
        """Other processes with sessions.db open (the original's `run`, most likely); cached briefly."""
        at, pids = self._holders
        now = time.monotonic()
        if now - at > _HOLDERS_TTL:
            pids = other_holders(self.path)
            self._holders = (now, pids)
        return pids

    # -- reading rows -----------------------------------------------------------------------------

    def _select(self) -> str:
        have = set(self._columns)
        cols = [
            c if c in have else {"last_activity": "NULL", "history_cursor": "0", "active_file_sections": "'{}'"}[c]
            for c in _ROW.split(", ")
        ]
        return ", ".join(cols)

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

    def _decode(self, row_id: str, row: tuple, *, images: bool = True) -> tuple[list[dict], list, dict]:
        """(memory history, the stored elements as parsed, meta); SessionFormatError naming the problem."""
        history_text = row[2]
        problem, meta = self._row_problem(row_id, row)
        if problem is None:
            try:
                elements = hj.parse_history(history_text if isinstance(history_text, str) else "")
                loader = self._load_image if images else (lambda ref, media_type: None)
                history = [hj.decode_message(e, i, loader) for i, e in enumerate(elements)]
            except hj.HistoryFormatError as exc:
                problem = str(exc)
        if problem is not None:
            raise SessionFormatError(f"sessions.db: session {memory_id(row_id)}: {problem}; it was left unchanged")
        return history, elements, meta

    def get(self, session_id: str) -> Session | None:
        """The stored session, or None; SessionFormatError (one line) when its row cannot be read."""
        row_id = stored_id(session_id)
        if row_id is None:
            return None
        with self._lock:
            row = self._raw_row(self._db, row_id)
            if row is None:
                return None
            history, elements, meta = self._decode(row_id, row)
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
        for pos, (fp, extra) in extras.items():
            if pos < len(elements) and _signature(elements[pos]) == fp:
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
        session.store_state["committed"] = {id(m) for m in history}
        session.store_state["summaries_sig"] = _summaries_sig(summaries)
        # each message's stored element: an unchanged message is written back byte for byte (key order too)
        session.store_state["loaded"] = {id(m): e for m, e in zip(history, elements, strict=True)}
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
        """Why this session must not be written now (§6.3), or None."""
        row_id = stored_id(session.id)
        if row_id is None:
            return None
        if not self.current:
            return (
                f"sessions.db was last opened by an older CireilClaw (its migrations are not all applied); "
                f"cireil only reads it, session {session.id} is read-only until the original has opened it"
            )
        state = getattr(session, "store_state", None) or {}
        if state.get("legacy"):
            return f"session {session.id} has a legacy id the original renames at load; cireil leaves it read-only"
        pids = self.holders()
        if not pids:
            return None
        targeted = self._run_targets().get(row_id)
        if targeted is not None:
            return (
                f"session {session.id} is the target of {targeted}, which the original runtime (running: pid "
                f"{', '.join(map(str, pids))}) runs inside it and saves; it is read-only here while that process runs"
            )
        if channel_for(row_id) == "internal" and (state.get("base") is None or self._own(row_id)):
            return None  # a session the original cannot know about: cireil's own (§6.3 item 5)
        return (
            f"session {session.id} belongs to the original runtime, which has sessions.db open "
            f"(pid {', '.join(map(str, pids))}); it is read-only here while that process runs"
        )

    def _run_targets(self) -> dict[str, str]:
        """Sessions a running original writes by itself: `main` cron jobs and the heartbeat run inside their
        target and save it (upstream-formats §3.4, §3.5). Session id -> what targets it."""
        import tomllib

        found: dict[str, str] = {}
        config = self.agent_dir / "config"
        try:
            cron = tomllib.loads(read_host_file(config / "cron.toml").decode("utf-8"))  # a FIFO: no hang
        except (OSError, ValueError, RecursionError):
            cron = {}
        jobs = cron.get("jobs") if isinstance(cron.get("jobs"), list) else []
        for job in jobs:
            if isinstance(job, dict) and job.get("execution") == "main" and isinstance(job.get("target"), str):
                found.setdefault(job["target"], f"the cron job {job.get('id')!r} (config/cron.toml)")
        try:
            heartbeat = tomllib.loads(read_host_file(config / "heartbeat.toml").decode("utf-8"))  # a FIFO: no hang
        except (OSError, ValueError, RecursionError):
            heartbeat = {}
        if heartbeat.get("enabled") is True and isinstance(heartbeat.get("target"), str):
            found.setdefault(heartbeat["target"], "the heartbeat (config/heartbeat.toml)")
        return found

    def _own(self, row_id: str) -> bool:
        row = self.side.execute("SELECT own FROM session_extras WHERE session_id = ?", (row_id,)).fetchone()
        return bool(row and row[0])

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
        loaded: dict[int, dict] = state.get("loaded", {})
        new_loaded: dict[int, dict] = {}
        first_change: int | None = None
        # everything before the database transaction: JSON, image files (written before their rows)
        texts: list[str] = []
        written: list[dict] = []  # the memory messages behind texts, position for position
        extras: dict[int, tuple[str, dict]] = {}
        refs: list[tuple[str, str]] = []
        written_ids: set[str] = set()
        cursor = 0
        for index, message in enumerate(session.history):
            if committed_only and id(message) not in committed:
                continue
            try:
                up, extra = hj.encode_message(message, channel, self._store_image, refs)
            except OSError as exc:  # an image file could not be written (a full disk): no row names it yet
                raise self._not_written(f"session {session.id}", exc, where=self.images_dir) from None
            if up is None:
                continue
            element = loaded.get(id(message))
            if element is not None and element == up:
                up = element  # as stored, in the original's key order
            elif first_change is None:
                first_change = len(texts)
            text = hj.dumps(up)
            new_loaded[id(message)] = up
            if extra:
                extras[len(texts)] = (_signature(up), extra)
            if isinstance(up.get("id"), str):
                written_ids.add(up["id"])
            if index < session.cursor:
                cursor += 1
            texts.append(text)
            written.append(message)
        history_text = "[" + ",".join(texts) + "]"
        meta_text = hj.dumps(self._upstream_meta(session, state["meta"]))
        base = state["base"]
        last_activity = _iso_activity(session.last_activity) or (base[4] if base else None)
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
                    self._after_write(session, row_id, new_row, written, len(texts), extras, side_summaries, False)
                except sqlite3.Error as exc:
                    raise self._not_written(f"session {session.id}", exc, where=self.agent_dir / SIDE_FILE) from None
                state["loaded"] = new_loaded
            return
        reason = self.read_only_reason(session)
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
                current = self._raw_row(db, row_id)
                if (tuple(current) if current else None) != (tuple(base) if base else None):
                    raise SessionConflict(
                        f"session {session.id} changed in sessions.db since cireil read it (another process wrote "
                        "it); nothing was overwritten: cireil reads it again, send the message again to continue"
                    )
                db.execute(
                    "INSERT INTO sessions (id, channel, meta, history, opened_files, last_activity, history_cursor,"
                    " active_file_sections) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
                    " channel = excluded.channel, meta = excluded.meta, history = excluded.history,"
                    " opened_files = excluded.opened_files, last_activity = excluded.last_activity,"
                    " history_cursor = excluded.history_cursor, active_file_sections = excluded.active_file_sections",
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
            state["meta"] = json.loads(meta_text)
            state["committed"] = {id(m) for m in session.history if id(m) in committed or not committed_only}
            first = min(state["count"], len(texts), len(texts) if first_change is None else first_change)
            state["count"] = len(texts)
            state["loaded"] = new_loaded
            state["summaries_sig"] = summaries_sig
            try:
                self._after_write(session, row_id, new_row, written, first, extras, side_summaries, created_row)
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
        written: list[dict],
        first: int,
        extras: dict[int, tuple[str, dict]],
        side_summaries: list[dict],
        created_row: bool,
    ) -> None:
        """cireil's side file follows the row just written: extras, and the index from the first change on."""
        cireil_meta = {k: v for k, v in session.meta.items() if k != _PRUNE_WARNED}
        meta_json = json.dumps(cireil_meta, default=list)
        rows = [(row_id, pos, fp, hj.dumps(extra)) for pos, (fp, extra) in extras.items()]
        state = session.store_state or {}
        extras_sig = hash(tuple(rows))
        with self._side_transaction() as side:
            if state.get("extras_sig") != extras_sig:
                side.execute("DELETE FROM message_extras WHERE session_id = ?", (row_id,))
                side.executemany(
                    "INSERT INTO message_extras (session_id, pos, fingerprint, extras) VALUES (?, ?, ?, ?)", rows
                )
                state["extras_sig"] = extras_sig
            side.execute(
                "INSERT INTO session_extras (session_id, created, own, meta, summaries) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(session_id) DO UPDATE SET created = COALESCE(session_extras.created, excluded.created),"
                " own = MAX(session_extras.own, excluded.own), meta = excluded.meta, summaries = excluded.summaries",
                (row_id, session.created, int(created_row), meta_json, hj.dumps(side_summaries)),
            )
            self._index_session(side, row_id, row, written, first)

    def save_state(self, session: Session) -> None:
        """Write the session's state with its committed history (a turn in progress stays out)."""
        state = getattr(session, "store_state", None)
        if state is None and not (session.opened_files or session.summaries or session.active_sections):
            return  # nothing worth a row yet
        self._write(session, committed_only=True)

    def commit(self, session: Session, new_messages: list[dict]) -> None:
        """Write the session with `new_messages` (already at the end of session.history): all of it, or nothing."""
        kept = [m for m in new_messages if m.get("persistent", True) is not False]
        users = [m.get("timestamp") for m in kept if m.get("role") == "user" and m.get("timestamp")]
        previous = session.last_activity
        if users:
            session.last_activity = users[-1]
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
            session.last_activity = previous
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
                f"open in another process (pid {', '.join(map(str, pids))}, the original runtime?): its Discord, TUI "
                "and existing internal sessions are read-only here; notebook sessions stay writable"
            )
        elif not self.current:
            notes.append("last opened by an older CireilClaw: cireil reads its sessions but writes none")
        notes += self.unreadable()
        return notes
