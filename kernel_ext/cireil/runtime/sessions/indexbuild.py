"""What the side index keeps of one sessions.db row, read fast; and the background build of many rows.

Indexing a row needs, of each stored element, only its role, its time and the text of its text blocks, and of
the row only whether cireil can read it. Decoding every message into cireil's in-memory form (what
`SessionStore.get` does) cost most of an index build: 14 s at 283 MB where the original loads the same
database in 3 s. `index_row` reads what it needs straight from the parsed JSON when every element is one
`history_json.decode_message` surely reads, and otherwise decodes the row the slow way, which reads it or says
exactly what is wrong: the index says what `get` would.

The first open of an original's agent (no side file, or one of an earlier cireil) has every row to index:
`IndexBuilder` does it on two threads of its own so that cireil.load returns at once. A reader, with its own
connection to sessions.db, does the JSON work (under the GIL); a writer stores each batch through the store's
side connection under the store's lock, in one short transaction, while SQLite's FTS5 work runs without the
GIL, beside the reader's next rows.
"""

from __future__ import annotations

import contextlib
import gc
import os
import queue
import re
import sqlite3
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3

from . import headers
from . import history_json as hj
from .errors import SessionFormatError
from .messages import searchable_text
from .workerpipe import WorkerProcess

SEARCHED_ROLES = ("user", "assistant")
_ALLOWED = {"user": hj.USER_BLOCKS, "assistant": hj.ASSISTANT_BLOCKS, "system": frozenset({"text"})}


def _no_images(ref: str, media_type: str) -> None:
    return None  # the index never needs a picture's bytes


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


@dataclass(slots=True)
class RowIndex:
    """One row's index entry, computed without the store's lock. items: (pos, role, timestamp, ts, text) of
    each searched message (user and assistant messages with text) from position `first` on."""

    row_id: str
    fingerprint: str
    error: str | None = None
    items: list[tuple[int, str, str | None, float, str]] = field(default_factory=list)
    count: int = 0  # user and assistant messages
    preview: str = ""
    last_activity: Any = None
    elements: int = 0
    prefix_len: int = 0  # of the history text without its closing ]
    prefix_hash: str | None = None  # of that text's bytes: a history that only grew is indexed from where it was


def prefix_hasher(data: bytes | memoryview = b"") -> Any:
    """The hash the side index keeps of a history text without its closing ] (of its UTF-8 bytes): a row that
    still starts with them only had messages appended (sideindex.py, _append_only). BLAKE3: 5 GB/s here where
    blake2b does 0.6, and each save of the original hashes the whole earlier text of the row it wrote."""
    return blake3.blake3(data)


def prefix_digest(hasher: Any) -> str:
    # marked: a hash of an earlier cireil's form (blake2b) never equals one, and that row is indexed whole once
    return "b3:" + hasher.hexdigest(length=16)


def prefix_hash_of(text: str) -> str:
    return prefix_digest(prefix_hasher(memoryview(text.encode("utf-8"))[:-1]))


def item_of(pos: int, message: dict) -> tuple[int, str, str | None, float, str] | None:
    """A decoded (or in-memory) message's search row, or None when it is not searched."""
    role = message.get("role", "")
    text = searchable_text(message) if role in SEARCHED_ROLES else ""
    if not text:
        return None
    stamp = message.get("timestamp")
    return (pos, role, stamp, hj.iso_to_epoch(stamp) or 0, text)


_MISSING = object()


def _fast(row_id: str, fingerprint: str, elements: list) -> RowIndex | None:
    """The entry read straight from the parsed elements, or None as soon as one is not surely read by
    decode_message without error (the caller then asks decode_message itself). The checks are decode_message's,
    in one loop: this is most of an index build's time."""
    items: list[tuple[int, str, str | None, float, str]] = []
    count, last = 0, None
    user_blocks, assistant_blocks, system_blocks = hj.USER_BLOCKS, hj.ASSISTANT_BLOCKS, _ALLOWED["system"]
    for pos, element in enumerate(elements):
        if type(element) is not dict:
            return None
        role = element.get("role")
        content = element.get("content", _MISSING)
        if content is _MISSING:
            return None
        if role == "toolResponse":
            if type(content) is not dict or content.get("type") != "toolResponse":
                return None
            continue
        if role == "assistant":
            allowed = assistant_blocks
        elif role == "user":
            allowed = user_blocks
        elif role == "system":
            allowed = system_blocks
        else:
            return None
        if type(content) is list:
            blocks = content
        elif type(content) is dict:
            blocks = (content,)
        else:
            return None
        texts = []
        for block in blocks:
            if type(block) is not dict:
                return None
            kind = block.get("type")
            if type(kind) is not str or kind not in allowed:
                return None
            if kind == "text":
                text = block.get("content")
                # a "text" key beside "content" would replace it in the decoded part: the slow way then
                if type(text) is not str or "text" in block:
                    return None
                if text:
                    texts.append(text)
            elif kind == "image_ref" and (type(block.get("id")) is not str or type(block.get("mediaType")) is not str):
                return None
        if role == "system":
            continue
        count += 1
        last = pos
        if texts:
            stamp = element.get("timestamp")
            # '': the time is the stored milliseconds (ts), shown as ms_to_iso shows them when a query returns
            # it (not made for every message here: a tenth of a build's time); ts is then the same double as
            # to_epoch(ms_to_iso(ms)) gives (a whole number of microseconds, read back exactly)
            if type(stamp) is int and hj.MIN_MS <= stamp <= hj.MAX_MS:
                items.append((pos, role, "", stamp / 1000, "\n".join(texts)))
            elif type(stamp) is float:  # never the original's; and maybe an integer orjson read (see _parsed)
                return None
            else:
                items.append((pos, role, None, 0, "\n".join(texts)))
    preview = preview_of(hj.decode_message(elements[last], last, _no_images)) if last is not None else ""
    return RowIndex(row_id, fingerprint, None, items, count, preview, None, len(elements))


def shown_time(stamp: str | None, ts: float) -> str | None:
    """A search row's time as query-sessions returns it ('' stands for the stored milliseconds, ts)."""
    return hj.ms_to_iso(round(ts * 1000)) if stamp == "" else stamp


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection while a row's JSON is parsed and dropped (nothing in it is cyclic garbage): the
    collections walking the growing lists made an index build a third slower."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_ORJSON_FROM = 1_000_000


def _parsed(text: str, raw: bytes | None) -> list:
    """The history's elements for _fast. orjson parses the bytes in two thirds of json's time (a third of an
    index build's reading). Where they differ, json decides: orjson refuses what json takes (NaN, lone
    surrogates, deep nesting) and is then not used; the one value it reads differently, an integer outside
    64 bits (a float to orjson), matters to _fast only as a timestamp, and a float timestamp sends the row to
    the slow way, which parses with json."""
    # importing it costs ~5 ms in a kernel (it brings uuid and zoneinfo): worth it from ~1 MB of history on
    if raw is not None and (len(raw) >= _ORJSON_FROM or "orjson" in sys.modules):
        import orjson

        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = None
        if type(value) is list:
            return value
    return hj.parse_history(text)


def index_row(
    row_id: str,
    row: tuple,
    fingerprint: str,
    decode: Callable[..., tuple[list[dict], list, dict]],
    row_problem: Callable[[str, tuple], tuple[str | None, Any]],
    raw: bytes | None = None,
) -> RowIndex:
    """The index entry of a row as `SessionStore._raw_row` reads it. decode: the store's `_decode` (the slow
    way, SessionFormatError naming the problem); row_problem: its `_row_problem`; raw: the history's UTF-8
    bytes when they were read as such (parsed faster, see _parsed)."""
    text = row[2]
    found = None
    if isinstance(text, str) and row_problem(row_id, row)[0] is None:
        with gc_paused():
            try:
                found = _fast(row_id, fingerprint, _parsed(text, raw))
            except hj.HistoryFormatError:
                found = None
    if found is None:
        try:
            with gc_paused():
                history, _, _ = decode(row_id, row, images=False)
        except SessionFormatError as exc:
            return RowIndex(row_id, fingerprint, str(exc), last_activity=row[4])
        found = of_messages(row_id, fingerprint, history)
    found.last_activity = row[4]
    found.prefix_len = len(text) - 1
    return found


def of_messages(row_id: str, fingerprint: str, history: list[dict], offset: int = 0) -> RowIndex:
    """The entry of decoded or in-memory messages; history[i] is the stored element at position offset + i."""
    items = [item for i, m in enumerate(history) if (item := item_of(offset + i, m)) is not None]
    conversation = [m for m in history if m.get("role") in SEARCHED_ROLES]
    preview = preview_of(conversation[-1]) if conversation else ""
    return RowIndex(row_id, fingerprint, None, items, len(conversation), preview, None, offset + len(history))


def read_row(db: sqlite3.Connection, select: str, row_id: str) -> tuple[tuple | None, bytes | None]:
    """(the row as the store reads it, or None when it is gone; its history's UTF-8 bytes, read as such: hashed
    as they are and parsed by orjson, or None when the history is not UTF-8 text). select: the store's SELECT
    list for sessions.db's columns."""
    picked = select.split(", ")
    picked[2] = "CAST(history AS BLOB)"
    row = db.execute(f"SELECT {', '.join(picked)} FROM sessions WHERE id = ?", (row_id,)).fetchone()
    raw = row[2] if row is not None else None
    if not isinstance(raw, bytes):
        return row, None
    try:
        return (*row[:2], raw.decode("utf-8"), *row[3:]), raw
    except UnicodeDecodeError:  # as the store reads it: reported unreadable
        return db.execute(f"SELECT {select} FROM sessions WHERE id = ?", (row_id,)).fetchone(), None


def entry_of_row(
    row_id: str,
    row: tuple,
    raw: bytes | None,
    fingerprint: str,
    decode: Callable[..., tuple[list[dict], list, dict]],
    row_problem: Callable[[str, tuple], tuple[str | None, Any]],
) -> RowIndex:
    """index_row of what read_row read, with the hash of the history without its closing ] (prefix_hash_of's,
    from the bytes read: no encoding back)."""
    entry = index_row(row_id, row, fingerprint, decode, row_problem, raw)
    if entry.error is None and raw is not None and raw.endswith(b"]"):
        entry.prefix_hash = prefix_digest(prefix_hasher(memoryview(raw)[:-1]))
    return entry


def read_entry(
    db: sqlite3.Connection,
    columns: list[str],
    select: str,
    row_id: str,
    decode: Callable[..., tuple[list[dict], list, dict]],
    row_problem: Callable[[str, tuple], tuple[str | None, Any]],
) -> tuple[RowIndex, int] | None:
    """(a row's index entry, its history's size in bytes) read through `db`, or None when the row is gone.
    select as for read_row; decode and row_problem as for index_row."""
    db.execute("BEGIN")  # the fingerprint and the row from one snapshot
    try:
        found = headers.fingerprint(db, columns, row_id)
        row, raw = read_row(db, select, row_id) if found is not None else (None, None)
    finally:
        db.execute("COMMIT")
    if found is None or row is None:
        return None  # gone: the store's next refresh unindexes it
    return entry_of_row(row_id, row, raw, found[0], decode, row_problem), found[1]


class IndexReadFailed(Exception):
    """Reading a row raised in a worker process: the message is the exception's, as the kernel would have said it."""


class IndexBuilder:
    """Indexes rows on threads of its own; `pending` are the rows not yet stored (the store's refresh leaves
    them to it). It holds its store weakly: a store dropped without close() ends it too."""

    BATCH_BYTES = 4_000_000  # history bytes per writer transaction: the store's lock is held ~50 ms at a time
    # history bytes to read above which the JSON work goes to worker processes (indexworker.py): below it a
    # process's start (~0.1 s) is not repaid
    WORKER_BYTES = 32_000_000
    MAX_WORKERS = 3
    ASK_BYTES = 2_000_000  # history bytes asked of a worker at once; the next ask is sent before the answers come
    ASK_ROWS = 64  # and rows: an ask of the original's ids then fits in PIPE_BUF, and can be sent early

    def __init__(self, store: Any, connect: Callable[[], sqlite3.Connection], rows: list[tuple[str, int]]) -> None:
        self._store = weakref.ref(store)
        self._connect = connect
        self._todo: deque[tuple[str, int]] = deque(rows)
        self.pending = {row_id for row_id, _ in rows}
        self.total = len(rows)
        self.done = 0
        self.failure: str | None = None
        self.finished = False
        self._stop = threading.Event()
        self._queue: queue.Queue = queue.Queue(maxsize=64)
        self._threads: list[threading.Thread] = []
        self._reading: set[sqlite3.Connection] = set()  # the readers' connections, interrupted by stop()
        self._workers: set[WorkerProcess] = set()  # killed by stop()
        self._readers = 0  # reader threads started and not yet ended (each ends with a None on the queue)
        weakref.finalize(store, self._stop.set)

    # -- driven by the store (under its lock) --------------------------------------------------------

    def start(self) -> None:
        self._start_readers()
        self._spawn(self._write, "cireil-index-writer")

    def _start_readers(self) -> None:
        """One reader per worker process when there is enough to read and a core to spare, else one reading
        here; a reader whose worker cannot start or dies reads here instead."""
        workers = self.workers_for(sum(size for _, size in self._todo))
        for _ in range(max(1, workers)):
            self._readers += 1
            self._spawn(self._read_through if workers else self._read, "cireil-index-reader")

    @classmethod
    def workers_for(cls, size: int) -> int:
        if size < cls.WORKER_BYTES:
            return 0
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        # one core is left to the writer, whose FTS inserts run in SQLite without the GIL, and to the kernel
        return min(cores - 1, cls.MAX_WORKERS)

    def add(self, rows: list[tuple[str, int]]) -> bool:
        """More rows to index (the store's lock is held); False when this build has ended: start another."""
        if self.finished or self._stop.is_set():
            return False
        fresh = [(row_id, size) for row_id, size in rows if row_id not in self.pending]
        self.pending.update(row_id for row_id, _ in fresh)
        self.total += len(fresh)
        self._todo.extend(fresh)
        return True

    def forget(self, row_id: str) -> None:
        """A row gone from sessions.db (the store's lock is held): nothing to index."""
        if row_id in self.pending:
            self.pending.discard(row_id)
            self.done += 1

    def stop(self, timeout: float = 10.0) -> None:
        """Ask both threads to end and wait for them (never with the store's lock held: the writer takes it)."""
        self._stop.set()
        for reading in list(self._reading):
            with contextlib.suppress(sqlite3.Error):  # closed meanwhile: its thread is ending anyway
                reading.interrupt()  # a long read of a big row ends now, not when it is done
        for worker in list(self._workers):
            worker.kill()  # its reader, waiting for an answer, reads the end of the stream
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def running(self) -> bool:
        return not self.finished and any(t.is_alive() for t in self._threads)

    def wait(self, timeout: float | None = None) -> bool:
        for thread in list(self._threads):
            thread.join(timeout)
        return not any(t.is_alive() for t in self._threads)

    # -- threads ---------------------------------------------------------------------------------

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=self._guarded, args=(target,), name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _guarded(self, target: Callable[[], None]) -> None:
        try:
            target()
        except Exception as exc:  # said where progress is asked (query-sessions, list-sessions, load notes)
            if not self._stop.is_set():  # not the interrupt of stop()
                self.failure = str(exc) if isinstance(exc, IndexReadFailed) else f"{type(exc).__name__}: {exc}"
            self._stop.set()
            self._put(None)

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set() or item is None:
            try:
                self._queue.put(item, timeout=0.2)
                return True
            except queue.Full:
                if item is None and self._stop.is_set():
                    return False
        return False

    def _read(self) -> None:
        db = self._connect()
        self._reading.add(db)
        try:
            while not self._stop.is_set():
                try:
                    row_id, _ = self._todo.popleft()
                except IndexError:
                    break
                if row_id not in self.pending:
                    continue
                store = self._store()
                if store is None:
                    return
                entry = self._entry(store, db, row_id)
                del store
                if not self._took(row_id, entry):
                    return
        finally:
            self._reading.discard(db)
            db.close()
        self._put(None)  # this reader is done: the writer decides, under the lock, whether more came

    def _took(self, row_id: str, entry: tuple[RowIndex, int] | None) -> bool:
        """Hand a row's entry to the writer; False when the build is ending."""
        if entry is None:  # gone from sessions.db meanwhile: nothing to index, nothing left to wait for
            store = self._store()
            if store is None:
                return False
            with store._lock:
                self.forget(row_id)
            return True
        return self._put(entry)

    def _ask_next(self) -> list[tuple[str, int]]:
        asked: list[tuple[str, int]] = []
        size = 0
        while size < self.ASK_BYTES and len(asked) < self.ASK_ROWS:
            try:
                row_id, row_size = self._todo.popleft()
            except IndexError:
                break
            if row_id in self.pending:
                asked.append((row_id, row_size))
                size += row_size
        return asked

    def _read_through(self) -> None:
        """A reader whose rows a worker process reads. At most two asks are out at once, the second only when
        it is short (WorkerProcess.ask): the worker works on the next while this reads the answers."""
        store = self._store()
        if store is None:
            return
        try:
            worker = WorkerProcess(store._db_uri, list(store._columns))
        except (OSError, ValueError):
            worker = None
        del store
        if worker is None:
            return self._read()
        self._workers.add(worker)
        out: deque[list[tuple[str, int]]] = deque()
        try:
            while not self._stop.is_set():
                while len(out) < 2 and (asked := self._ask_next()):
                    out.append(asked)  # before it is sent: a worker gone meanwhile leaves it to be read here
                    if not worker.ask([row_id for row_id, _ in asked], early=len(out) > 1):
                        self._todo.extendleft(reversed(out.pop()))  # asked once the worker waits for it
                        break
                if not out:
                    break
                asked = out[0]
                while asked:
                    answer = worker.answer()
                    row_id = asked.pop(0)[0]
                    if answer is not None and answer[0] == "failed":
                        raise IndexReadFailed(answer[1])
                    if not self._took(row_id, self._entry_of(row_id, answer)):
                        return
                out.popleft()
        except (EOFError, OSError):
            if self._stop.is_set():
                return
            # the worker is gone (killed, out of memory): what it was asked is read here, with the rest
            self._todo.extendleft(reversed([row for asked in out for row in asked]))
            gone = True
        else:
            gone = False
        finally:
            self._workers.discard(worker)
            worker.end()
        if gone:
            return self._read()
        self._put(None)

    @staticmethod
    def _entry_of(row_id: str, answer: Any) -> tuple[RowIndex, int] | None:
        if answer is None:
            return None
        _, size, fields = answer
        return RowIndex(row_id, *fields), size

    @staticmethod
    def _entry(store: Any, db: sqlite3.Connection, row_id: str) -> tuple[RowIndex, int] | None:
        return read_entry(db, store._columns, store._select(), row_id, store._decode, store._row_problem)

    def _write(self) -> None:
        while True:
            batch: list[RowIndex] = []
            size = 0
            ended = False
            while size < self.BATCH_BYTES:
                try:
                    item = self._queue.get(timeout=0.2)
                except queue.Empty:
                    if batch or self._stop.is_set():
                        break
                    continue
                if item is None:
                    self._readers -= 1
                    ended = self._readers == 0
                    if ended:
                        break
                    continue
                batch.append(item[0])
                size += item[1]
            store = self._store()
            if store is None or self._stop.is_set():
                self.finished = True
                return
            with store._lock:
                if batch:
                    store._store_built(batch, self)
                if ended:
                    if self._todo and not self._stop.is_set():
                        self._start_readers()  # rows added after the readers ended
                    else:
                        self.finished = True
                        return
            del store


_ACTIVITY = "SELECT s.id, s.last_activity FROM sessions s WHERE typeof(s.last_activity) = 'text'"
# the same, only where the side index holds another value: compared inside SQLite, so that the sweep hands
# Python a row or two, not every row (a Python call for each text value, and the GIL taken from the calls that
# run meanwhile, slowed them by half at 283 MB)
_ACTIVITY_CHANGED = (
    "SELECT s.id, s.last_activity FROM sessions s JOIN side.indexed_sessions i ON i.session_id = s.id"
    " WHERE typeof(s.last_activity) = 'text' AND i.last_activity IS NOT s.last_activity"
)


def _activity(db: sqlite3.Connection, side: bool, rowids: set[int] | None) -> list[tuple[str, Any]]:
    """The sweep's rows: of these rowids, or of every row (None)."""
    sql = _ACTIVITY_CHANGED if side else _ACTIVITY
    if rowids is None:
        return db.execute(sql).fetchall()
    found: list[tuple[str, Any]] = []
    ordered = sorted(rowids)
    for start in range(0, len(ordered), 500):
        part = ordered[start : start + 500]
        found += db.execute(f"{sql} AND s.rowid IN ({','.join('?' * len(part))})", part).fetchall()
    return found


class ActivitySweep:
    """Reads last_activity again, on a thread of its own, after another process wrote sessions.db: the one change
    a row's fingerprint can miss that list-sessions shows (a Discord turn of the original that failed stores a
    new time of the same length and the history as it was, headers.py). Reading a column stored after the
    history walks its overflow pages (~90 ms at 283 MB, 0.4 s at 1.1 GB for every row), so it is done here, never
    in a query; and of the rows the WAL names (walscan.Changes), unless it cannot rule out such a write."""

    DELAY = 0.2  # the calls that found the foreign write finish first; writes close together are swept once
    # a thread that swept waits this long for the next request before it ends: the original saves every few
    # seconds while it works, and starting a thread for each save cost the call that noticed it 1-3 ms on a
    # busy machine (Thread.start waits until the new thread runs)
    IDLE = 30.0

    def __init__(self, store: Any, connect: Callable[[], sqlite3.Connection], side: Path | None) -> None:
        self._store = weakref.ref(store)
        self._connect = connect
        self._side = side  # the side file, read by the sweep's own connection (None: it is in memory)
        self._flag = threading.Lock()  # `_again` and `_thread` change together under it (never the store's lock)
        self._again = False
        self._rows: set[int] | None = set()  # what the next sweep reads: these rows, or every row (None)
        self._swept_all = True
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()  # a request came (or stop): the waiting thread goes on
        self._idle = threading.Event()  # nothing requested is left to do
        self._idle.set()
        self._reading: sqlite3.Connection | None = None
        self.failure: str | None = None
        weakref.finalize(store, self._halt, self._stop, self._wake)

    @staticmethod
    def _halt(stop: threading.Event, wake: threading.Event) -> None:
        stop.set()
        wake.set()

    def request(self, rowids: set[int] | None = None) -> None:
        """Sweep (again) soon: the rows of these rowids, or every row (None)."""
        with self._flag:
            if rowids is None:
                self._rows = None
            elif self._rows is not None:
                self._rows |= rowids
            self._again = True
            self._swept_all = False
            self._idle.clear()
            self._wake.set()
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="cireil-activity-sweep", daemon=True)
                self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._halt(self._stop, self._wake)
        reading = self._reading
        if reading is not None:
            with contextlib.suppress(sqlite3.Error):  # closed meanwhile: its thread is ending anyway
                reading.interrupt()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Until every request so far is swept (or the sweep ended); True when it is."""
        return self._idle.wait(timeout) or self._thread is None

    def swept_all(self) -> bool:
        """Whether every request so far was swept to its end (not when a stop ended the thread before)."""
        return self._swept_all

    def _next(self) -> tuple[bool, set[int] | None]:
        """(True, the rows to sweep or None for every row) once a request is pending; (False, None) when the
        thread is to end (stopped, or idle too long)."""
        while True:
            if self._stop.wait(self.DELAY):
                return False, None
            with self._flag:
                if self._again:
                    self._again = False
                    rows, self._rows = self._rows, set()
                    return True, rows
                self._wake.clear()
                self._idle.set()
            if not self._wake.wait(self.IDLE):
                with self._flag:
                    if not self._again:
                        self._thread = None
                        return False, None

    def _run(self) -> None:
        db = None
        with contextlib.suppress(AttributeError, OSError):  # Linux: this thread alone yields the CPU to the kernel's
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        try:
            while True:
                going, wanted = self._next()
                if not going:
                    break
                if db is None:
                    db = self._reading = self._connect()
                    if self._side is not None:
                        db.execute("ATTACH DATABASE ? AS side", (f"file:{self._side}?mode=ro",))
                rows = _activity(db, self._side is not None, wanted)
                store = self._store()
                if store is None or self._stop.is_set():
                    return
                with store._lock:
                    store._apply_activity(rows)
                    with self._flag:
                        self._swept_all = not self._again  # requests come under the store's lock: none can now
                    if self._swept_all:
                        self.failure = None
                        store._note_complete()
                del store
        except Exception as exc:  # kept; the next foreign write asks again
            if not self._stop.is_set():  # not the interrupt of stop()
                self.failure = f"{type(exc).__name__}: {exc}"
        finally:
            self._reading = None
            if db is not None:
                db.close()
            with self._flag:
                if self._thread is threading.current_thread():
                    self._thread = None
                self._idle.set()
