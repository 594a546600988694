"""Session ids in cireil and row ids in sessions.db (upstream-formats §5), and who else has the file open.

Notebook and CLI sessions (any `<adapter>:<name>` id) are stored as the original's named internal sessions:
notebook:main is the row internal:notebook:main, and reads back as notebook:main. Isolated cron runs are
never stored. A row's id must be the one the original derives from its channel and meta.
"""

from __future__ import annotations

from typing import Any

from .state import platform_of

UPSTREAM_PREFIXES = ("discord", "matrix", "internal", "cron", "tui")
CHANNELS = ("discord", "matrix", "internal", "tui")


def stored_id(session_id: str) -> str | None:
    """The sessions.db row id of a session cireil names `session_id`; None for ephemeral cron runs (§5)."""
    if session_id.startswith("cron:"):
        return None
    if platform_of(session_id) == "remote":
        return "internal:" + session_id
    return session_id


def memory_id(row_id: str) -> str:
    if row_id.startswith("internal:"):
        name = row_id[len("internal:") :]
        prefix, sep, _ = name.partition(":")
        if sep and prefix not in UPSTREAM_PREFIXES:
            return name
    return row_id


def channel_for(row_id: str) -> str:
    if row_id == "tui":
        return "tui"
    prefix = row_id.split(":", 1)[0]
    return prefix if prefix in ("discord", "matrix") else "internal"


def meta_for_new(row_id: str) -> dict:
    """The meta a new row of that id needs so the original derives the same id from it (§5)."""
    if row_id.startswith("discord:"):
        channel, _, guild = row_id[len("discord:") :].partition("|")
        return {"channelId": channel, **({"guildId": guild} if guild else {})}
    if row_id.startswith("matrix:"):
        return {"roomId": row_id[len("matrix:") :]}
    return {}


def id_problem(row_id: str, channel: Any, meta: Any) -> str | None:
    """Why the original would skip or rename this row (§4.4, §5), or None."""
    if channel not in CHANNELS:
        return f"channel {channel!r} is not one the original reads (it skips this row)"
    if not isinstance(meta, dict):
        return "meta is not a JSON object"
    if channel == "discord":
        cid, gid = meta.get("channelId"), meta.get("guildId")
        if not isinstance(cid, str) or not cid or (gid is not None and (not isinstance(gid, str) or not gid)):
            return "Discord meta lacks a channelId (or has an empty guildId)"
        derived = f"discord:{cid}" + (f"|{gid}" if gid else "")
    elif channel == "matrix":
        room = meta.get("roomId")
        derived = f"matrix:{room}" if isinstance(room, str) and room else None
    elif channel == "tui":
        derived = "tui"
    elif not row_id.startswith("internal:"):
        return (
            f"a legacy internal id without the internal: prefix (the original renames it to internal:{row_id} "
            "when it next starts; cireil leaves it until then)"
        )
    else:
        derived = row_id
    if derived != row_id:
        return f"its id does not match its channel {channel!r} and meta (the original would use {derived!r})"
    return None
