"""A sessions.db as the original CireilClaw runtime makes and fills it, and a checker of its rows.

Both are written from ../shared/reference/upstream-formats.md (§4 sessions.db and history JSON, §5 ids,
§7 what must hold), independently of cireil's store: the fixture executes the migration files and
bookkeeping rows itself, and the checker parses rows with nothing but json and re.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path

import blake3

from cireil.runtime.sessions.upstream_schema import BREAKPOINT, MIGRATIONS

# upstream-formats §4.3: the six rows drizzle records (name, created_at, SHA-256 of migration.sql)
REFERENCE_ROWS = [
    (
        "20260215093206_sour_red_shift",
        1771147926000,
        "0b2b1162b356d0af49abb3b867768ea178a319bb8ad9130274109751452b1f80",
    ),
    (
        "20260215093654_amusing_the_hunter",
        1771148214000,
        "24827dca2a8a5576794910a57870a801939c891fa842a24a5f735eae05922870",
    ),
    (
        "20260218124035_awesome_rumiko_fujikawa",
        1771418435000,
        "0947ca894952c9148d0473c93f184d36dfbbd18f6683e758bb4b67427a21bda4",
    ),
    (
        "20260219150000_add_last_activity",
        1771513200000,
        "73a2e9f9c89a0add90149273716fd2df266fedc880b549a71a92e597610ab310",
    ),
    (
        "20260418221350_add_history_cursor",
        1776550430000,
        "9a888dba73f4e154bc5859da8608e31c0050e9e2abd0050a7eda3806bc972071",
    ),
    (
        "20260505072039_misty_micromacro",
        1777965639000,
        "d055dc377b5f08726483b0ea9c240ac7a5671d6ee63e3f6b55290a1095b8f46d",
    ),
]

GUILD = "discord:1425768080998400016|1174109840998400016"
DM = "discord:1425000000000000001"
PHOTO = b"RIFF\x1a\x00\x00\x00WEBPVP8 fake photo bytes \xff\x00"
PHOTO_ID = blake3.blake3(PHOTO).hexdigest()


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def create_original_db(path: Path) -> None:
    """What the original's initDb leaves: the migrations in one transaction, their bookkeeping rows, WAL."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("BEGIN")
    db.execute(
        'CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id INTEGER PRIMARY KEY, hash text NOT NULL,'
        " created_at numeric, name text, applied_at TEXT)"
    )
    for (name, created, sql), (ref_name, ref_created, ref_hash) in zip(MIGRATIONS, REFERENCE_ROWS, strict=True):
        assert (name, created, hashlib.sha256(sql.encode()).hexdigest()) == (ref_name, ref_created, ref_hash)
        for statement in sql.split(BREAKPOINT):
            if statement.strip():
                db.execute(statement)
        db.execute(
            'INSERT INTO "__drizzle_migrations" (hash, created_at, name, applied_at) VALUES (?, ?, ?, ?)',
            (ref_hash, ref_created, ref_name, "2026-05-05T07:30:00.000Z"),
        )
    db.execute("COMMIT")
    db.close()
    path.chmod(0o600)


def _text(content: str, **extra: object) -> dict:
    return {"content": content, **extra, "type": "text"}


GUILD_HISTORY = [  # upstream-formats §4.6, plus a photo on the first message
    {
        "content": [
            _text(
                "can you check what my garden notes say about the tomatoes?",
                discord={
                    "author": {"displayName": "Robin", "id": "402981735266648064", "username": "robin.g"},
                    "format": "message",
                    "mentionsYou": True,
                    "messageId": "1499711982796907187",
                    "timestamp": "2026-05-01T12:00:00+02:00 (Friday, CEST)",
                },
            ),
            {"id": PHOTO_ID, "mediaType": "image/webp", "type": "image_ref"},
        ],
        "id": "1499711982796907187",
        "persist": True,
        "role": "user",
        "timestamp": 1777629600000,
    },
    {
        "content": [
            {"thinking": "The notes live in /memories/garden.md; read them first.", "type": "thinking"},
            {"id": "call_Q2mV7xT1pK9s", "input": {"path": "/memories/garden.md"}, "name": "read", "type": "toolCall"},
        ],
        "role": "assistant",
        "timestamp": 1777629602870,
    },
    {
        "content": {
            "id": "call_Q2mV7xT1pK9s",
            "name": "read",
            "output": {"content": "# Garden\n\n- tomatoes: water every morning\n", "path": "/memories/garden.md"},
            "type": "toolResponse",
        },
        "role": "toolResponse",
        "timestamp": 1777629605391,
    },
    {
        "content": {
            "id": "call_b8Rr0LwZ4eNc",
            "input": {"content": "Your notes say: water the tomatoes every morning.", "final": True},
            "name": "respond",
            "type": "toolCall",
        },
        "role": "assistant",
        "timestamp": 1777629605392,
        "id": "1499712007954285599",
    },
    {
        "content": {
            "id": "call_b8Rr0LwZ4eNc",
            "name": "respond",
            "output": {"final": True, "sent": True},
            "type": "toolResponse",
        },
        "role": "toolResponse",
        "timestamp": 1777629606014,
    },
]

DM_HISTORY = [
    {
        "content": _text("hej, är du där? 🌱", discord={"format": "message", "messageId": "1499800000000000001"}),
        "id": "1499800000000000001",
        "persist": True,
        "role": "user",
        "timestamp": 1777700000000,
    },
    {
        "content": [
            {"thinking": "A greeting.", "signature": "c2lnbmF0dXJl", "type": "thinking"},
            {"data": "opaque-redacted-blob", "type": "redacted_thinking"},
            {"id": "toolu_01ABCdef", "input": {"content": "Ja! 🌞"}, "name": "respond", "type": "toolCall"},
        ],
        "id": "1499800000000000002",
        "messageIds": ["1499800000000000002", "1499800000000000003"],
        "role": "assistant",
        "timestamp": 1777700001000,
    },
    {
        "content": {
            "id": "toolu_01ABCdef",
            "name": "respond",
            "output": {"final": True, "sent": True},
            "type": "toolResponse",
        },
        "role": "toolResponse",
        "timestamp": 1777700002000,
    },
]

TUI_HISTORY = [
    {
        "content": {"content": "What is on the heartbeat list?", "type": "text"},
        "role": "user",
        "timestamp": 1777800000000,
    },
    {
        "content": {
            "id": "call_tui000000000000000001",
            "input": {"content": "Nothing due."},
            "name": "respond",
            "type": "toolCall",
        },
        "role": "assistant",
        "timestamp": 1777800001000,
    },
    {
        "content": {
            "id": "call_tui000000000000000001",
            "name": "respond",
            "output": {"final": True, "sent": True},
            "type": "toolResponse",
        },
        "role": "toolResponse",
        "timestamp": 1777800002000,
    },
]

NOTES_HISTORY = [
    {
        "content": {"content": "remember the tomato seeds", "type": "text"},
        "id": "n1",
        "role": "user",
        "timestamp": 1777900000000,
    },
    {"content": {"content": "Noted.", "type": "text"}, "id": "n2", "role": "assistant", "timestamp": 1777900001000},
]

# rows the original itself would skip or that its session tools reject (upstream-formats §4.5, §5)
BAD_ROWS = {
    "internal:object-history": ("internal", "{}", '{"0":{"role":"user","content":{"content":"x","type":"text"}}}'),
    "internal:odd-block": (
        "internal",
        "{}",
        dumps([{"content": {"type": "hologram", "content": "?"}, "role": "user", "timestamp": 1777000000000}]),
    ),
    "discord:999": ("discord", dumps({"channelId": "111"}), "[]"),
}


def fill(path: Path, agent_dir: Path) -> None:
    """Rows as the original writes them: Discord guild + DM, TUI, a named internal session, bad rows."""
    images = agent_dir / "images"
    images.mkdir(exist_ok=True)
    (images / f"{PHOTO_ID}.webp").write_bytes(PHOTO)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA foreign_keys = ON")
    rows = [
        (
            GUILD,
            "discord",
            {"channelId": GUILD[8:].split("|")[0], "guildId": GUILD.split("|")[1], "isNsfw": False},
            GUILD_HISTORY,
            "2026-05-01T10:00:00.512Z",
        ),
        (DM, "discord", {"channelId": DM[8:]}, DM_HISTORY, "2026-05-02T05:33:20.000Z"),
        ("tui", "tui", {}, TUI_HISTORY, None),
        ("internal:notes", "internal", {}, NOTES_HISTORY, None),
    ]
    for row_id, channel, meta, history, activity in rows:
        db.execute(
            "INSERT INTO sessions (id, channel, meta, history, opened_files, last_activity, history_cursor,"
            " active_file_sections) VALUES (?, ?, ?, ?, ?, ?, 0, '{}')",
            (row_id, channel, dumps(meta), dumps(history), "[]", activity),
        )
    db.execute("INSERT INTO images (id, session_id, media_type) VALUES (?, ?, 'image/webp')", (PHOTO_ID, GUILD))
    db.execute(
        "INSERT INTO summaries (session_id, slug, display_name, start_message_id, end_message_id, preserve, summary,"
        " created_at) VALUES (?, 'tomato-care', 'Tomato care', '1499711982796907187', '1499712007954285599', '[]',"
        " 'Robin asked about tomato care; notes say water each morning.', 1777629700)",
        (GUILD,),
    )
    for row_id, (channel, meta, history) in BAD_ROWS.items():
        db.execute(
            "INSERT INTO sessions (id, channel, meta, history, opened_files) VALUES (?, ?, ?, ?, '[]')",
            (row_id, channel, meta, history),
        )
    db.execute(
        "INSERT INTO cron_jobs (job_id, type, config, next_run, status, retry_count, created_at) VALUES"
        " ('water-reminder', 'one-shot', ?, '2099-05-02T07:00:00+02:00', 'pending', 0, '2026-05-01T10:00:00.000Z')",
        (
            dumps(
                {
                    "delivery": "announce",
                    "enabled": True,
                    "execution": "isolated",
                    "id": "water-reminder",
                    "prompt": "Remind Robin to water the tomatoes.",
                    "schedule": {"at": "2099-05-02T07:00:00+02:00"},
                    "target": GUILD,
                }
            ),
        ),
    )
    db.close()


def snapshot(path: Path) -> dict:
    """Everything in the database, to compare before and after."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out = {"schema": sorted(db.execute("SELECT type, name, sql FROM sqlite_master").fetchall(), key=str)}
        tables = {r[1] for r in out["schema"] if r[0] == "table"}
        for table in ("sessions", "images", "summaries", "cron_jobs", "__drizzle_migrations"):
            if table in tables:
                out[table] = sorted(db.execute(f'SELECT * FROM "{table}"').fetchall(), key=str)
        return out
    finally:
        db.close()


# -- the checker ----------------------------------------------------------------------------------------

_BLOCKS = {
    "user": {"text", "image_ref", "video_ref"},
    "assistant": {"text", "image_ref", "toolCall", "thinking", "redacted_thinking"},
}
_META_KEYS = {
    "discord": {
        "channelId",
        "guildId",
        "parentChannelId",
        "isNsfw",
        "historyBarrier",
        "lastContextWarningCursor",
        "selectedProvider",
        "selectedModel",
    },
    "internal": {"historyBarrier", "lastContextWarningCursor", "selectedProvider", "selectedModel"},
}
_META_KEYS["tui"] = _META_KEYS["internal"]
_BLOCK_KEYS = {  # §4.5: the fields of each block type
    "text": {"content", "discord", "type"},
    "image_ref": {"id", "mediaType", "type"},
    "video_ref": {"attachmentId", "mediaType", "type", "url"},
    "toolCall": {"id", "input", "name", "type"},
    "thinking": {"thinking", "signature", "type"},
    "redacted_thinking": {"data", "type"},
}
_CALL_ID = re.compile(r"[A-Za-z0-9_-]+\Z")
_SNOWFLAKE = re.compile(r"[0-9]+\Z")
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\Z")
EXT = {"image/gif": ".gif", "image/jpeg": ".jpg", "image/png": ".png", "image/webp": ".webp"}


def _no_constants(name: str) -> None:
    raise ValueError(f"{name} is not JSON.parse-able")


def check_row(db: sqlite3.Connection, agent_dir: Path, row_id: str) -> list[str]:
    """What in this sessions row breaks upstream-formats §4.4–4.5, §5 or §7 (empty: nothing)."""
    problems: list[str] = []
    row = db.execute(
        "SELECT channel, meta, history, opened_files, last_activity, history_cursor, active_file_sections"
        " FROM sessions WHERE id = ?",
        (row_id,),
    ).fetchone()
    channel, meta_text, history_text, opened_text, activity, cursor, sections_text = row
    if channel not in ("discord", "internal", "tui", "matrix"):
        problems.append(f"channel {channel!r}")
    meta = json.loads(meta_text, parse_constant=_no_constants)
    if not isinstance(meta, dict) or not set(meta) <= _META_KEYS.get(channel, set()):
        problems.append(f"meta keys {meta}")
    elif any(v is None or v == "" for v in meta.values()):
        problems.append("meta has null or empty values")
    derived = {
        "discord": f"discord:{meta.get('channelId')}" + (f"|{meta['guildId']}" if "guildId" in meta else ""),
        "tui": "tui",
    }.get(channel, row_id if row_id.startswith("internal:") else None)
    if derived != row_id:
        problems.append(f"id {row_id} is not the derived {derived}")
    history = json.loads(history_text, parse_constant=_no_constants)
    if not isinstance(history, list):
        return [*problems, "history is not an array"]
    if dumps(history) != history_text:
        problems.append("history is not compact JSON with non-ASCII unescaped")
    seen_calls: set[str] = set()
    images = {r[0] for r in db.execute("SELECT id FROM images WHERE session_id = ?", (row_id,))}
    for index, message in enumerate(history):
        role, content = message.get("role"), message.get("content")
        where = f"{row_id} message {index}"
        if not isinstance(message.get("timestamp"), int):
            problems.append(f"{where}: timestamp {message.get('timestamp')!r} is not integer ms")
        if channel == "discord":
            for mid in [message.get("id"), *list(message.get("messageIds", []))]:
                if mid is not None and not _SNOWFLAKE.match(str(mid)):
                    problems.append(f"{where}: id {mid!r} is not a snowflake")
        if role == "toolResponse":
            if not isinstance(content, dict) or content.get("type") != "toolResponse":
                problems.append(f"{where}: toolResponse without its block")
            continue
        if role not in _BLOCKS:
            problems.append(f"{where}: role {role!r} is never stored")
            continue
        blocks = content if isinstance(content, list) else [content]
        if role == "assistant" and isinstance(content, list) and len(content) < 2:
            problems.append(f"{where}: a one-block assistant content must be a bare object")
        calls = []
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in _BLOCKS[role]:
                problems.append(f"{where}: block {kind!r} not allowed for {role}")
            elif not set(block) <= _BLOCK_KEYS[kind]:
                extra = sorted(set(block) - _BLOCK_KEYS[kind])
                problems.append(f"{where}: {kind} block with keys beyond §4.5: {extra}")
            elif kind == "text" and not isinstance(block.get("content"), str):
                problems.append(f"{where}: text block content is not a string")
            elif kind == "image_ref":
                ref, media = block.get("id"), block.get("mediaType")
                file = agent_dir / "images" / f"{ref}{EXT.get(media, '.bin')}"
                if not re.fullmatch(r"[0-9a-f]{64}", str(ref)) or not file.is_file():
                    problems.append(f"{where}: image_ref {ref} has no file {file.name}")
                elif blake3.blake3(file.read_bytes()).hexdigest() != ref:
                    problems.append(f"{where}: {file.name} is not named by its BLAKE3")
                if ref not in images:
                    problems.append(f"{where}: no images row for {ref}")
            elif kind == "toolCall":
                call_id = block.get("id")
                if not isinstance(call_id, str) or not _CALL_ID.match(call_id) or call_id in seen_calls:
                    problems.append(f"{where}: tool call id {call_id!r} invalid or repeated")
                seen_calls.add(str(call_id))
                calls.append(call_id)
        following = []
        for after in history[index + 1 :]:
            if after.get("role") != "toolResponse":
                break
            following.append(after["content"].get("id"))
        if calls and following[: len(calls)] != calls:
            problems.append(f"{where}: tool calls {calls} are not answered right after ({following})")
    opened = json.loads(opened_text)
    if not isinstance(opened, list) or not all(isinstance(p, str) for p in opened):
        problems.append("opened_files is not an array of strings")
    sections = json.loads(sections_text)
    if not isinstance(sections, dict) or not all(isinstance(v, list) for v in sections.values()):
        problems.append("active_file_sections is not an object of arrays")
    if not isinstance(cursor, int) or not 0 <= cursor <= len(history):
        problems.append(f"history_cursor {cursor!r} out of range")
    if activity is not None and not _ISO.match(activity):
        problems.append(f"last_activity {activity!r} is not Date.toISOString()")
    ids = {m.get("id") for m in history}
    for start, end, preserve, created in db.execute(
        "SELECT start_message_id, end_message_id, preserve, created_at FROM summaries WHERE session_id = ?", (row_id,)
    ):
        if start not in ids or end not in ids or not set(json.loads(preserve)) <= ids:
            problems.append(f"summary names ids not in the history: {start}..{end}")
        if not isinstance(created, int) or created > 10**11:
            problems.append(f"summary created_at {created!r} is not Unix seconds")
    return problems


# cireil's own sessions.db schema before it kept the original's (user_version 1)
OLD_CIREIL_SCHEMA = """
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


def create_old_cireil_db(path: Path) -> None:
    """A sessions.db as cireil wrote it before it kept the original's format: a notebook session whose two
    steps reuse a backend's per-reply call id, a scheduled run, an attachment and a pending job."""
    db = sqlite3.connect(path, isolation_level=None)
    db.executescript(f"BEGIN;{OLD_CIREIL_SCHEMA}PRAGMA user_version = 1;COMMIT;")
    db.execute("PRAGMA journal_mode = WAL")
    history = []
    for n in range(2):
        history += [
            {
                "id": f"mu{n}",
                "role": "user",
                "timestamp": f"2026-03-0{n + 1}T10:00:00+01:00",
                "content": [{"type": "text", "text": f"question {n} ✓"}],
            },
            {
                "id": f"ma{n}",
                "role": "assistant",
                "timestamp": f"2026-03-0{n + 1}T10:00:05+01:00",
                "content": [
                    {
                        "type": "toolCall",
                        "id": "call_scripted_0",
                        "name": "respond",
                        "input": {"content": f"answer {n}"},
                    }
                ],
                "usage": {"prompt_tokens": 10},
            },
            {
                "id": f"mt{n}",
                "role": "toolResponse",
                "timestamp": f"2026-03-0{n + 1}T10:00:06+01:00",
                "toolCallId": "call_scripted_0",
                "name": "respond",
                "output": {"final": True, "sent": True},
            },
        ]
    sessions = {"notebook:main": history, "cron:demo:job": history[:3]}
    for sid, msgs in sessions.items():
        db.execute(
            "INSERT INTO sessions (id, platform, created, last_activity, cursor, opened_files, meta, message_count)"
            " VALUES (?, ?, '2026-03-01T09:00:00+01:00', ?, 0, '[\"/workspace/a.md\"]', '{}', ?)",
            (sid, "remote" if sid.startswith("notebook") else "internal", msgs[-3]["timestamp"], len(msgs)),
        )
        for seq, m in enumerate(msgs):
            db.execute(
                "INSERT INTO messages (session_id, seq, message_id, role, body) VALUES (?, ?, ?, ?, ?)",
                (sid, seq, m["id"], m["role"], json.dumps(m)),
            )
    db.execute(
        "INSERT INTO attachments VALUES ('a1', 'notebook:main', 'mu0', 'notes.txt', 'text/plain', 2, ?)", (b"hi",)
    )
    job = {
        "delivery": "announce",
        "enabled": True,
        "execution": "isolated",
        "id": "tea",
        "prompt": "tea?",
        "schedule": {"at": "2099-01-01T00:00:00+00:00"},
        "target": "notebook:main",
    }
    db.execute(
        "INSERT INTO cron_jobs VALUES ('tea', 'one-shot', ?, '2099-01-01T00:00:00+00:00', 'pending')",
        (json.dumps(job),),
    )
    db.close()
