"""read-session of another session reads only the page it returns (sessions/pages.py), and says exactly what a
decode of the whole session says: compared on random sessions, written by cireil and by the original, as they
grow and change."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

import upstream_db as up
from cireil.runtime.sessions import SessionStore
from cireil.runtime.sessions import history_json as hj
from cireil.runtime.sessions.messages import assistant_message, system_message, tool_response, user_message
from conversationkit import Harness

WORDS = ["tomato", "basil", "ünïcödé", "🌱", "water", "<b>soil</b>", "deploy", '"quoted"', "back\\slash", "line\nbreak"]


@pytest.fixture
def h(tmp_path: Path, store: SessionStore) -> Harness:
    return Harness(tmp_path, store, "notebook:reader")


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))


def stamp(rng: random.Random) -> str:
    day, second = rng.randint(1, 28), rng.randint(0, 86399)
    zone = rng.choice(("+00:00", "+02:00", "-05:30"))
    return f"2026-03-{day:02d}T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}{zone}"


def cireil_turn(rng: random.Random) -> list[dict]:
    """Messages as cireil's own turns make them, with extras the side file keeps (reactions, offsets, usage)."""
    call = {"type": "toolCall", "id": f"c{rng.getrandbits(32)}", "name": "read", "input": {"path": "/w/a.md"}}
    parts = [{"type": "text", "text": text(rng)}, call] if rng.random() < 0.5 else [call]
    if rng.random() < 0.3:
        parts.insert(0, {"type": "thinking", "thinking": text(rng) * 30})
    reply = {"type": "toolCall", "id": f"r{rng.getrandbits(32)}", "name": "respond", "input": {"content": text(rng)}}
    out = [
        user_message(text(rng), timestamp=stamp(rng)),
        assistant_message(parts, timestamp=stamp(rng), usage={"prompt_tokens": rng.randint(1, 99)}),
        tool_response(call["id"], "read", {"content": text(rng) * 20, "success": True}),
        assistant_message([reply], timestamp=stamp(rng), **({"reactions": ["👍"]} if rng.random() < 0.3 else {})),
        tool_response(reply["id"], "respond", {"final": True, "sent": True}),
    ]
    if rng.random() < 0.2:
        out.append(system_message("context only", persistent=False))
    if rng.random() < 0.2:
        out[0]["content"].append({"type": "text", "text": ""})  # an empty part
    return out


def original_turn(rng: random.Random, ms: int) -> list[dict]:
    """Messages as the original's save writes them (upstream_db's shapes)."""
    reply = {
        "id": f"call_{rng.getrandbits(40)}",
        "input": {"content": text(rng)},
        "name": "respond",
        "type": "toolCall",
    }
    user = {"content": {"content": text(rng), "type": "text"}, "role": "user", "timestamp": ms}
    if rng.random() < 0.3:
        user["content"] = [user["content"], {"id": up.PHOTO_ID, "mediaType": "image/webp", "type": "image_ref"}]
    if rng.random() < 0.5:
        user["id"] = str(1499711982796907187 + rng.getrandbits(20))
    done = {"id": reply["id"], "name": "respond", "output": {"final": True, "sent": True}, "type": "toolResponse"}
    return [
        user,
        {"content": reply, "role": "assistant", "timestamp": ms + rng.choice((0, 1, 999, 1000))},
        {"content": done, "role": "toolResponse", "timestamp": ms + 2000},
    ]


def save_as_original(path: Path, row_id: str, history: list[dict]) -> None:
    """The original's flush: one INSERT .. ON CONFLICT DO UPDATE of the whole row (its rowid kept)."""
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        raw.execute(
            "INSERT INTO sessions (id, channel, meta, history, opened_files, last_activity, history_cursor,"
            " active_file_sections) VALUES (?, 'internal', '{}', ?, '[]', NULL, 0, '{}') ON CONFLICT (id) DO UPDATE"
            " SET history = excluded.history, meta = excluded.meta, opened_files = excluded.opened_files",
            (row_id, up.dumps(history)),
        )
    finally:
        raw.close()


def random_args(rng: random.Random, session_id: str, count: int) -> dict:
    args = {"id": session_id, "order": rng.choice(("asc", "desc")), "limit": rng.randint(1, 100)}
    args["offset"] = rng.randint(0, max(0, count + 3))
    if rng.random() < 0.4:
        args["since"] = rng.choice((stamp(rng), "2026-03-10", "not a date", "2026-03-15T12:00:00Z"))
    return args


def whole(h: Harness, monkeypatch: pytest.MonkeyPatch, args: dict) -> dict:
    """read-session the way it went before pages: from a decode of the whole session."""
    with monkeypatch.context() as m:
        m.setattr(h.store, "read_page", lambda *a, **k: None)
        return h.run("read-session", args)


def paged(h: Harness, monkeypatch: pytest.MonkeyPatch, args: dict) -> tuple[dict, int]:
    """read-session through pages, which must not decode the session: (result, messages decoded)."""
    h.store.refresh_index()  # what another process wrote is indexed first: that decodes its new messages
    decoded = []
    real = hj.decode_message
    with monkeypatch.context() as m:
        m.setattr(hj, "decode_message", lambda *a: decoded.append(1) or real(*a))
        m.setattr(type(h.store), "get", lambda *a, **k: pytest.fail("the whole session was decoded"))
        result = h.run("read-session", args)
    return result, len(decoded)


def test_a_page_is_what_the_whole_decode_gives_on_random_sessions(h, store, monkeypatch, tmp_path):
    rng = random.Random(35)
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / f"{up.PHOTO_ID}.webp").write_bytes(up.PHOTO)
    originals: dict[str, list[dict]] = {}
    for n in range(6):
        mine = store.open_session(f"notebook:s{n}")
        originals[f"internal:o{n}"] = []
        for _ in range(rng.randint(0, 12)):
            turn = cireil_turn(rng)
            mine.history += turn
            store.commit(mine, turn)
            originals[f"internal:o{n}"] += original_turn(rng, 1772000000000 + rng.randint(0, 10**9))
            save_as_original(store.path, f"internal:o{n}", originals[f"internal:o{n}"])
            for session_id in (f"notebook:s{n}", f"internal:o{n}"):
                count = whole(h, monkeypatch, {"id": session_id})["totalMessages"]
                for _ in range(3):
                    args = random_args(rng, session_id, count)
                    expected = whole(h, monkeypatch, args)
                    if "since" in args:  # near a message's time the page is read whole: no spy then
                        assert h.run("read-session", args) == expected, args
                        continue
                    got, decoded = paged(h, monkeypatch, args)
                    assert got == expected, args
                    assert decoded == len(got["messages"]), args  # only the page's messages
    assert store.side.execute("SELECT count(*) FROM paged_sessions").fetchone()[0] >= 10


def test_a_page_of_a_long_session_decodes_only_its_messages(h, store, monkeypatch):
    rng = random.Random(1)
    session = store.open_session("notebook:long")
    for _ in range(120):
        turn = cireil_turn(rng)
        session.history += turn
        store.commit(session, turn)
    args = {"id": "notebook:long", "order": "desc", "limit": 50, "offset": 30}
    expected = whole(h, monkeypatch, args)
    got, decoded = paged(h, monkeypatch, args)  # the first page takes the layout: one parse, no decode
    assert got == expected and decoded == 50 and expected["totalMessages"] == 360
    got, decoded = paged(h, monkeypatch, {**args, "order": "asc", "offset": 300})
    assert got == whole(h, monkeypatch, {**args, "order": "asc", "offset": 300}) and decoded == 50


def test_the_layout_follows_appends_and_is_taken_again_after_other_changes(h, store, monkeypatch):
    rng = random.Random(7)
    taken = []
    real = type(store)._take_layout
    monkeypatch.setattr(type(store), "_take_layout", lambda self, *a: taken.append(a[0]) or real(self, *a))
    history = [m for _ in range(20) for m in original_turn(rng, 1772000000000 + rng.randint(0, 10**9))]
    save_as_original(store.path, "internal:theirs", history)
    session = store.open_session("notebook:mine")
    session.history += cireil_turn(rng)
    store.commit(session, session.history)

    def check(session_id: str) -> None:
        for args in ({"id": session_id, "limit": 7}, {"id": session_id, "order": "asc", "offset": 3, "limit": 100}):
            assert h.run("read-session", args) == whole(h, monkeypatch, args)

    check("internal:theirs")
    check("notebook:mine")
    assert taken == ["internal:theirs", "internal:notebook:mine"]
    for _ in range(3):  # appended by the original's saves and by cireil's commits: followed, not taken again
        history += original_turn(rng, 1773000000000 + rng.randint(0, 10**9))
        save_as_original(store.path, "internal:theirs", history)
        check("internal:theirs")
        turn = cireil_turn(rng)
        session.history += turn
        store.commit(session, turn)
        check("notebook:mine")
    assert len(taken) == 2
    # a commit right after another process wrote, before cireil looked: which row the header then describes
    # is not known (the other process may have written this one), so the layout is taken again when next read
    history += original_turn(rng, 1773500000000)
    save_as_original(store.path, "internal:theirs", history)
    turn = cireil_turn(rng)
    session.history += turn
    store.commit(session, turn)
    check("notebook:mine")
    check("internal:theirs")
    assert taken[2:] == ["internal:notebook:mine"]
    history[1] = original_turn(rng, 1774000000000)[1]  # a reroll: the layout is taken again
    save_as_original(store.path, "internal:theirs", history)
    check("internal:theirs")
    assert taken[3:] == ["internal:theirs"]


def test_an_edit_keeping_the_length_is_read_as_it_is_now(h, store, monkeypatch):
    rng = random.Random(11)
    history = [m for _ in range(10) for m in original_turn(rng, 1772000000000 + 10**6 * rng.randint(0, 999))]
    history[0]["content"] = {"content": "fix teh typo", "type": "text"}
    history[3]["content"] = {"content": "abcdefgh", "type": "text"}
    history[6]["content"] = {"content": "ijklmnop", "type": "text"}
    save_as_original(store.path, "internal:edited", history)
    args = {"id": "internal:edited", "order": "asc", "limit": 100}
    h.run("read-session", args)  # the layout is taken
    before = store.side.execute("SELECT fingerprint FROM indexed_sessions WHERE session_id = 'internal:edited'")
    history[0]["content"] = {"content": "fix the typo", "type": "text"}  # the same length: the same fingerprint
    save_as_original(store.path, "internal:edited", history)
    assert (
        store.side.execute("SELECT fingerprint FROM indexed_sessions WHERE session_id = 'internal:edited'").fetchall()
        == before.fetchall()
    )
    got = h.run("read-session", args)
    assert got["messages"][0]["content"] == "fix the typo" and got == whole(h, monkeypatch, args)
    # messages moved within the same length: what the layout says no longer lies there, read whole
    history[3]["content"] = {"content": "abcdefghXX", "type": "text"}
    history[6]["content"] = {"content": "ijklmn", "type": "text"}
    save_as_original(store.path, "internal:edited", history)
    got = h.run("read-session", args)
    assert got == whole(h, monkeypatch, args)
    assert [m["content"] for m in got["messages"] if m["role"] == "user"][1:3] == ["abcdefghXX", "ijklmn"]


def test_unreadable_and_unknown_sessions_say_what_the_whole_decode_says(h, store, monkeypatch):
    save_as_original(store.path, "internal:broken", [{"content": {"type": "hologram"}, "role": "user"}])
    for session_id in ("internal:broken", "internal:nothing", "notebook:reader"):
        args = {"id": session_id}
        assert h.run("read-session", args) == whole(h, monkeypatch, args)
    assert h.run("read-session", {"id": "internal:broken"})["error"].startswith(
        "sessions.db: session internal:broken: message 0: unknown block type"
    )


def test_a_page_while_the_index_is_stale_or_built_is_read_whole(h, store, monkeypatch):
    rng = random.Random(5)
    history = [m for _ in range(5) for m in original_turn(rng, 1772000000000 + rng.randint(0, 10**9))]
    save_as_original(store.path, "internal:late", history)
    args = {"id": "internal:late", "order": "asc"}
    assert h.run("read-session", args) == whole(h, monkeypatch, args)
    # the side file's index of that row says nothing about the row as it is now: never used
    store.side.execute("UPDATE indexed_sessions SET fingerprint = 'stale' WHERE session_id = 'internal:late'")
    monkeypatch.setattr(store, "refresh_index", lambda: None)
    assert store.read_page("internal:late") is None
    assert h.run("read-session", args) == whole(h, monkeypatch, args)


def test_since_on_a_message_time_is_exact(h, store, monkeypatch):
    """A time cireil wrote with its own offset and seconds is in the row as milliseconds: a `since` on it is
    compared as the whole decode compares it."""
    session = store.open_session("notebook:times")
    messages = [user_message(f"m{i}", timestamp=f"2026-01-0{i + 1}T10:00:00.000400+01:00") for i in range(5)]
    session.history += messages
    store.commit(session, messages)
    for since in ("2026-01-03T10:00:00.000400+01:00", "2026-01-03T10:00:00+01:00", "2026-01-03T09:00:00Z"):
        args = {"id": "notebook:times", "since": since, "order": "asc"}
        assert h.run("read-session", args) == whole(h, monkeypatch, args)
    assert json.loads(store._raw_row(store._db, "internal:notebook:times")[2])[2]["timestamp"] % 1000 == 0
    # away from any message's time the page is picked in SQL, to the millisecond
    for since, first in (("2026-01-03T10:00:00.300+01:00", "m3"), ("2026-01-03T09:59:59.700+01:00", "m2")):
        args = {"id": "notebook:times", "since": since, "order": "asc"}
        got, decoded = paged(h, monkeypatch, args)
        assert got == whole(h, monkeypatch, args) and got["messages"][0]["content"] == first and decoded > 0
