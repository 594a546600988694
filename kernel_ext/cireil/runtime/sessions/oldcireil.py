"""Converting a sessions.db in the private format of earlier cireil versions to the original runtime's.

Earlier cireil kept one row per message, its own columns and an FTS index inside sessions.db, which the
original runtime cannot open (its migrations fail on the foreign tables). The conversion runs once, when
such a file is loaded: a consistent copy is kept first (SQLite's backup API, WAL included), the new
database is built beside it and only then put in place. Isolated cron sessions are not carried over
(the original never stores them, upstream-formats §5).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from .messages import CALL_ID, new_call_id
from .state import Session, platform_of

BACKUP_NAME = "sessions.cireil-old.db"


class NewStore(Protocol):
    """What the conversion writes the new database through: store.py's SessionStore, which calls `convert`
    and hands over how to open one (this module does not import it back)."""

    def commit(self, session: Session, new_messages: list[dict]) -> None: ...

    def add_attachment(self, session_id: str, message_id: str, filename: str, media_type: str, data: bytes) -> dict: ...

    def upsert_job(self, job: dict) -> None: ...

    def close(self) -> None: ...


def _backup_path(agent_dir: Path) -> Path:
    path = agent_dir / BACKUP_NAME
    n = 1
    while path.exists():
        n += 1
        path = agent_dir / f"sessions.cireil-old-{n}.db"
    return path


def _unique_calls(history: list[dict]) -> list[dict]:
    """Old histories could repeat a backend's per-reply call ids (call_0 ...); the original pairs by id."""
    taken: set[str] = set()
    renamed: dict[str, str] = {}
    for message in history:
        if message.get("role") == "assistant":
            renamed = {}
            for part in message.get("content") or ():
                if part.get("type") != "toolCall":
                    continue
                old = part.get("id")
                if not isinstance(old, str) or not CALL_ID.match(old) or old in taken:
                    part["id"] = new_call_id()
                    renamed[str(old)] = part["id"]
                taken.add(part["id"])
        elif message.get("role") == "toolResponse" and message.get("toolCallId") in renamed:
            message["toolCallId"] = renamed[message["toolCallId"]]
    return history


def _read_old(path: Path) -> tuple[list[Session], list[tuple], list[dict]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        sessions = []
        rows = db.execute(
            "SELECT id, platform, created, last_activity, cursor, opened_files, active_sections, summaries,"
            " provider, model, meta FROM sessions ORDER BY id"
        ).fetchall()
        for sid, platform, created, activity, cursor, opened, sections, summaries, provider, model, meta in rows:
            if sid.startswith("cron:"):
                continue
            history = [
                json.loads(body)
                for (body,) in db.execute("SELECT body FROM messages WHERE session_id = ? ORDER BY seq", (sid,))
            ]
            sessions.append(
                Session(
                    id=sid,
                    platform=platform or platform_of(sid),
                    opened_files=json.loads(opened or "[]"),
                    active_sections=json.loads(sections or "{}"),
                    history=_unique_calls(history),
                    cursor=cursor or 0,
                    summaries=json.loads(summaries or "[]"),
                    last_activity=activity,
                    created=created,
                    provider=provider,
                    model=model,
                    meta=json.loads(meta or "{}"),
                )
            )
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        attachments = (
            db.execute(
                "SELECT session_id, message_id, filename, media_type, data FROM attachments ORDER BY rowid"
            ).fetchall()
            if "attachments" in tables
            else []
        )
        jobs = (
            [json.loads(c) for (c,) in db.execute("SELECT config FROM cron_jobs WHERE status = 'pending'")]
            if "cron_jobs" in tables
            else []
        )
        return sessions, attachments, jobs
    finally:
        db.close()


def convert(path: Path, open_store: Callable[[Path], NewStore]) -> Path:
    """Convert the earlier cireil database at `path` in place; returns where the original file was kept."""
    agent_dir = path.parent
    backup = _backup_path(agent_dir)
    source = sqlite3.connect(path)
    try:
        target = sqlite3.connect(backup)
        try:
            source.backup(target)  # consistent, committed WAL content included
        finally:
            target.close()
        source.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        source.close()
    os.chmod(backup, 0o600)
    sessions, attachments, jobs = _read_old(backup)
    building = agent_dir / "sessions.db.cireil-converting"
    for suffix in ("", "-wal", "-shm"):
        Path(str(building) + suffix).unlink(missing_ok=True)
    store = open_store(building)
    try:
        for session in sessions:
            store.commit(session, list(session.history))
        for session_id, message_id, filename, media_type, data in attachments:
            store.add_attachment(session_id, message_id, filename, media_type, bytes(data))
        for job in jobs:
            store.upsert_job({k: v for k, v in job.items() if k != "status"})
    finally:
        store.close()
    for suffix in ("-wal", "-shm"):  # the old file's, checkpointed above; never to be applied to the new one
        Path(str(path) + suffix).unlink(missing_ok=True)
    os.replace(building, path)
    return backup
