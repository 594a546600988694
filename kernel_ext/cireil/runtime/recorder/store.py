"""`<agent>/cireil-recordings.db`: recorded turns, their steps (model calls) and tool calls.

Messages, tool definitions and tool results are stored once by content (blake2b of their JSON, the
`blobs` table); a step keeps the request body with each message and tool replaced by its hash, so the
prefix a step shares with the one before costs a few bytes. `turn_blobs` says which turn uses which blob:
evicting a turn (oldest first, beyond the configured count or size) deletes the blobs no turn uses.

Each turn also keeps its MCP cassette (format 3): every tools/call answer as the server sent it
(`mcp_calls`, one row per call, keyed like its `calls` row) and the tools/list, revision, serverInfo and
instructions of each server it called (`mcp_servers`, a blob: the same listing is stored once across
turns). One answer is kept up to CALL_LIMIT characters of JSON; a bigger one is recorded as "not recorded:
too big", so a replay can say why it has no answer.

The file carries its format number. A file of format 1 (before step mode's reviews were kept) or 2
(before MCP cassettes) is migrated in place, in one transaction; its turns have no cassette (None). A
file of any other format is refused with a message saying what to do, never rewritten.
"""

from __future__ import annotations

import functools
import json
import math
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
FORMAT = 3
CASSETTE_FORMAT = "cireil-mcp-cassette/1"
# characters of JSON of one MCP call's answer kept: an answer the transport held whole at the default
# result limit (4 x 256 KiB, mcp/spill.py) fits; a bigger one is kept as "not recorded: too big"
CALL_LIMIT = 1024 * 1024
LISTING_LIMIT = 4 * 1024 * 1024  # characters of JSON of one server's tools/list and handshake kept

# format 3: each turn's MCP traffic (see the module's docstring); turns.mcp is 1 for a turn recorded with it
MCP_TABLES = """
CREATE TABLE mcp_calls (
    turn_id INTEGER NOT NULL,
    step INTEGER NOT NULL,
    position INTEGER NOT NULL,  -- the tool call's place in its step, as in calls
    server TEXT NOT NULL,
    tool TEXT NOT NULL,  -- the tool's name on the server
    arguments TEXT NOT NULL,
    answer TEXT NOT NULL,  -- {"result": ...} | {"error": ...} | {"notRecorded": "..."} as JSON
    PRIMARY KEY (turn_id, step, position)
) WITHOUT ROWID;
CREATE TABLE mcp_servers (
    turn_id INTEGER NOT NULL,
    server TEXT NOT NULL,
    listing TEXT NOT NULL,  -- blob hash of {"revision", "serverInfo", "instructions", "tools"}
    PRIMARY KEY (turn_id, server)
) WITHOUT ROWID;
"""

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
    origin TEXT,  -- a fork's origin: its turn and step and session as a JSON object
    -- mcp: 1 when the MCP traffic of the turn is in mcp_calls and mcp_servers; NULL for one recorded before format 3
    -- (no comma in a comment before a column: SQLite's DROP COLUMN takes the last comma before it for its own)
    mcp INTEGER
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
SCHEMA += MCP_TABLES

# format N -> the statements that make it format N + 1 (the format number itself is updated with them)
MIGRATIONS = {
    1: "ALTER TABLE calls ADD COLUMN review TEXT;",
    2: "ALTER TABLE turns ADD COLUMN mcp INTEGER;" + MCP_TABLES,
}


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
        self.skipped: dict[int, str] = {}  # turn id -> the one line saying why its row was left out
        self.told: set[int] = set()  # skipped rows already reported (load_turns says each once)
        if not path.exists():  # created 0600 before SQLite touches it: it holds whole conversations
            os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
        try:
            self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            # a hand-edited row of invalid UTF-8 would fail every query it is in: its bytes read back escaped
            self.db.text_factory = _text_of
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
        self,
        session_id: str,
        model: str,
        provider: str,
        user: dict | None,
        origin: dict | None = None,
        *,
        started: float | None = None,
    ) -> int:
        """A new turn, begun now; `started` (unix time) for a turn rebuilt afterwards (attach/reconstruct.py)."""
        cur = self.db.execute(
            "INSERT INTO turns (session_id, started, model, provider, user_message, origin, mcp)"
            " VALUES (CAST(? AS TEXT), ?, CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), 1)",
            _bound(
                session_id,
                time.time() if started is None else started,
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
        mcp_calls: list[tuple] | None = None,
        mcp_servers: list[tuple[str, str]] | None = None,
    ) -> None:
        """One model call and its tool calls, in one transaction; `blobs` are (hash, json) new to this turn.

        `mcp_calls` are (position, server, tool, arguments json, answer json) of the step's MCP calls,
        `mcp_servers` (server, listing blob hash) of servers first called in this step (their blob in `blobs`)."""
        db = self.db
        db.execute("BEGIN")
        try:
            if blobs:
                db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, CAST(? AS TEXT))", [_bound(*b) for b in blobs])
                db.executemany("INSERT OR IGNORE INTO turn_blobs VALUES (?, ?)", [(turn_id, h) for h, _ in blobs])
            db.execute(
                "INSERT OR REPLACE INTO steps VALUES (?, ?, CAST(? AS TEXT), CAST(? AS TEXT), ?, ?, ?)",
                _bound(turn_id, n, _dumps(request), _dumps(reply), estimate, ttft, latency),
            )
            if calls:
                db.executemany(
                    "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT),"
                    " CAST(? AS TEXT), ?, CAST(? AS TEXT))",
                    [_bound(turn_id, n, *c) for c in calls],
                )
            if mcp_calls:
                db.executemany(
                    "INSERT OR REPLACE INTO mcp_calls VALUES (?, ?, ?, CAST(? AS TEXT), CAST(? AS TEXT),"
                    " CAST(? AS TEXT), CAST(? AS TEXT))",
                    [_bound(turn_id, n, *c) for c in mcp_calls],
                )
            if mcp_servers:
                db.executemany(
                    "INSERT OR IGNORE INTO mcp_servers VALUES (?, CAST(? AS TEXT), ?)",
                    [_bound(turn_id, *m) for m in mcp_servers],
                )
            db.execute("UPDATE turns SET steps = ? WHERE id = ?", (n, turn_id))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @_locked
    def end_turn(self, turn_id: int, ended: str, error: str | None, usage: dict, seconds: float) -> None:
        self.db.execute(
            "UPDATE turns SET ended = CAST(? AS TEXT), error = CAST(? AS TEXT), usage = CAST(? AS TEXT), seconds = ?"
            " WHERE id = ?",
            _bound(ended, error, _dumps(usage), seconds, turn_id),
        )

    # -- size ----------------------------------------------------------------------------------
    @_locked
    def count(self) -> int:
        """How many turns the file holds (what `evict` compares with max_turns)."""
        return int(self.db.execute("SELECT count(*) FROM turns").fetchone()[0])

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
                ("mcp_calls", "turn_id"),
                ("mcp_servers", "turn_id"),
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
    # A row is checked before it is used and refused alone: a hand-edited or damaged row (not JSON, a
    # wrong type, a missing value, a value over VALUE_LIMIT) is named by its turn id in `skipped` and left
    # out, and every other turn reads as ever. Lengths are checked in SQL, so a huge value is never fetched.
    @_locked
    def turns(self, session_id: str | None = None) -> list[dict]:
        query = f"SELECT {_TURN_COLUMNS} FROM turns"
        rows = (
            self.db.execute(query + " WHERE session_id = CAST(? AS TEXT) ORDER BY id", _bound(session_id))
            if session_id is not None
            else self.db.execute(query + " ORDER BY id")
        )
        out = []
        for row in rows:
            turn = self._checked_turn(row)
            if turn is not None:
                out.append(turn)
        return out

    @_locked
    def turn(self, turn_id: int) -> dict | None:
        row = self.db.execute(f"SELECT {_TURN_COLUMNS} FROM turns WHERE id = ?", (turn_id,)).fetchone()
        return self._checked_turn(row) if row is not None else None

    def _checked_turn(self, row: tuple) -> dict | None:
        try:
            turn = _turn_row(row)
        except BadRow as exc:
            self.skipped[row[0]] = self.row_problem(row[0], str(exc))
            return None
        self.skipped.pop(turn["id"], None)
        return turn

    def row_problem(self, turn_id: Any, what: str) -> str:
        """The one line that names a bad row: the file, the turn, what is wrong, what to do."""
        return (
            f"{self.path}: recorded turn {turn_id} skipped: {what} (the row was edited or damaged; "
            f"DELETE it from the turns table, or move the file away to start a new recording)"
        )

    @_locked
    def steps(self, turn_id: int) -> tuple[list[StepRow], list[str]]:
        """The turn's steps that read well, and one line for each that does not."""
        rows = self.db.execute(
            f"SELECT n, {_capped('request')}, {_capped('reply')}, estimate, ttft, latency FROM steps"
            " WHERE turn_id = ? ORDER BY n",
            (turn_id,),
        )
        out, problems = [], []
        for r in rows:
            try:
                n = _int(r[0], "its number")
                request = _json_object(r[1:3], "request")
                for key in LISTS:
                    if key in request and not _all_str(request[key]):
                        raise BadRow(f"request {key} is not a list of blob hashes")
                reply = check_reply(_json_object(r[3:5], "reply"))
                estimate = _optional_int(r[5], "estimate")
                ttft, latency = _optional_number(r[6], "ttft"), _optional_number(r[7], "latency")
            except BadRow as exc:
                problems.append(f"step {r[0]!r} of turn {turn_id}: {exc}")
                continue
            out.append(StepRow(turn_id, n, request, reply, estimate, ttft, latency))
        return out, problems

    @_locked
    def calls(self, turn_id: int) -> tuple[list[dict], list[str]]:
        """The turn's tool calls that read well, and one line for each that does not."""
        rows = self.db.execute(
            f"SELECT step, position, call_id, name, {_capped('arguments')}, {_capped('result')}, duration,"
            f" {_capped('review')} FROM calls WHERE turn_id = ? ORDER BY step, position",
            (turn_id,),
        )
        out, problems = [], []
        for r in rows:
            try:
                review = _json_object(r[9:11], "review") if r[10] is not None else None
                call = {
                    "step": _int(r[0], "step"),
                    "position": _int(r[1], "position"),
                    "id": _optional_text(r[2], "call_id"),
                    "name": _text(r[3], "name"),
                    "arguments": _json_object(r[4:6], "arguments"),
                    "result": _json_object(r[6:8], "result"),
                    "duration": _number(r[8], "duration"),
                    "review": review,
                }
            except BadRow as exc:
                problems.append(f"tool call {r[1]!r} of step {r[0]!r} of turn {turn_id}: {exc}")
                continue
            out.append(call)
        return out, problems

    @_locked
    def cassette(self, turn_id: int) -> dict | None:
        """The turn's MCP traffic in the cassette shape (cireil.testing.mcp_cassette); None for a turn recorded
        before format 3 (or not found). A row that cannot be read is kept in its place as a call whose
        `notRecorded` says so: a replay then fails on that call with the reason instead of on the next one."""
        row = self.db.execute("SELECT mcp FROM turns WHERE id = ?", (turn_id,)).fetchone()
        if row is None or row[0] is None:
            return None
        servers: dict[str, dict] = {}
        listed = self.db.execute("SELECT server, listing FROM mcp_servers WHERE turn_id = ?", (turn_id,)).fetchall()
        blobs = self.blobs([h for _, h in listed if isinstance(h, str)])
        for name, digest in listed:
            listing = blobs.get(digest) if isinstance(digest, str) else None
            servers[str(name)] = _server_entry(
                listing, f"{self.path}: the tools/list of server {name!r} of turn {turn_id}"
            )
        rows = self.db.execute(
            f"SELECT step, position, server, tool, {_capped('arguments')}, {_capped('answer')} FROM mcp_calls"
            " WHERE turn_id = ? ORDER BY step, position",
            (turn_id,),
        )
        for step, position, server, tool, *values in rows:
            call: dict[str, Any] = {"tool": str(tool), "arguments": {}, "result": None, "error": None}
            try:
                call["arguments"] = _json_object(values[0:2], "arguments")
                answer = _json_object(values[2:4], "answer")
                for key in ("result", "error"):
                    if answer.get(key) is not None and not isinstance(answer[key], dict):
                        raise BadRow(f"its {key} is not an object")
                    call[key] = answer.get(key)
                if isinstance(answer.get("notRecorded"), str):
                    call["notRecorded"] = answer["notRecorded"]
                elif call["result"] is None and call["error"] is None:
                    raise BadRow("it has neither a result nor an error")
            except BadRow as exc:
                call["result"] = call["error"] = None
                call["notRecorded"] = f"{self.path}: MCP call {position} of step {step} of turn {turn_id}: {exc}"
            servers.setdefault(str(server), _server_entry(None, ""))["calls"].append(call)
        return {"format": CASSETTE_FORMAT, "servers": servers}

    @_locked
    def blobs(self, hashes: list[str]) -> dict[str, Any]:
        """Messages and tools by hash; one that is not JSON, or over VALUE_LIMIT, is a note saying so."""
        out: dict[str, Any] = {}
        unique = list(dict.fromkeys(hashes))
        for i in range(0, len(unique), 500):
            chunk = unique[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for h, text, size in self.db.execute(
                f"SELECT hash, {_capped('json')} FROM blobs WHERE hash IN ({marks})", chunk
            ):
                try:
                    out[h] = _json_value((text, size), "message")
                except BadRow as exc:
                    out[h] = {"not loaded": f"{self.path}: blob {h}: {exc}"}
        return out


VALUE_LIMIT = 32 * 2**20  # characters of one JSON value read back (a message, a reply, a tool result)
NAME_LIMIT = 4096  # characters of a session id, model, provider or end reason
ERROR_LIMIT = 64 * 1024  # characters of a turn's error read back (the rest stays in the file)
TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


class BadRow(ValueError):
    """One recorded row cannot be used; says what is wrong with it."""


def _server_entry(listing: Any, where: str) -> dict:
    """A server of a cassette from its stored listing; a listing missing or damaged gives an empty one that
    says why (`notRecorded`)."""
    entry: dict[str, Any] = {"revision": None, "serverInfo": None, "instructions": None, "tools": [], "calls": []}
    if not isinstance(listing, dict) or "not loaded" in listing:
        if where:
            why = listing.get("not loaded") if isinstance(listing, dict) else "missing from the blobs table"
            entry["notRecorded"] = f"{where}: {why}"
        return entry
    for key, kind in (("revision", str), ("serverInfo", dict), ("instructions", str)):
        if isinstance(listing.get(key), kind):
            entry[key] = listing[key]
    tools = listing.get("tools")
    entry["tools"] = [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
    if isinstance(listing.get("notRecorded"), str):
        entry["notRecorded"] = listing["notRecorded"]
    return entry


def _bound(*values: Any) -> tuple:
    """Query parameters with each text that UTF-8 cannot encode (a lone surrogate: a non-UTF-8 file name
    a tool read, a session named after one) as its bytes, which the statement casts back to TEXT."""
    return tuple(_sql_text(v) if isinstance(v, str) else v for v in values)


def _sql_text(text: str) -> str | bytes:
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape")  # read back as the same text by _text_of
        except UnicodeEncodeError:
            return text.encode("utf-8", "surrogatepass")


def _text_of(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _capped(column: str) -> str:
    """The column's value only when it is at most VALUE_LIMIT long, then its length: a huge one stays in the file."""
    return f"CASE WHEN length({column}) <= {VALUE_LIMIT} THEN {column} END, length({column})"


_TURN_COLUMNS = (
    "id, session_id, started, model, provider, "
    + _capped("user_message")
    + f", ended, substr(error, 1, {ERROR_LIMIT}), steps, "
    + _capped("usage")
    + ", seconds, "
    + _capped("origin")
)


def _json_value(pair: tuple[Any, Any], what: str) -> Any:
    text, size = pair
    if size is None:
        raise BadRow(f"{what} is missing")
    if text is None:
        raise BadRow(f"{what} is {size:,} characters, over the {VALUE_LIMIT:,} cireil reads")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRow(f"{what} is not UTF-8 text") from None
    if not isinstance(text, str):
        raise BadRow(f"{what} is a {type(text).__name__}, not JSON text")
    try:
        return json.loads(text)
    except RecursionError:
        raise BadRow(f"{what} is nested too deeply") from None
    except ValueError as exc:
        raise BadRow(f"{what} is not JSON ({exc})") from None


def _json_object(pair: tuple[Any, Any], what: str) -> dict:
    value = _json_value(pair, what)
    if not isinstance(value, dict):
        raise BadRow(f"{what} is not a JSON object")
    return value


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BadRow(f"{what} is {_shown(value)}, not a count")
    return value


def _optional_int(value: Any, what: str) -> int | None:
    return None if value is None else _int(value, what)


def _number(value: Any, what: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise BadRow(f"{what} is {_shown(value)}, not a number of seconds")
    return value


def _optional_number(value: Any, what: str) -> float | None:
    return None if value is None else _number(value, what)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise BadRow(f"{what} is {_shown(value)}, not text")
    if len(value) > NAME_LIMIT:
        raise BadRow(f"{what} is {len(value):,} characters, over {NAME_LIMIT:,}")
    return value


def _optional_text(value: Any, what: str) -> str | None:
    return None if value is None else _text(value, what)


def _shown(value: Any) -> str:
    if value is None:
        return "missing"
    if isinstance(value, (str, bytes)) and len(value) > 40:
        return f"a {type(value).__name__} of {len(value):,}"
    return repr(value)


def _all_str(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _usage(value: dict) -> dict:
    """Usage with every token count a count: a count that is not (a string, a float) is left out."""
    return {
        k: v
        for k, v in value.items()
        if k not in TOKEN_KEYS or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)
    }


def check_reply(reply: dict) -> dict:
    """A step's reply, checked to the shape replay, fork and the views rely on; BadRow (a ValueError) if not."""
    if not isinstance(reply, dict):
        raise BadRow("reply is not an object")
    if "error" in reply:
        if not isinstance(reply["error"], str):
            raise BadRow("reply error is not text")
    else:
        calls = reply.get("tool_calls")
        if calls is None:
            calls = reply["tool_calls"] = []
        if not isinstance(calls, list):
            raise BadRow("reply tool_calls is not a list")
        for call in calls:
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                raise BadRow("a tool call of the reply has no name")
            if not isinstance(call.get("arguments", {}), dict) or not isinstance(call.get("rawArguments", ""), str):
                raise BadRow(f"the arguments of tool call {call['name']!r} are not an object")
    for key in ("content", "reasoning", "finish_reason"):
        if not isinstance(reply.get(key), (str, type(None))):
            raise BadRow(f"reply {key} is not text")
    if not isinstance(reply.get("usage", {}), dict):
        raise BadRow("reply usage is not an object")
    if "usage" in reply:
        reply["usage"] = _usage(reply["usage"])
    return reply


def _turn_row(row: tuple) -> dict:
    """A turns row as the dict `turns()` gives, or BadRow."""
    (tid, session_id, started, model, provider, user, user_size, ended, error, steps) = row[:10]
    usage_pair, seconds, origin_pair = row[10:12], row[12], row[13:15]
    if not isinstance(started, (int, float)) or isinstance(started, bool) or not 0 <= started < 1e11:
        raise BadRow(f"started is {_shown(started)}, not a time")
    if isinstance(error, bytes):
        error = error.decode("utf-8", "replace")
    if error is not None and not isinstance(error, str):
        error = str(error)
    return {
        "id": tid,
        "session_id": _text(session_id, "session_id"),
        "started": started,
        "model": _text(model, "model"),
        "provider": _text(provider, "provider"),
        "user": _json_object((user, user_size), "user_message") if user_size is not None else None,
        "ended": _text(ended, "ended"),
        "error": error,
        "steps": _int(steps, "steps"),
        "usage": _usage(_json_object(usage_pair, "usage")),
        "seconds": _optional_number(seconds, "seconds"),
        "origin": _json_object(origin_pair, "origin") if origin_pair[1] is not None else None,
    }
