"""A write costs what changed: the stored history text is kept between writes, and only appended messages and
messages changed in place (Session.touch) are encoded again; what it writes equals a whole encode, byte for
byte, and a row the original wrote keeps its very characters."""

from __future__ import annotations

import json
import random
import sqlite3

from cireil.runtime.sessions import SessionStore
from cireil.runtime.sessions import history_json as hj
from cireil.runtime.sessions.messages import assistant_message, tool_response, user_message
from cireil.runtime.sessions.rowtext import RowText


def stored_text(store: SessionStore, row_id: str) -> str:
    raw = sqlite3.connect(store.path)
    try:
        return raw.execute("SELECT history FROM sessions WHERE id = ?", (row_id,)).fetchone()[0]
    finally:
        raw.close()


def whole_encode(store: SessionStore, session) -> str:
    """What encoding every message afresh writes (no kept text at all)."""

    def encode(message, refs):
        return hj.encode_message(message, "internal", store._store_image, refs)

    return RowText().plan(session.history, session.cursor, set(), None, encode).history_text


def some_turn(rng: random.Random, n: int) -> list[dict]:
    text = "".join(rng.choice('abc ñ€𝄞"\\\n') for _ in range(rng.randint(0, 40)))
    call = f"call_{n}"
    return [
        user_message(f"q{n} {text}"),
        assistant_message(
            [
                {"type": "text", "text": text},
                {"type": "toolCall", "id": call, "name": "read", "input": {"path": f"/workspace/{n}.md"}},
            ]
        ),
        tool_response(call, "read", {"content": text * 3, "success": True, "n": rng.random()}),
        assistant_message([{"type": "text", "text": f"done {n}"}]),
    ]


def test_appended_turns_write_what_a_whole_encode_writes(store):
    rng = random.Random(7)
    session = store.open_session("notebook:grow")
    for n in range(30):
        turn = some_turn(rng, n)
        session.history += turn
        store.commit(session, turn)
        assert stored_text(store, "internal:notebook:grow") == whole_encode(store, session)
    again = store.get("notebook:grow")  # from the row: kept texts are the row's slices
    turn = some_turn(rng, 99)
    again.history += turn
    store.commit(again, turn)
    assert stored_text(store, "internal:notebook:grow") == whole_encode(store, again)


def test_a_row_written_by_the_original_keeps_its_characters_when_cireil_appends(store):
    # the original's key order and escapes, not cireil's: an unchanged element is written back as it was
    theirs = '[{"timestamp":1714000000000,"role":"user","content":{"type":"text","content":"caf\\u00e9 \\/ hi"}}]'
    raw = sqlite3.connect(store.path, isolation_level=None)
    raw.execute(
        "INSERT INTO sessions (id, channel, meta, history, opened_files) VALUES ('internal:x', 'internal', '{}', ?,"
        " '[]')",
        (theirs,),
    )
    raw.close()
    session = store.get("internal:x")
    message = user_message("mine")
    session.history.append(message)
    store.commit(session, [message])
    text = stored_text(store, "internal:x")
    assert text.startswith(theirs[:-1] + ",") and json.loads(text)[1]["content"]["content"] == "mine"


def test_a_message_changed_in_place_is_stored_once_touched(store):
    session = store.open_session("notebook:t")
    turn = some_turn(random.Random(1), 0)
    session.history += turn
    store.commit(session, turn)
    result = session.history[2]
    session.rewrite_output(result, {"path": "/workspace/0.md", "superseded": True})  # touches it
    reply = user_message("next")
    session.history.append(reply)
    store.commit(session, [reply])
    stored = json.loads(stored_text(store, "internal:notebook:t"))
    assert stored[2]["content"]["output"] == {"path": "/workspace/0.md", "superseded": True}
    assert stored_text(store, "internal:notebook:t") == whole_encode(store, session)


def test_removed_or_replaced_messages_are_encoded_whole(store):
    session = store.open_session("notebook:r")
    for n in range(3):
        turn = some_turn(random.Random(n), n)
        session.history += turn
        store.commit(session, turn)
    session.history[1] = dict(session.history[1], content=[{"type": "text", "text": "replaced"}])
    del session.history[4:8]
    store.commit(session, [session.history[1]])  # a new dict in place of a stored one: committed by name
    assert stored_text(store, "internal:notebook:r") == whole_encode(store, session)
    assert len(json.loads(stored_text(store, "internal:notebook:r"))) == 8


def test_nothing_is_written_when_nothing_changed(store):
    session = store.open_session("notebook:same")
    turn = some_turn(random.Random(3), 0)
    session.history += turn
    store.commit(session, turn)
    raw = sqlite3.connect(store.path, isolation_level=None)
    before = raw.execute("PRAGMA data_version").fetchone()[0]
    store.save_state(session)  # a read-only tool's call: no write at all
    store.save_state(session)
    side = sqlite3.connect(store.agent_dir / "cireil-side.db", isolation_level=None)
    side_before = side.execute("PRAGMA data_version").fetchone()[0]
    store.save_state(session)
    assert raw.execute("PRAGMA data_version").fetchone()[0] == before
    assert side.execute("PRAGMA data_version").fetchone()[0] == side_before
    raw.close()
    side.close()


def test_a_turn_encodes_its_own_messages_only(store, monkeypatch):
    session = store.open_session("notebook:big")
    history = [m for n in range(250) for m in some_turn(random.Random(n), n)]
    session.history += history
    store.commit(session, history)
    again = store.get("notebook:big")  # loaded from the row, as after a restart
    encoded = []
    real = hj.encode_message
    monkeypatch.setattr(hj, "encode_message", lambda m, *a: encoded.append(m) or real(m, *a))
    turn = some_turn(random.Random(1000), 1000)
    again.history += turn
    store.commit(again, turn)
    assert encoded == turn  # not the 1,000 before it
    encoded.clear()
    store.save_state(again)
    assert encoded == []
