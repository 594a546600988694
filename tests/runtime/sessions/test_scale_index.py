"""The side index at scale (issue 35): which rows changed is told from their record headers, never their history;
what the original saves is seen by the next query; the first index of a big original's agent is built in the
background while everything else works; the fast row reader says what a decode of the whole row says."""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import orjson  # noqa: F401 - loaded, indexbuild._parsed reads rows of any size with it, as the test wants
import pytest

import cireil
import upstream_db as up
from cireil.render import result_bundle
from cireil.runtime.sessions import SessionStore, headers
from cireil.runtime.sessions import history_json as hj
from cireil.runtime.sessions.errors import SessionFormatError
from cireil.runtime.sessions.indexbuild import IndexBuilder, RowIndex, index_row, of_messages, shown_time
from cireil.runtime.sessions.messages import user_message
from cireil.runtime.sessions.sideindex import SideIndex
from cireil.runtime.sessions.sidestore import SIDE_FILE
from cireil.runtime.toolkit.result import ToolResult
from conftest import MINIMAL_TOOLS, make_agent
from conversationkit import Harness

WORDS = ("garden", "tomato", "deploy", "kernel", "ünï", "🌱", "water", "notes", "server", "build")


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def turn(rng: random.Random, ms: int, size: int = 8, marker: str = "") -> list[dict]:
    """One turn as the original stores it: the user message, a read and its result, the respond call."""
    call = f"call_{rng.getrandbits(48):012x}"
    user = {"content": {"content": words(rng, size) + marker, "type": "text"}, "role": "user", "timestamp": ms}
    return [
        user,
        {"content": {"id": call, "input": {"path": "/a.md"}, "name": "read", "type": "toolCall"}, "role": "assistant",
         "timestamp": ms + 1},
        {"content": {"id": call, "name": "read", "output": {"content": words(rng, size * 4)}, "type": "toolResponse"},
         "role": "toolResponse", "timestamp": ms + 2},
        {"content": {"id": call + "r", "input": {"content": words(rng, size)}, "name": "respond", "type": "toolCall"},
         "role": "assistant", "timestamp": ms + 3},
    ]  # fmt: skip


def history(rng: random.Random, turns: int, size: int = 8, start: int = 1772000000000) -> list[dict]:
    return [m for n in range(turns) for m in turn(rng, start + n * 60_000, size)]


def save(path: Path, row_id: str, messages: list[dict], activity: str | None = None) -> None:
    """The original's flush: one INSERT .. ON CONFLICT DO UPDATE of the whole row, its rowid kept, last_activity
    kept when unset (upstream-formats §6.1)."""
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        raw.execute(
            "INSERT INTO sessions (id, channel, meta, history, opened_files, last_activity, history_cursor,"
            " active_file_sections) VALUES (?, 'internal', '{}', ?, '[]', ?, 0, '{}') ON CONFLICT (id) DO UPDATE"
            " SET history = excluded.history, last_activity = COALESCE(excluded.last_activity, last_activity)",
            (row_id, up.dumps(messages), activity),
        )
    finally:
        raw.close()


def make_db(directory: Path, rows: dict[str, list[dict]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "sessions.db"
    up.create_original_db(path)
    for row_id, messages in rows.items():
        save(path, row_id, messages)
    return path


def contents(store: SessionStore, query: str) -> list[str]:
    return sorted(m["content"] for m in store.query(query, mode="raw", limit=30)[0])


def index_of(store: SessionStore) -> tuple:
    """What list-sessions and query-sessions answer from, for comparing two stores."""
    store.wait_for_index()
    listed = store.list_sessions(limit=30)
    found = store.query("*garden*", mode="glob", limit=30)
    return listed, found, store.side.execute("SELECT count(*) FROM search").fetchone()[0]


# -- change detection ------------------------------------------------------------------------------


def test_loads_and_the_first_query_after_a_foreign_write_read_no_history(tmp_path):
    """A row whose history cannot be read at all (its overflow pages damaged) does not stop a warm load, list,
    search, or the next query after another row was saved: nothing reads that history."""
    rng = random.Random(1)
    path = make_db(tmp_path, {"internal:small": history(rng, 3)})
    save(path, "internal:big", history(rng, 900, size=20))  # ~1.5 MB: its overflow pages end the file
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = raw.execute("PRAGMA page_size").fetchone()[0]
    pages = raw.execute("PRAGMA page_count").fetchone()[0]
    raw.close()
    SessionStore.for_agent(tmp_path).close()  # indexed whole once
    with path.open("r+b") as f:  # a page in the middle of the big row's overflow chain: the chain ends there
        f.seek((pages - 100) * page)
        f.write(bytes(page))
    raw = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        raw.execute("SELECT length(history) FROM sessions WHERE id = 'internal:big'").fetchone()
    assert headers.fingerprint(raw, ["id", "channel", "meta", "history", "opened_files"], "internal:big")[1] > 10**6
    raw.close()
    store = SessionStore.for_agent(tmp_path)
    try:
        assert {s["id"] for s in store.list_sessions()} == {"internal:small", "internal:big"}
        assert store.query("garden", mode="raw")[1] > 0
        save(path, "internal:small", [*history(rng, 3), *turn(rng, 1773000000000, marker=" zucchini")])
        assert contents(store, "zucchini")[0].endswith("zucchini")
        assert store.wait_for_index(10)
    finally:
        store.close()


def test_what_the_original_saves_is_seen_by_the_next_query(tmp_path):
    rng = random.Random(2)
    path = make_db(tmp_path, {"internal:a": history(rng, 5), "internal:b": history(rng, 5)})
    store = SessionStore.for_agent(tmp_path)
    try:
        kept = store.side.execute("SELECT rowid, text FROM search WHERE row_id = 'internal:a'").fetchall()
        grown = [*history(random.Random(2), 5), *turn(rng, 1773000000000, marker=" pumpkin")]
        save(path, "internal:a", grown)  # a turn appended
        assert contents(store, "pumpkin") == [grown[-4]["content"]["content"]]
        # indexed from where it was: the earlier messages' rows untouched
        assert store.side.execute("SELECT rowid, text FROM search WHERE row_id = 'internal:a'").fetchall()[:-1] == kept
        assert {s["id"]: s["messageCount"] for s in store.list_sessions()}["internal:a"] == 18
        grown[-4] = {**grown[-4], "content": {"content": "a rerolled squash", "type": "text"}}  # rewritten in place
        save(path, "internal:a", grown)
        assert contents(store, "pumpkin") == [] and contents(store, "squash") == ["a rerolled squash"]
        save(path, "internal:b", [])  # /clear
        assert {s["id"]: s["messageCount"] for s in store.list_sessions()}["internal:b"] == 0
        save(path, "internal:c", turn(rng, 1774000000000, marker=" melon"))  # a session the original started
        assert contents(store, "melon")[0].endswith("melon")
        raw = sqlite3.connect(path, isolation_level=None)
        raw.execute("DELETE FROM sessions WHERE id = 'internal:c'")  # its CLI `clear`
        raw.close()
        assert contents(store, "melon") == [] and "internal:c" not in {s["id"] for s in store.list_sessions()}
    finally:
        store.close()


def test_a_turn_appended_to_a_long_session_is_indexed_at_once(tmp_path, monkeypatch):
    """Past INLINE_INDEX_BYTES a changed row is read whole in the background; a row only appended to is not read
    whole at all: its new messages are indexed inside the query that noticed them."""
    rng = random.Random(12)
    messages = history(rng, 40)
    path = make_db(tmp_path, {"internal:long": messages})
    store = SessionStore.for_agent(tmp_path)
    try:
        monkeypatch.setattr(store, "INLINE_INDEX_BYTES", 1000)
        save(path, "internal:long", [*messages, *turn(rng, 1773000000000, marker=" fig")])
        assert contents(store, "fig")[0].endswith("fig") and store.index_status() is None
        messages[0]["content"]["content"] = "rewritten, a little longer"
        save(path, "internal:long", messages)  # not an append: read whole, in the background here
        assert store.query("fig", mode="raw")[1] in (0, 1) and store.wait_for_index(10)
        assert contents(store, "fig") == [] and contents(store, "rewritten") == ["rewritten, a little longer"]
    finally:
        store.close()


def test_an_edit_keeping_the_length_is_seen_at_the_sessions_next_save(tmp_path):
    """The one history change a row's header cannot show (headers.py): the search sees it when the original
    next saves that session, since an append is indexed alone only after the whole earlier text hashed equal."""
    rng = random.Random(3)
    messages = history(rng, 4)
    messages[0]["content"]["content"] = "fix teh typo"
    path = make_db(tmp_path, {"internal:e": messages})
    store = SessionStore.for_agent(tmp_path)
    try:
        before = store.side.execute("SELECT fingerprint FROM indexed_sessions").fetchall()
        messages[0]["content"]["content"] = "fix the typo"
        save(path, "internal:e", messages)
        assert contents(store, "fix teh") == ["fix teh typo"]  # not seen: the same byte length, the same header
        assert store.side.execute("SELECT fingerprint FROM indexed_sessions").fetchall() == before
        save(path, "internal:e", [*messages, *turn(rng, 1773000000000)])
        assert contents(store, "fix teh") == [] and contents(store, "fix the") == ["fix the typo"]
    finally:
        store.close()


def test_a_new_last_activity_alone_is_seen_after_a_background_sweep(tmp_path):
    """A Discord turn of the original that failed saves a new time of the same length and the same history."""
    rng = random.Random(4)
    path = make_db(tmp_path, {"internal:x": history(rng, 2), "internal:y": history(rng, 2)})
    save(path, "internal:x", history(random.Random(4), 2), "2026-05-01T10:00:00.000Z")
    save(path, "internal:y", history(rng, 2), "2026-05-02T10:00:00.000Z")
    store = SessionStore.for_agent(tmp_path)
    try:
        assert [s["id"] for s in store.list_sessions()] == ["internal:y", "internal:x"]
        save(path, "internal:x", history(random.Random(4), 2), "2026-05-03T10:00:00.000Z")
        store.list_sessions()  # the foreign write is noticed; its last_activity is read off this thread
        assert store.wait_for_index(10)
        listed = store.list_sessions()
        assert [s["id"] for s in listed] == ["internal:x", "internal:y"]
        assert listed[0]["lastActivity"] == "2026-05-03T10:00:00.000Z"
    finally:
        store.close()


def test_a_hand_edit_of_another_column_alone_is_seen_at_load(tmp_path):
    """A load compares every column's length, not the history's alone: an opened_files broken by hand while
    cireil was away is named at load."""
    rng = random.Random(5)
    path = make_db(tmp_path, {"internal:x": history(rng, 2), "internal:y": history(rng, 2)})
    SessionStore.for_agent(tmp_path).close()  # indexed whole once
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("UPDATE sessions SET opened_files = '[\"/a.md\", 7' WHERE id = 'internal:y'")
    raw.close()
    store = SessionStore.for_agent(tmp_path)
    try:
        assert any("internal:y" in note and "opened_files" in note for note in store.load_notes())
        assert "opened_files is not a JSON array of strings" in (store.session_error("internal:y") or "")
        assert store.session_error("internal:x") is None
    finally:
        store.close()


# -- the background build ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~20 MB in the original's rows, made with sqlite directly: more than is indexed inside a load."""
    rng = random.Random(5)
    directory = tmp_path_factory.mktemp("big")
    rows = {f"internal:s{n:02d}": history(rng, 250, size=70, start=1772000000000 + n * 10**9) for n in range(24)}
    rows["internal:s03"][-4]["content"]["content"] += " xylophonic"
    path = make_db(directory, rows)
    assert path.stat().st_size > 2 * SideIndex.INLINE_INDEX_BYTES
    return path


def agent_copy(big_db: Path, target: Path) -> Path:
    target.mkdir()
    shutil.copy(big_db, target / "sessions.db")
    return target


def inline_index(directory: Path, monkeypatch: pytest.MonkeyPatch) -> tuple:
    """The index a store builds inside its load (as for a small agent), to compare a background build with."""
    with monkeypatch.context() as m:
        m.setattr(SideIndex, "INLINE_INDEX_BYTES", 10**12)
        store = SessionStore.for_agent(directory)
        try:
            assert store.index_status() is None
            return index_of(store)
        finally:
            store.close()


class Gate:
    """Holds the background build's reader at each row until opened (it holds no lock then): before it reads the
    row, or after (`after`: what it read is then older than the row)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, after: bool = False) -> None:
        self.open = threading.Event()
        self.reached = threading.Event()
        self.rows: list[str] = []
        real = IndexBuilder._entry

        def held(store, db, row_id):
            entry = real(store, db, row_id) if after else None
            self.rows.append(row_id)
            self.reached.set()
            stopped = store._builder._stop  # as a read of a big row is: ended by close() too
            while not self.open.wait(0.02) and not stopped.is_set():
                pass
            return entry if after else real(store, db, row_id)

        monkeypatch.setattr(IndexBuilder, "_entry", staticmethod(held))


def test_the_first_open_of_a_big_agent_indexes_in_the_background(big_db, tmp_path, monkeypatch):
    expected = inline_index(agent_copy(big_db, tmp_path / "reference"), monkeypatch)
    directory = agent_copy(big_db, tmp_path / "agent")
    gate = Gate(monkeypatch)
    started = time.perf_counter()
    store = SessionStore.for_agent(directory)  # returns while no batch can have been stored
    try:
        assert time.perf_counter() - started < 5
        status = store.index_status()
        assert status is not None and status["indexing"] == {"indexed": 0, "sessions": 24}
        assert "Still indexing sessions in the background (0 of 24 done)" in status["note"]
        assert any("being built in the background" in note for note in store.load_notes())
        h = Harness(directory, store, "notebook:now")
        listed = h.run("list-sessions", {})
        found = h.run("query-sessions", {"query": "xylophonic", "mode": "raw"})
        assert listed["success"] and listed["indexing"]["indexed"] == 0 and "Still indexing" in listed["note"]
        assert found["success"] and found["totalMatches"] == 0 and "0 of 24 done" in found["note"]
        for name, data in (("list-sessions", listed), ("query-sessions", found)):  # a person sees it too
            bundle = result_bundle(ToolResult(name, {"query": "xylophonic"}, data))
            assert "Still indexing sessions in the background" in bundle["text/plain"], name
            assert "Still indexing sessions in the background" in bundle["text/html"], name
        # every other tool and turn works meanwhile: a session opens whole, a turn is stored
        assert len(store.get("internal:s03").history) == 1000
        h.add(user_message("written while the index is built"))
        assert h.run("read-session", {"id": "internal:s03", "limit": 2})["totalMessages"] == 750
        gate.open.set()
        assert store.wait_for_index(60)
        assert store.index_status() is None
        done = h.run("query-sessions", {"query": "xylophonic", "mode": "raw"})
        assert done["totalMatches"] == 1 and "note" not in done and "indexing" not in done
        listed, found, rows = index_of(store)
        assert [s for s in listed if s["id"] != "notebook:now"] == expected[0]
        assert found == expected[1] and rows == expected[2] + 1  # the notebook message written meanwhile
    finally:
        gate.open.set()
        store.close()


def test_the_build_follows_what_changes_while_it_runs(big_db, tmp_path, monkeypatch):
    directory = agent_copy(big_db, tmp_path / "agent")
    gate = Gate(monkeypatch, after=True)
    store = SessionStore.for_agent(directory)
    try:
        rng = random.Random(6)
        assert gate.reached.wait(30)  # the first row is read: cireil and the original then change it and others
        ours = store.get(gate.rows[0])
        ours.history.append(user_message("cireil wrote this just after the build read it"))
        store.commit(ours, ours.history[-1:])
        mine = store.get("internal:s01")  # cireil writes a session not yet indexed
        mine.history.append(user_message("cireil wrote this during the build"))
        store.commit(mine, mine.history[-1:])
        theirs = json.loads(store._raw_row(store._db, "internal:s02")[2])
        save(directory / "sessions.db", "internal:s02", [*theirs, *turn(rng, 1790000000000, marker=" quince")])
        raw = sqlite3.connect(directory / "sessions.db", isolation_level=None)
        raw.execute("DELETE FROM sessions WHERE id = 'internal:s04'")
        raw.close()
        assert store.query("quince", mode="raw")[1] == 0  # noticed, left to the build
        gate.open.set()
        assert store.wait_for_index(60)
        got = index_of(store)
    finally:
        gate.open.set()
        store.close()
    assert got == inline_index(agent_copy(directory / "sessions.db", tmp_path / "reference"), monkeypatch)
    assert got[1][0][0]["content"] != "" and len(got[0]) == 23


def test_closing_the_agent_stops_the_build_and_the_next_load_finishes_it(big_db, tmp_path, monkeypatch):
    directory = agent_copy(big_db, tmp_path / "agent")
    store = SessionStore.for_agent(directory)
    builder = store._builder
    assert builder is not None
    started = time.perf_counter()
    store.close()
    assert time.perf_counter() - started < 5
    assert not any(thread.is_alive() for thread in builder._threads)
    assert builder.failure is None
    store = SessionStore.for_agent(directory)
    try:
        got = index_of(store)
    finally:
        store.close()
    assert got == inline_index(agent_copy(big_db, tmp_path / "reference"), monkeypatch)


def test_a_loaded_agent_works_at_once_and_its_close_ends_the_build(big_db, tmp_path, monkeypatch):
    """cireil.load of an original's big agent: tools answer while the index is built, and closing the agent
    (what a kernel does at %unload_ext or shutdown) ends the build's threads."""
    directory = make_agent(tmp_path, MINIMAL_TOOLS + "read-session = true\nquery-sessions = true\n")
    shutil.copy(big_db, directory / "sessions.db")
    gate = Gate(monkeypatch)
    agent = cireil.load(directory)
    try:
        assert any("being built in the background" in str(w) for w in agent.warnings)
        assert agent.call("read-session", id="internal:s03", limit=1).data["totalMessages"] == 750
        assert "Still indexing" in agent.call("query-sessions", query="xylophonic", mode="raw").data["note"]
        builder = agent.store._builder
        assert builder is not None and builder.running()
    finally:
        started = time.perf_counter()
        agent.close()  # with the reader held at its first row
        closed = time.perf_counter() - started
        gate.open.set()
    assert closed < 5 and not any(thread.is_alive() for thread in builder._threads)


def test_a_side_file_of_an_earlier_cireil_is_indexed_again(big_db, tmp_path, monkeypatch):
    directory = agent_copy(big_db, tmp_path / "agent")
    store = SessionStore.for_agent(directory)
    expected = index_of(store)
    store.close()
    # fingerprints as cireil made them before they came from row headers (every row looks changed), and no
    # token of the content the index is complete for: that cireil kept none
    with contextlib.closing(sqlite3.connect(directory / SIDE_FILE, isolation_level=None)) as side:
        side.execute("UPDATE indexed_sessions SET fingerprint = '1234|0||2|2|2', prefix_hash = NULL")
        side.execute("DROP TABLE index_state")
    store = SessionStore.for_agent(directory)
    try:
        assert store.index_status() is not None
        assert index_of(store) == expected  # emptied first: no search row twice
    finally:
        store.close()


# -- the fast row reader ----------------------------------------------------------------------------


MUTATIONS = [
    lambda m: m.pop("role"),
    lambda m: m.update(role="robot"),
    lambda m: m.update(role=None),
    lambda m: m.update(content="a bare string"),
    lambda m: m.update(content=None),
    lambda m: m.update(content=[{"type": "hologram"}]),
    lambda m: m.update(content=[{"type": "text", "content": 5}]),
    lambda m: m.update(content=[{"type": "text", "content": "a", "text": "b"}]),
    lambda m: m.update(content=[{"type": "image_ref", "id": 5, "mediaType": "image/png"}]),
    lambda m: m.update(content=[{"type": "image_ref", "id": "ab", "mediaType": "image/png"}, "x"]),
    lambda m: m.update(content=[]),
    lambda m: m.update(content={"type": "thinking", "thinking": "hm"}),
    lambda m: m.update(timestamp="yesterday"),
    lambda m: m.update(timestamp=True),
    lambda m: m.pop("timestamp"),
    lambda m: m.update(role="system", content={"type": "text", "content": "sys"}),
    lambda m: m.update(role="toolResponse", content={"type": "text", "content": "x"}),
    lambda m: m.update(content={"type": "text", "content": ""}),
    lambda m: m.update(content=[{"type": "text", "content": "a"}, {"type": "text", "content": "b"}]),
    lambda m: m.update(extra={"kept": True}),
    # what json and orjson read differently, or only one of them reads (see indexbuild._parsed)
    lambda m: m.update(timestamp=2**64),
    lambda m: m.update(timestamp=-(2**63) - 1),
    lambda m: m.update(timestamp=1772000000000.5),
    lambda m: m.update(extra={"big": 2**70, "negative": -(2**64), "nan": float("nan"), "inf": float("inf")}),
    lambda m: m.update(extra="@deep@"),
    lambda m: m.update(extra="@surrogate@"),
    lambda m: m.update(content={"type": "text", "content": "@surrogate@"}),
]
# written into the JSON text by hand (json.dumps writes neither)
SPELLED = {'"@deep@"': "[" * 1500 + "]" * 1500, '"@surrogate@"': '"\\ud800 alone"'}


def spelled(messages: list[dict]) -> str:
    text = up.dumps(messages)
    for marker, raw in SPELLED.items():
        text = text.replace(marker, raw)
    return text


def as_shown(entry: RowIndex) -> tuple:
    items = [(pos, role, shown_time(stamp, ts), ts, text) for pos, role, stamp, ts, text in entry.items]
    return entry.error, entry.count, entry.preview, entry.elements, items


def test_the_fast_reader_says_what_the_whole_decode_says(tmp_path):
    store = SessionStore.for_agent(tmp_path)
    try:
        rng = random.Random(8)
        for n in range(400):
            messages = history(rng, rng.randint(0, 3), size=3)
            for _ in range(rng.randint(0, 3)):
                if messages:
                    rng.choice(MUTATIONS)(rng.choice(messages))
            row = ("internal", "{}", spelled(messages), "[]", None, 0, "{}")
            got = index_row(f"internal:r{n}", row, "fp", store._decode, store._row_problem)
            # from the row's bytes (orjson) as from its text (json): the same entry
            raw = row[2].encode("utf-8")
            from_bytes = index_row(f"internal:r{n}", row, "fp", store._decode, store._row_problem, raw)
            assert as_shown(from_bytes) == as_shown(got), messages
            try:
                decoded, _, _ = store._decode(f"internal:r{n}", row, images=False)
            except SessionFormatError as exc:
                assert (got.error, got.items, got.count) == (str(exc), [], 0), messages
                continue
            want = of_messages(f"internal:r{n}", "fp", decoded)
            assert got.error is None, messages
            assert (got.count, got.preview, got.elements) == (want.count, want.preview, want.elements), messages
            shown = [(pos, role, shown_time(stamp, ts), ts, text) for pos, role, stamp, ts, text in got.items]
            assert shown == want.items, messages
    finally:
        store.close()


def test_a_stored_time_reads_back_as_the_same_number():
    """The fast reader takes a message's time as ms / 1000 where the decode takes to_epoch(ms_to_iso(ms))."""
    rng = random.Random(9)
    for ms in [0, 1, 999, 1000, 1777629605391, *(rng.randint(0, 4102444800000) for _ in range(20000))]:
        assert hj.iso_to_epoch(hj.ms_to_iso(ms)) == ms / 1000, ms


def test_search_times_of_rows_indexed_fast_are_shown_as_before(tmp_path):
    rng = random.Random(10)
    messages = history(rng, 3)
    messages[0]["content"]["content"] = "marker early"
    messages[4]["content"]["content"] = "marker late"
    messages[4]["timestamp"] = 1777629605391
    make_db(tmp_path, {"internal:t": messages})
    store = SessionStore.for_agent(tmp_path)
    try:
        found = {m["content"]: m["timestamp"] for m in store.query("marker", mode="raw")[0]}
        assert found == {"marker early": hj.ms_to_iso(1772000000000), "marker late": hj.ms_to_iso(1777629605391)}
        # a since that is no date: compared as text with the times as shown, as before
        later = store.query("marker", mode="raw", since=hj.ms_to_iso(1777629605391)[:7])[0]
        assert [m["content"] for m in later] == ["marker late"]
    finally:
        store.close()
