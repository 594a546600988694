"""Which of the original's sessions a model request belongs to (the rule is documented in docs/attach.md).

1. `prompt_cache_key` in the body (the original's `openai` and `openai-codex` kinds send the session's own id
   there), or the Codex `session_id` header: the session id, exactly.
2. Otherwise (the `anthropic` kind sends no id) the `<metadata>` lines the original writes at the end of its
   system prompt for every session:
   - `The channel id is: C` (Discord): the sessions.db row `discord:C` or `discord:C|<guild>`; before the
     original first saved the session (2 s after its first turn), `discord:C`, marked "guild not known yet";
   - `This is an internal cron session (job ID: J)`: `cron:J` (an isolated cron run, never saved);
   - `This is a TUI session ...`: `tui`;
   - `This is a persistent internal session`: the name is not in the request. The turn's first user message
     is matched against the prompts of cron.toml's `execution = "main"` jobs and the heartbeat's (it begins
     `[HEARTBEAT] `); a match gives
     that job's `target` (`last` resolved as the original does: the sessions.db row with the latest
     last_activity). No match: `internal:?` (said in the turn's link).
"""

from __future__ import annotations

import re
import sqlite3
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .wire import system_text

_CHANNEL = re.compile(r"^The channel id is: (\S+)$", re.M)
_CRON = re.compile(r"^This is an internal cron session \(job ID: (.+)\)$", re.M)
# how the original's heartbeat prompt begins (its interface text, matched, never shown)
HEARTBEAT_MARK = "[HEARTBEAT] "
_PLATFORM = re.compile(r"^The current session is on the platform: (\S+)$", re.M)


@dataclass(frozen=True)
class Link:
    session: str
    how: str  # the rule that named it, shown beside the turn
    platform: str | None = None  # discord | internal | tui, as the original's prompt says


def link(kind: str, body: dict, headers: dict[str, str], agent_dir: Path, first_user_text: str | None) -> Link:
    system = system_text(kind, body)
    platform = _last(_PLATFORM, system)
    key = body.get("prompt_cache_key")
    if isinstance(key, str) and key:
        return Link(key, "prompt_cache_key", platform)
    header = headers.get("session_id")
    if header:
        return Link(header, "session_id header", platform)
    channel = _last(_CHANNEL, system)
    if channel is not None:
        found = _discord_row(agent_dir, channel)
        if found is not None:
            return Link(found, "channel id in the system prompt, sessions.db row", "discord")
        return Link(f"discord:{channel}", "channel id in the system prompt (guild not known yet)", "discord")
    job = _last(_CRON, system)
    if job is not None:
        return Link(f"cron:{job}", "cron job id in the system prompt", "internal")
    if platform == "tui":
        return Link("tui", "platform tui in the system prompt", "tui")
    if platform == "internal":
        target = _job_target(agent_dir, first_user_text)
        if target is not None:
            return Link(target[0], target[1], "internal")
        return Link("internal:?", "a persistent internal session the request does not name", "internal")
    return Link("unknown", "no session named in the request", platform)


def _last(pattern: re.Pattern[str], text: str) -> str | None:
    found = pattern.findall(text)
    return found[-1] if found else None


def _rows(agent_dir: Path, query: str, args: tuple) -> list[tuple]:
    path = agent_dir / "sessions.db"
    if not path.exists():
        return []
    try:  # read-only: the proxy never writes the original's database
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=1)
        try:
            return db.execute(query, args).fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return []


def _discord_row(agent_dir: Path, channel: str) -> str | None:
    rows = _rows(
        agent_dir,
        "SELECT id FROM sessions WHERE id = ? OR substr(id, 1, ?) = ? ORDER BY id",
        (f"discord:{channel}", len(f"discord:{channel}|"), f"discord:{channel}|"),
    )
    return rows[0][0] if rows else None


def _last_active(agent_dir: Path) -> str | None:
    rows = _rows(
        agent_dir, "SELECT id FROM sessions WHERE last_activity IS NOT NULL ORDER BY last_activity DESC LIMIT 1", ()
    )
    return rows[0][0] if rows else None


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _job_target(agent_dir: Path, text: str | None) -> tuple[str, str] | None:
    """(session, how) of the cron main job or heartbeat whose prompt the turn started with."""
    if not text:
        return None
    config = agent_dir / "config"
    candidates: list[tuple[str, str]] = []
    for job in _read_toml(config / "cron.toml").get("jobs") or ():
        if isinstance(job, dict) and job.get("execution") == "main" and job.get("prompt") == text:
            candidates.append((str(job.get("target", "last")), f"cron job {job.get('id')!r} (its prompt)"))
    heartbeat = _read_toml(config / "heartbeat.toml")
    if heartbeat and text.startswith(HEARTBEAT_MARK):
        candidates.append((str(heartbeat.get("target", "last")), "the heartbeat (its prompt)"))
    for target, how in candidates:
        if target == "last":
            resolved = _last_active(agent_dir)
            if resolved is not None:
                return resolved, f"{how}, target last"
            continue
        if target not in ("none", "owner"):
            return target, how
    return None
