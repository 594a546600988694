"""bench/sessions_scale.py: its generated databases are in the original's format (upstream_db's checker, cireil's
store reading every session), the same for a seed, cached once; and one round of its cireil operations runs
on them, leaving the rows the original's. No timing is asserted: the figures are the bench's to print."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from benchkit import load_bench
from cireil.runtime.sessions.rowids import memory_id
from cireil.runtime.sessions.store import SessionStore
from cireil.testing.scripted_llm import ScriptedLLM, reply
from upstream_db import check_row

scale = load_bench("sessions_scale")
TINY = scale.Size("tiny", 0.4, 120, 50)  # 120 messages: more than 50 of them user or assistant


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    target = tmp_path_factory.mktemp("generated") / "db"
    return target, scale.generate(target, TINY, 3)


def rows(path: Path, table: str = "sessions") -> list[tuple]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=str)
    finally:
        db.close()


def test_every_row_is_as_the_original_writes_it(tiny: tuple[Path, dict]) -> None:
    target, info = tiny
    db = sqlite3.connect(target / "sessions.db")
    try:
        ids = [r[0] for r in db.execute("SELECT id FROM sessions")]
        problems = {row_id: check_row(db, target, row_id) for row_id in ids}
        assert {k: v for k, v in problems.items() if v} == {}
        histories = {r[0]: json.loads(r[1]) for r in db.execute("SELECT id, history FROM sessions")}
        channels = dict(db.execute("SELECT id, channel FROM sessions").fetchall())
        activity = dict(db.execute("SELECT id, last_activity FROM sessions").fetchall())
        pictures = db.execute("SELECT count(*) FROM images").fetchone()[0]
    finally:
        db.close()
    assert info["sessions"] == len(ids) and info["messages"] == sum(map(len, histories.values()))
    assert info["bytes"] == (target / "sessions.db").stat().st_size
    assert len(histories[scale.BIG_ROW]) == info["big"]["messages"] >= TINY.big
    assert set(channels.values()) == {"discord", "internal", "tui"}
    # only Discord messages set last_activity (upstream-formats §4.4)
    assert all((activity[i] is not None) == (channels[i] == "discord") for i in ids)
    # a guild channel of 30 messages or more: what another connection rewrites is one of the Discord rows
    assert any(channels[i] == "discord" and "|" in i and len(histories[i]) >= 30 for i in ids)
    kinds = {b.get("type") for h in histories.values() for m in h for b in _blocks(m)}
    assert {"text", "toolCall", "toolResponse", "thinking"} <= kinds
    # what query-sessions looks for is in user messages of every database, a few of them
    rare = [m for h in histories.values() for m in h if m["role"] == "user" and scale.RARE in json.dumps(m)]
    assert 1 <= len(rare) <= info["messages"] // 100
    assert pictures == sum(
        len({b["id"] for m in h for b in _blocks(m) if b.get("type") == "image_ref"}) for h in histories.values()
    )


def _blocks(message: dict) -> list[dict]:
    content = message["content"]
    return content if isinstance(content, list) else [content]


def test_cireil_reads_every_generated_session(tiny: tuple[Path, dict], tmp_path: Path) -> None:
    source, _ = tiny
    agent_dir = tmp_path / "agent"
    scale.copy_database(source, agent_dir)
    expected = {r[0]: len(json.loads(r[3])) for r in rows(agent_dir / "sessions.db")}
    with SessionStore.for_agent(agent_dir) as store:
        assert store.unreadable() == []
        got = {row_id: len(store.get(memory_id(row_id)).history) for row_id in expected}
    assert got == expected


def test_a_seed_makes_one_database_and_the_cache_keeps_it(tmp_path: Path) -> None:
    first, again, other = (tmp_path / n for n in ("first", "again", "other"))
    scale.generate(first, TINY, 5)
    scale.generate(again, TINY, 5)
    scale.generate(other, TINY, 6)
    assert rows(first / "sessions.db") == rows(again / "sessions.db")
    assert rows(first / "sessions.db", "images") == rows(again / "sessions.db", "images")
    assert rows(first / "sessions.db") != rows(other / "sessions.db")

    cache = tmp_path / "cache"
    made, info = scale.cached_database(cache, TINY, 5)
    stamp = (made / "sessions.db").stat().st_mtime_ns
    reused, info_again = scale.cached_database(cache, TINY, 5)
    assert (reused, info_again) == (made, info)
    assert (made / "sessions.db").stat().st_mtime_ns == stamp  # not generated again
    assert sorted(p.name for p in cache.iterdir()) == [made.name]  # no partial folder left
    assert rows(made / "sessions.db") == rows(first / "sessions.db")


def test_one_round_of_cireils_operations_runs_and_rows_stay_the_originals(
    tiny: tuple[Path, dict], tmp_path: Path
) -> None:
    source, info = tiny
    samples = scale.Samples()
    clock = scale.StoreClock()
    try:
        with ScriptedLLM(default=reply.tool_calls(("respond", {"content": "Noted."}))) as llm:
            side = scale.CireilSide(tmp_path / "cireil", source, info, llm, clock)
            try:
                firsts = scale.FirstOpens(tmp_path / "again", source, llm)
                firsts.run(TINY.label, samples)
                firsts.run(TINY.label, samples)  # each run deletes the side file the one before built
                scale.measure_round(TINY, side, None, samples)
            finally:
                side.close()
    finally:
        clock.restore()
    assert samples.errors == {}
    measured = {op for (_, op), values in samples.ms.items() if values}
    assert measured == {"load", "load.after", "call", "call.store", "list", "query", "read50", "turn"} | {
        "turn.commit",
        "turn.model",
        "floor",
        "first",
        "indexed",
    }
    assert len(samples.ms[(TINY.label, "indexed")]) == 2
    assert clock.missing == []  # the turn's commit is clocked: SessionStore still has commit and save_state
    db = sqlite3.connect(side.dir / "sessions.db")
    try:
        for row_id in (scale.BIG_ROW, side.foreign_id):
            assert check_row(db, side.dir, row_id) == []
        big = json.loads(db.execute("SELECT history FROM sessions WHERE id = ?", (scale.BIG_ROW,)).fetchone()[0])
        foreign = json.loads(db.execute("SELECT history FROM sessions WHERE id = ?", (side.foreign_id,)).fetchone()[0])
    finally:
        db.close()
    # the warm-up turn and the round's turn were stored; the foreign writer appended three turns of three messages
    # (before a load, a list and a query), to a Discord row
    assert len(big) > info["big"]["messages"]
    assert side.foreign_id.startswith("discord:") and side.foreign_chars > 0
    assert foreign[-1]["content"]["name"] == "respond" and "foreign turn 3" in json.dumps(foreign[-3])
