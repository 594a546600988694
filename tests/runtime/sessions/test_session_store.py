"""SessionStore on a real SQLite file: persistence, transactions, listing, search and concurrency."""

from __future__ import annotations

import random
import re
import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from cireil.runtime.sessions import SessionStore
from cireil.runtime.sessions.messages import assistant_message, system_message, tool_response, user_message
from cireil.runtime.sessions.search import compile_query, fold, glob_to_regex
from cireil.runtime.sessions.store import SessionConflict, preview_of


def say(store: SessionStore, session_id: str, *messages: dict):
    session = store.open_session(session_id)
    session.history += messages
    store.commit(session, list(messages))
    return session


def discord_activity(store: SessionStore, row_id: str, iso: str) -> None:
    """What the original's save of a Discord message does to the row's last_activity (cireil never sets it)."""
    raw = sqlite3.connect(store.path, isolation_level=None)
    try:
        raw.execute("UPDATE sessions SET last_activity = ? WHERE id = ?", (iso, row_id))
    finally:
        raw.close()


def user_at(text: str, timestamp: str, **extra) -> dict:
    return user_message(text, timestamp=timestamp, **extra)


def agent_text(text: str, **extra) -> dict:
    return assistant_message([{"type": "text", "text": text}], **extra)


# -- file, pragmas, persistence ------------------------------------------------------------------


def test_database_file_is_private_wal_and_the_originals_schema(tmp_path):
    store = SessionStore.for_agent(tmp_path)
    try:
        db = tmp_path / "sessions.db"
        assert stat.S_IMODE(db.stat().st_mode) == 0o600
        say(store, "notebook:main", user_message("hello"))
    finally:
        store.close()
    raw = sqlite3.connect(tmp_path / "sessions.db")
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables == {"sessions", "images", "cron_jobs", "summaries", "sqlite_sequence", "__drizzle_migrations"}
        assert raw.execute("SELECT id, channel FROM sessions").fetchall() == [("internal:notebook:main", "internal")]
    finally:
        raw.close()
    assert (tmp_path / "cireil-side.db").exists()


def test_an_empty_file_becomes_a_new_private_database(tmp_path):
    db = tmp_path / "sessions.db"
    db.touch(mode=0o644)
    db.chmod(0o644)
    SessionStore(db).close()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_a_session_is_stored_with_its_first_commit(store):
    session = store.open_session("notebook:main")
    assert session.platform == "remote" and session.created
    assert not store.exists("notebook:main")  # nothing is written for a session nobody used
    say(store, "notebook:main", user_message("hi"))
    assert store.exists("notebook:main")
    assert [s["id"] for s in store.list_sessions()] == ["notebook:main"]
    assert store.open_session("internal:x").platform == "internal"
    assert store.open_session("odd", platform="tui").platform == "tui"
    say(store, "internal:x", user_message("x"))
    assert store.session_ids() == ["internal:x", "notebook:main"]
    assert store.get("nope") is None and not store.exists("nope")


def test_reopen_restores_history_and_state_but_not_pending_media(tmp_path):
    store = SessionStore.for_agent(tmp_path)
    first = user_at("first", "2026-05-01T12:00:00+02:00")
    reply = assistant_message([{"type": "toolCall", "id": "c1", "name": "respond", "input": {"content": "hi"}}])
    result = tool_response("c1", "respond", {"success": True})
    context = system_message("turn-only context", persistent=False)
    session = store.open_session("notebook:main")
    session.history += [first, context, reply, result]
    session.opened_files.append("/workspace/a.md")
    session.active_sections["/workspace/a.md"] = ["intro", "usage"]
    session.pending_media.append({"type": "image", "path": "/workspace/x.png"})
    session.cursor = 2
    session.summaries.append({"slug": "s", "summary": "x"})
    session.provider, session.model = "local", "tiny"
    session.meta["warned"] = [3]
    store.commit(session, [first, context, reply, result])
    store.close()

    again = SessionStore.for_agent(tmp_path)
    try:
        loaded = again.open_session("notebook:main")
        assert loaded.history == [first, reply, result]  # the turn-only message is not stored
        assert loaded.opened_files == ["/workspace/a.md"]
        assert loaded.active_sections == {"/workspace/a.md": ["intro", "usage"]}
        assert loaded.pending_media == []
        # the cursor counts stored messages: the turn-only one before it is not among them
        assert (loaded.cursor, loaded.summaries) == (1, [{"slug": "s", "summary": "x"}])
        assert (loaded.provider, loaded.model, loaded.meta) == ("local", "tiny", {"warned": [3]})
        assert loaded.last_activity is None  # only the original sets it, at a Discord message (§4.4)
        assert loaded.created == session.created
    finally:
        again.close()


def test_commit_appends_in_order_across_commits(store):
    session = store.open_session("s:1")
    for i in range(3):
        batch = [user_message(f"q{i}"), agent_text(f"a{i}")]
        session.history += batch
        store.commit(session, batch)
    assert [m["content"][0]["text"] for m in store.get("s:1").history] == ["q0", "a0", "q1", "a1", "q2", "a2"]


def test_last_activity_is_the_originals_alone(store):
    # only the original's Discord messages move it, and its target "last" picks by it (upstream-formats §4.4):
    # a notebook turn sets nothing, and what the original set survives cireil's writes
    session = say(store, "s:1", user_at("a", "2026-01-01T00:00:00+00:00"), user_at("b", "2026-01-02T00:00:00+00:00"))
    assert session.last_activity is None and store.get("s:1").last_activity is None
    say(store, "discord:1", user_at("hi", "2026-01-01T00:00:00+00:00"))
    discord_activity(store, "discord:1", "2026-01-03T00:00:00.000Z")
    assert store.last_active() == "discord:1"
    again = store.get("discord:1")
    reply = agent_text("later")
    again.history.append(reply)
    store.commit(again, [reply])
    assert store.get("discord:1").last_activity == "2026-01-03T00:00:00.000Z"


def test_target_last_is_resolved_as_the_original_does(store):
    assert store.last_active() is None
    say(store, "internal:first", user_message("a"))
    say(store, "internal:second", user_message("b"))
    assert store.last_active() == "internal:first"  # all unset: the first loaded wins the tie
    say(store, "discord:1", user_message("c"))
    discord_activity(store, "discord:1", "2026-01-03T00:00:00.000Z")
    assert store.last_active() == "discord:1"


def test_target_last_follows_a_new_time_alone_after_the_sweep(store):
    """The times come from the side index: a new time of the same length with the history as it was (a Discord
    turn of the original that failed) is seen once the sweep of that write is done."""
    say(store, "discord:1", user_message("a"))
    say(store, "discord:2", user_message("b"))
    discord_activity(store, "discord:1", "2026-01-03T00:00:00.000Z")
    discord_activity(store, "discord:2", "2026-01-02T00:00:00.000Z")
    assert store.last_active() == "discord:1"
    discord_activity(store, "discord:2", "2026-01-04T00:00:00.000Z")
    store.list_sessions()  # the write is noticed; its times are read off this thread
    assert store.wait_for_index(10)
    assert store.last_active() == "discord:2"


def test_commit_is_all_or_nothing(store):
    session = say(store, "s:1", user_message("kept"))
    good = user_at("new", "2030-01-01T00:00:00+00:00")
    broken = user_message("", parts=[{"type": "image", "mediaType": "image/png", "data": "not base64!"}])
    session.history += [good, broken]
    session.cursor = 2
    with pytest.raises(ValueError):
        store.commit(session, [good, broken])
    stored = store.get("s:1")
    assert [m["id"] for m in stored.history] == [session.history[0]["id"]]
    assert stored.cursor == 0
    assert store.query("new", mode="raw") == ([], 0)
    assert store.list_sessions()[0]["messageCount"] == 1


def test_save_state_and_session_made_outside_the_store(store):
    from cireil.runtime.sessions.state import Session

    session = Session(id="notebook:loose")
    session.opened_files.append("/workspace/x")
    store.save_state(session)
    assert store.get("notebook:loose").opened_files == ["/workspace/x"]
    msg = user_message("hello")
    session.history.append(msg)
    store.commit(session, [msg])
    assert store.get("notebook:loose").history == [msg]


def test_find_and_update_message_keep_search_in_step(store):
    original = user_message("apples and pears")
    say(store, "s:1", original)
    assert store.find_message("s:1", original["id"]) == original
    assert store.find_message("s:1", "missing") is None
    changed = dict(original, reactions=["👍"], content=[{"type": "text", "text": "plums only"}])
    store.update_message("s:1", changed)
    assert store.find_message("s:1", original["id"])["reactions"] == ["👍"]
    assert store.query("apples", mode="raw") == ([], 0)
    assert store.query("plums", mode="raw")[1] == 1
    with pytest.raises(KeyError):
        store.update_message("s:1", {"id": "nope", "role": "user"})


# -- list-sessions -------------------------------------------------------------------------------


def test_list_sessions_fields_order_and_cron_exclusion(store):
    say(store, "discord:1", user_at("old", "2026-01-01T00:00:00+00:00"))
    say(store, "matrix:!r", user_at("new <b>bold</b>", "2026-03-01T00:00:00+00:00"), agent_text("x" * 150))
    say(store, "cron:job", user_at("scheduled", "2026-04-01T00:00:00+00:00"))
    discord_activity(store, "discord:1", "2026-01-01T00:00:00.000Z")
    discord_activity(store, "matrix:!r", "2026-03-01T00:00:00.000Z")
    items = store.list_sessions()
    assert [s["id"] for s in items] == ["matrix:!r", "discord:1"]
    assert items[0] == {
        "channel": "matrix",
        "id": "matrix:!r",
        "lastActivity": "2026-03-01T00:00:00.000Z",
        "messageCount": 2,
        "preview": "x" * 100 + "...",
    }
    assert [s["id"] for s in store.list_sessions(order="asc")] == ["discord:1", "matrix:!r"]
    assert [s["id"] for s in store.list_sessions(limit=1, offset=1)] == ["discord:1"]
    assert [s["id"] for s in store.list_sessions(since="2026-02-01T00:00:00+00:00")] == ["matrix:!r"]


def test_list_sessions_origin_is_sql_like(store):
    for sid in ("discord:1", "discord:2|g", "dxscord:3", "matrix:1"):
        say(store, sid, user_message("hi"))
    ids = lambda origin: sorted(s["id"] for s in store.list_sessions(origin=origin))  # noqa: E731
    assert ids("discord:") == ["discord:1", "discord:2|g"]
    assert ids("d_scord") == ["discord:1", "discord:2|g", "dxscord:3"]
    assert ids("%:1") == ["discord:1", "matrix:1"]
    assert ids(["matrix", "dx"]) == ["dxscord:3", "matrix:1"]
    assert ids("cron") == []


@pytest.mark.parametrize(
    ("message", "preview"),
    [
        (user_message("<tag>inside</tag> text"), "inside text"),
        (user_message("<only-a-tag>"), "<only-a-tag>"),
        (
            assistant_message(
                [
                    {"type": "toolCall", "id": "1", "name": "respond", "input": {"content": "first"}},
                    {"type": "toolCall", "id": "2", "name": "respond", "input": {"content": "second"}},
                ]
            ),
            "second",
        ),
        (assistant_message([{"type": "toolCall", "id": "1", "name": "read", "input": {"path": "/x"}}]), "Tool: read"),
        (user_message("", parts=[{"type": "image", "mediaType": "image/png", "data": ""}]), "[Image]"),
        (assistant_message([{"type": "thinking", "thinking": "hmm"}]), ""),
        (None, ""),
    ],
)
def test_preview_rules(message, preview):
    assert preview_of(message) == preview


def test_preview_uses_last_user_or_assistant_message(store):
    say(store, "s:1", user_message("question"), agent_text("answer"), tool_response("c", "read", {"x": 1}))
    assert store.list_sessions()[0]["preview"] == "answer"


# -- query-sessions ------------------------------------------------------------------------------


def seed_search(store: SessionStore) -> None:
    say(
        store,
        "notebook:a",
        user_at("Foo bar baz", "2026-01-01T00:00:00+00:00"),
        agent_text("foo", timestamp="2026-01-02T00:00:00+00:00"),
        user_at("[draft] Fooo?", "2026-01-03T00:00:00+00:00"),
        tool_response("c", "read", {"text": "foo inside a tool result"}),
        system_message("foo in a system message"),
    )
    say(store, "discord:b", user_at("the foo fighters", "2026-01-04T00:00:00+00:00"))
    say(store, "cron:c", user_at("foo", "2026-01-05T00:00:00+00:00"))


def contents(result) -> list[str]:
    return [m["content"] for m in result[0]]


def test_glob_is_whole_text_case_insensitive(store):
    seed_search(store)
    assert contents(store.query("foo*")) == ["foo", "Foo bar baz"]  # newest first; tool/system/cron not searched
    assert contents(store.query("*foo*", order="asc")) == ["Foo bar baz", "foo", "[draft] Fooo?", "the foo fighters"]
    assert contents(store.query("*FIGHTERS")) == ["the foo fighters"]
    assert contents(store.query("f?o")) == ["foo"]
    assert contents(store.query("[draft]*")) == ["[draft] Fooo?"]  # `[` is literal
    assert contents(store.query("*oo??")) == ["[draft] Fooo?"]
    assert store.query("fo") == ([], 0)


def test_glob_star_spans_lines(store):
    say(store, "s:1", user_message("line one\nline two"))
    assert store.query("line*two")[1] == 1


def test_raw_is_case_sensitive_substring(store):
    seed_search(store)
    assert contents(store.query("Foo", mode="raw")) == ["[draft] Fooo?", "Foo bar baz"]
    assert contents(store.query("oo", mode="raw", order="asc")) == [  # under 3 characters: a scan
        "Foo bar baz",
        "foo",
        "[draft] Fooo?",
        "the foo fighters",
    ]
    assert store.query("FOO", mode="raw") == ([], 0)
    assert contents(store.query("]", mode="raw")) == ["[draft] Fooo?"]


def test_regex_is_unanchored_and_case_insensitive(store):
    seed_search(store)
    assert contents(store.query(r"fo{3}", mode="regex")) == ["[draft] Fooo?"]
    assert contents(store.query(r"^foo$", mode="regex")) == ["foo"]
    assert store.query(r"fighters|bar", mode="regex")[1] == 2
    with pytest.raises(re.error):
        store.query("(unclosed", mode="regex")


def test_query_filters_paging_and_total(store):
    seed_search(store)
    matches, total = store.query("*foo*", limit=1, offset=2)
    assert total == 4 and contents((matches, total)) == ["foo"]
    assert matches[0] == {
        "channel": "notebook",
        "content": "foo",
        "role": "assistant",
        "sessionId": "notebook:a",
        "timestamp": "2026-01-02T00:00:00+00:00",
    }
    assert contents(store.query("*foo*", origin="discord")) == ["the foo fighters"]
    assert contents(store.query("*foo*", origin=["disc%", "zzz"])) == ["the foo fighters"]
    assert store.query("*foo*", since="2026-01-02T00:00:00+00:00")[1] == 3
    assert store.query("*foo*", origin="cron:")[1] == 0


def test_fold_matches_what_ignorecase_matches():
    # ſ (long s) and K (Kelvin sign) equal s and k under re.IGNORECASE; the index must fold them alike
    assert re.search("session", "ſeſſion", re.IGNORECASE)
    assert fold("ſeſſion") == fold("SESSION")
    assert fold("İstanbul K") == fold("istanbul k")
    assert glob_to_regex("a*b?[c]") == r"a.*b.\[c\]"


def test_index_prefilter_never_loses_a_match(store):
    """Every mode over random texts: the indexed query finds exactly what testing every message finds."""
    rng = random.Random(7)
    words = ["alpha", "Beta", "GAMMA", "ſpecial", "delta", "[x]", "naïve", "Straße", "a*b", "x?y", "ok"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 5))) for _ in range(400)]
    session = store.open_session("notebook:r")
    batch = [user_message(t) for t in texts]
    session.history += batch
    store.commit(session, batch)
    queries = [
        ("raw", "alpha"),
        ("raw", "Beta GAMMA"),
        ("raw", "Straße"),
        ("raw", "ok"),
        ("glob", "*special*"),
        ("glob", "alpha*"),
        ("glob", "*[x]*"),
        ("glob", "*a*b*"),
        ("glob", "*STRASSE*"),
        ("regex", "beta\\s+gamma"),
        ("regex", "SPECIAL"),
        ("regex", "na.ve delta"),
        ("regex", "(alpha|delta) ok"),
        ("regex", "x\\?y"),
    ]
    for mode, query in queries:
        expected = sum(compile_query(query, mode).test(t) for t in texts)
        assert store.query(query, mode=mode, limit=30)[1] == expected, (mode, query)
    assert store.query("*special*")[1] > 0  # the ſ words are found by a plain s


# -- attachments and jobs ------------------------------------------------------------------------


def test_attachments_round_trip(store):
    store.open_session("s:1")
    meta = store.add_attachment("s:1", "m1", "photo.png", "image/png", b"\x89PNG\x00\xff")
    assert meta == {"id": meta["id"], "filename": "photo.png", "size": 6, "mediaType": "image/png"}
    store.add_attachment("s:1", "m1", "notes.txt", "text/plain", b"hi")
    got = store.attachments("s:1", "m1")
    assert [(m["filename"], data) for m, data in got] == [("photo.png", b"\x89PNG\x00\xff"), ("notes.txt", b"hi")]
    assert got[0][0] == meta
    assert store.attachments("s:1", "other") == []


def test_jobs_upsert_replace_delete(store):
    job = {"id": "remind", "prompt": "p", "schedule": {"at": "2030-01-01T00:00:00+00:00"}, "target": "s:1"}
    store.upsert_job(job)
    store.upsert_job({**job, "prompt": "changed"})
    store.upsert_job({**job, "id": "early", "schedule": {"at": "2029-01-01T00:00:00+00:00"}})
    assert [(j["id"], j["prompt"]) for j in store.jobs()] == [("early", "p"), ("remind", "changed")]
    store.delete_job("remind")
    assert [j["id"] for j in store.jobs()] == ["early"]


# -- threads -------------------------------------------------------------------------------------


def test_two_threads_share_the_store(store):
    errors: list[BaseException] = []

    def writer(session_id: str) -> None:
        try:
            session = store.open_session(session_id)
            for i in range(100):
                batch = [user_message(f"{session_id} question {i}"), agent_text(f"answer {i}")]
                session.history += batch
                store.commit(session, batch)
                store.query("question", mode="raw")
                store.list_sessions()
        except BaseException as exc:  # collected: an exception in a thread would otherwise vanish
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(f"t:{n}",)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.query("question", mode="raw")[1] == 200
    assert sorted(s["messageCount"] for s in store.list_sessions()) == [200, 200]
    assert len(store.get("t:0").history) == 200


def test_two_stores_on_one_file_see_each_other(tmp_path):
    """Two kernels on one agent: each has its own connection; the second writer of a session is refused."""
    first, second = SessionStore.for_agent(tmp_path), SessionStore.for_agent(tmp_path)
    try:
        a = first.open_session("notebook:shared")
        b = second.open_session("notebook:shared")
        msg = user_message("written by the first kernel")
        a.history.append(msg)
        first.commit(a, [msg])
        assert second.get("notebook:shared").history == [msg]
        assert second.query("*first kernel")[1] == 1
        late = user_message("written by the second kernel")
        b.history.append(late)
        with pytest.raises(SessionConflict, match=r"notebook:shared changed in sessions\.db"):
            second.commit(b, [late])
        assert first.get("notebook:shared").history == [msg]  # nothing overwritten
    finally:
        first.close()
        second.close()


def test_a_store_nobody_closed_lets_go_of_its_files_when_it_is_dropped(tmp_path: Path):
    """The search function registered on the side connection must not keep the store alive: a full test run
    (or a long kernel) that loads many agents ran out of file descriptors when it did."""
    import contextlib
    import gc
    import os

    def open_files() -> set[str]:
        found = set()
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):  # a descriptor closed while we look
                found.add(os.readlink(f"/proc/self/fd/{fd}"))
        return {f for f in found if f.startswith(str(tmp_path))}

    store = SessionStore.for_agent(tmp_path)
    say(store, "notebook:a", user_at("hello", "2026-01-01T00:00:00.000Z"))
    assert store.query("hello", mode="regex")[1] == 1  # the SQL function has been used
    assert open_files()
    del store
    gc.collect()
    assert open_files() == set()
