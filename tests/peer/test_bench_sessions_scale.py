"""bench/sessions_scale.py against the original itself: the original's own loadSessions takes every row the
generator writes (none skipped, every message kept), and the bench's Node driver (sessions_scale_original.mts)
runs the original's save and tools on it, leaving a row cireil reads. No timing is asserted."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from benchkit import load_bench
from cireil.runtime.sessions.store import SessionStore
from originalkit import Original
from upstream_db import check_row

scale = load_bench("sessions_scale")
TINY = scale.Size("tiny", 0.4, 120, 50)


def test_the_original_loads_saves_and_reads_what_the_generator_writes(original: Original, tmp_path: Path) -> None:
    source = tmp_path / "generated"
    info = scale.generate(source, TINY, 7)
    side = scale.OriginalSide(original, tmp_path / "original", source)
    try:
        loaded = side.request({"op": "load", "keep": scale.BIG_ROW})
        assert (loaded["sessions"], loaded["messages"]) == (info["sessions"], info["messages"])
        assert loaded["kept"] == info["big"]["messages"] and loaded["ms"] > 0
        saved = side.request({"op": "save"})
        assert saved["messages"] == info["big"]["messages"] + 3
        page = side.request({"op": "tool", "name": "read-session", "input": {"id": scale.BIG_ROW, "limit": 50}})
        assert page["result"]["messages"] == 50 and page["result"]["success"] is True
        listed = side.request({"op": "tool", "name": "list-sessions", "input": {}})
        assert listed["result"]["sessions"] == min(15, info["sessions"])
        found = side.request({"op": "tool", "name": "query-sessions", "input": scale.QUERY})
        assert found["result"]["totalMatches"] >= 1
        again = side.request({"op": "load", "keep": scale.BIG_ROW})
        assert again["messages"] == info["messages"] + 3  # the save reached the file
    finally:
        side.close()
    agent_dir = tmp_path / "original" / "home" / ".cireilclaw" / "agents" / scale.SLUG
    db = sqlite3.connect(agent_dir / "sessions.db")
    try:
        assert check_row(db, agent_dir, scale.BIG_ROW) == []
        stored = json.loads(db.execute("SELECT history FROM sessions WHERE id = ?", (scale.BIG_ROW,)).fetchone()[0])
    finally:
        db.close()
    assert stored[-3]["content"] == {"content": "bench turn 1", "type": "text"}
    with SessionStore.for_agent(agent_dir) as store:
        assert len(store.get(scale.BIG_SESSION).history) == info["big"]["messages"] + 3


def test_a_failing_op_says_what_failed(original: Original, tmp_path: Path) -> None:
    source = tmp_path / "generated"
    info = scale.generate(source, TINY, 7)
    side = scale.OriginalSide(original, tmp_path / "original", source)
    try:
        with pytest.raises(scale.OpFailed, match="no session kept"):
            side.request({"op": "save"})
        with pytest.raises(scale.OpFailed, match="unknown op"):
            side.request({"op": "nonsense"})
        answer = side.request({"op": "load", "keep": scale.BIG_ROW})  # the process is still there
        assert answer["kept"] == info["big"]["messages"]
    finally:
        side.close()
