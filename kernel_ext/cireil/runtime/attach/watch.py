"""`agent.watch()` / `%cireil watch`: production turns as the proxy records them, each time one moves.

The proxy (its own process) writes each model call of a production turn into cireil-recordings.db as its reply
comes in. Watching polls that file on a read-only connection of its own (a cheap query of ids, step counts and
ends: WAL lets it read while the proxy writes) and loads a turn whole, through the agent's store, only when it
began, got a step or ended. It never writes: a watcher that stops, or a kernel that dies, changes nothing for
the proxy or the original.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..recorder.model import RecordedTurn

POLL = 0.25  # seconds between looks at the recordings file
_PRODUCTION = '%"production"%'  # the origin column of a turn the proxy recorded (capture.py writes it)


def _snapshot(db: sqlite3.Connection, after: int, running: set[int]) -> list[tuple[int, int, str]]:
    """(id, steps, ended) of production turns newer than `after`, or among those seen running."""
    marks = ",".join("?" * len(running))
    where = f"id > ? OR id IN ({marks})" if running else "id > ?"
    rows = db.execute(
        f"SELECT id, steps, ended FROM turns WHERE origin LIKE ? AND ({where}) ORDER BY id",
        (_PRODUCTION, after, *running),
    )
    return [(int(i), int(s), str(e)) for i, s, e in rows]


def follow(
    path: Path,
    load: Callable[[int], RecordedTurn | None],
    *,
    poll: float = POLL,
    timeout: float | None = None,
    stop: threading.Event | None = None,
) -> Iterator[RecordedTurn]:
    """Each production turn recorded in `path` (the recordings file), again each time it changes (a model call
    added, its end): the turns running when the watch begins and every one that begins after. `load` reads a turn
    whole. Ends after `timeout` seconds (None: never), when `stop` is set, or when the consumer stops."""
    deadline = None if timeout is None else time.monotonic() + timeout
    db: sqlite3.Connection | None = None
    seen: dict[int, tuple[int, str]] = {}
    running: set[int] = set()
    after: int | None = None
    try:
        while True:
            if db is None and path.exists():
                db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None)
            if db is not None:
                if after is None:
                    # the watch begins: what is running now is shown, what ended before is not
                    top = db.execute("SELECT COALESCE(MAX(id), 0) FROM turns").fetchone()[0]
                    running = {
                        int(i)
                        for (i,) in db.execute(
                            "SELECT id FROM turns WHERE origin LIKE ? AND ended = 'running'", (_PRODUCTION,)
                        )
                    }
                    after = int(top)
                for turn_id, steps, ended in _snapshot(db, after, running):
                    if seen.get(turn_id) == (steps, ended):
                        continue
                    turn = load(turn_id)
                    if turn is None:
                        continue  # a damaged row: the store said it once
                    seen[turn_id] = (steps, ended)
                    if ended == "running":
                        running.add(turn_id)
                    else:
                        running.discard(turn_id)
                    yield turn
                if seen:
                    after = max(after, max(seen))
            if stop is not None and stop.is_set():
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(poll)
    finally:
        if db is not None:
            db.close()


def describe(turn: Any) -> str:
    """One line for a watched turn: its id, session, where it came from, how far it got."""
    from .listing import source_of

    state = "running" if turn.ended == "running" else f"ended: {turn.ended}"
    usage = turn.usage or {}
    tokens = ""
    if usage:
        tokens = f" · {usage.get('prompt_tokens', '-')} in / {usage.get('completion_tokens', '-')} out"
    text = " ".join((turn.text or "").split())[:60]
    return (
        f"production turn {turn.id} · {turn.session_id} · {source_of(turn)} · {turn.step_count} model calls"
        f" · {state}{tokens}" + (f" · “{text}”" if text else "")
    )
