"""Tool results too big for the model: cut to a limit for it, kept whole on disk for the person.

A 20 MB MCP result went into the conversation, was stored in sessions.db and re-sent with every
later request of the session. Results over `limit` bytes (as JSON) are saved whole under the agent
directory, in cireil's own folder `.cireil/results/` (never the workspace: the agent cannot read or
change it, and it is not synced as agent files), and the model gets the same result with long
strings cut and a `resultTruncated` note saying how big it was and where it is kept.

Rows written before results were capped (or by the original runtime) can still hold huge results:
`cap_stored` cuts them the same way each time a request is built, with the same note naming the
session history as where the whole result is; the stored row itself is never rewritten.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

RESULT_LIMIT = 256 * 1024  # bytes of JSON per tool result sent to the model; Agent.result_limit overrides it
RESULTS_DIR = ".cireil/results"
_SEQ = itertools.count(1)


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "replace"))


def _shrink(value: Any, cap: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= cap else value[:cap] + f"… [{len(value) - cap} more characters cut]"
    if isinstance(value, dict):
        return {k: _shrink(v, cap) for k, v in value.items()}
    if isinstance(value, list):
        return [_shrink(v, cap) for v in value]
    return value


def open_saved(agent_dir: Path, tool: str, call_id: str) -> tuple[Path, BinaryIO]:
    """A new file for a whole result, owner-only, never an existing one or a symlink; the caller writes it."""
    folder = agent_dir / RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", f"{tool}-{call_id}")[:80]
    path = folder / f"{stamp}-{next(_SEQ):04d}-{safe}.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    return path, os.fdopen(fd, "wb")


def _save(agent_dir: Path, tool: str, call_id: str, text: str) -> Path:
    path, f = open_saved(agent_dir, tool, call_id)
    with f:
        f.write(text.encode("utf-8", "replace"))
    return path


def truncation_note(size: int, limit: int, saved: Path, cut_at: int | None = None) -> dict[str, Any]:
    """The `resultTruncated` note the model gets; `cut_at` when even the copy on disk stops short."""
    return _note(size, limit, f"<agent dir>/{RESULTS_DIR}/{saved.name}", cut_at)


def _note(size: int, limit: int, shown: str, cut_at: int | None = None) -> dict[str, Any]:
    kept = (
        f"The first {cut_at} bytes of it are kept for the person at {shown}"
        if cut_at is not None
        else f"The whole result is kept for the person at {shown}"
    )
    return {
        "bytes": size,
        "limit": limit,
        "savedAs": shown,
        "note": (
            f"This result was {size}{'+' if cut_at is not None else ''} bytes, over the {limit}-byte limit for one "
            f"tool result: long text in it was cut. {kept}, outside your sandbox (you cannot read it). "
            "Ask for less (a narrower query, a smaller page) if you need what was cut."
        ),
    }


def _cut(data: Any, text: str, limit: int, note: dict) -> dict:
    """The largest cut of `data` (strings shortened, shape kept) that fits in `limit` with the note."""
    budget = max(limit - _size(note) - 64, 0)
    cap = limit
    while cap >= 64:
        cut = _shrink(data, cap)
        # a result that is not an object (an old row's plain string or list) is wrapped to carry the note
        candidate = dict(cut) if isinstance(data, dict) else {"result": cut}
        if _size(candidate) <= budget:
            candidate["resultTruncated"] = note
            return candidate
        cap //= 2
    # structure, not text, is what is big (a list of a million numbers): a prefix of its JSON is all that fits
    out: dict[str, Any] = {"preview": text[: max(budget // 2, 0)], "resultTruncated": note}
    if isinstance(data, dict) and "success" in data:
        out["success"] = data["success"]
    return out


def cap_result(data: dict, *, limit: int, agent_dir: Path, tool: str, call_id: str) -> dict:
    """`data` itself when it fits in `limit` bytes of JSON; else a cut copy with a note, the whole saved."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    size = len(text.encode("utf-8", "replace"))
    if size <= limit:
        return data
    return _cut(data, text, limit, truncation_note(size, limit, _save(agent_dir, tool, call_id, text)))


def cap_stored(output: Any, *, limit: int, message_id: str) -> Any:
    """A tool result read back from the session history, cut like `cap_result` when over `limit`.

    Nothing is saved: the whole result stays where it already is, in the session's stored history.
    """
    if output is None or isinstance(output, bool | int | float):
        return output
    text = json.dumps(output, ensure_ascii=False, default=str)
    size = len(text.encode("utf-8", "replace"))
    if size <= limit:
        return output
    shown = f"sessions.db (this session's history, message {str(message_id)[:80]})"
    return _cut(output, text, limit, _note(size, limit, shown))
