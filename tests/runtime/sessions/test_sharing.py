"""Sharing sessions.db with a running original: who holds the file (asked afresh each time), and which sessions
that original would write from its memory (so cireil must not), decided inside the commit's transaction.

The "original" here is a plain process holding the database open the way the original's better-sqlite3 does
(WAL, a read done); tests/peer/ runs the real original.
"""

from __future__ import annotations

import sqlite3
import time

import pytest

from cireil.runtime.sessions import SessionStore
from cireil.runtime.sessions.holders import HolderProbe
from cireil.runtime.sessions.messages import user_message
from cireil.runtime.sessions.sidestore import SIDE_FILE
from cireil.runtime.sessions.store import SessionReadOnly
from holderkit import Held


def say(store: SessionStore, session_id: str, text: str = "hello"):
    session = store.open_session(session_id)
    message = user_message(text)
    session.history.append(message)
    store.commit(session, [message])
    return session


def test_the_probe_is_fresh_and_tells_cireil_from_the_original(store, tmp_path):
    say(store, "notebook:a")  # the store's own connection now holds the -shm lock too
    probe = HolderProbe(store.path, tmp_path / SIDE_FILE)
    assert probe.holders() == []
    original = Held(store.path)
    try:
        assert [h.pid for h in probe.holders()] == [original.proc.pid]  # no cache: seen at once
        assert probe.originals()[0].cireil is False and probe.originals()[0].started > 0
    finally:
        original.stop()
    assert probe.holders() == []  # and gone at once
    other_cireil = Held(store.path, tmp_path / SIDE_FILE)
    try:
        assert [h.cireil for h in probe.holders()] == [True]
        assert probe.originals() == [] and store.holders() == []  # another cireil writes with the same CAS
    finally:
        other_cireil.stop()


def test_untargeted_sessions_stay_writable_while_the_original_runs_even_ones_it_loaded(store, tmp_path):
    loaded = say(store, "internal:notes")  # existed before the original started: in its memory
    original = Held(store.path)
    try:
        message = user_message("more")
        loaded.history.append(message)
        store.commit(loaded, [message])  # it never saves a session no job or heartbeat runs in
        assert store.get("internal:notes").history[-1] == message
    finally:
        original.stop()


def test_a_session_a_main_job_or_the_heartbeat_runs_in_is_refused_inside_the_commit(store, tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    (config / "cron.toml").write_text(
        '[[jobs]]\nid = "tidy"\nprompt = "p"\nschedule = { every = 60 }\nexecution = "main"\ntarget = "internal:x"\n'
        '[[jobs]]\nid = "off"\nprompt = "p"\nschedule = { every = 60 }\nexecution = "main"\ntarget = "internal:y"\n'
        "enabled = false\n"
    )
    x, y = say(store, "internal:x"), say(store, "internal:y")
    original = Held(store.path)
    try:
        before = store.get("internal:x").history
        message = user_message("lost if stored")
        x.history.append(message)
        with pytest.raises(SessionReadOnly, match=r"session internal:x is where the cron job 'tidy'"):
            store.commit(x, [message])
        assert store.get("internal:x").history == before
        more = user_message("a disabled job runs nowhere")
        y.history.append(more)
        store.commit(y, [more])
    finally:
        original.stop()
    x.history.pop()
    again = user_message("the original stopped: writable again")
    x.history.append(again)
    store.commit(x, [again])


def test_target_last_reaches_only_what_the_original_loaded_and_nothing_newer_outranks(store, tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    (config / "heartbeat.toml").write_text("enabled = true\n")  # target "last" by default
    old = say(store, "internal:old")  # loaded by the original at its start; no Discord activity anywhere
    original = Held(store.path)
    try:
        assert store.holders() == [original.proc.pid]  # first seen now
        message = user_message("refused")
        old.history.append(message)
        with pytest.raises(SessionReadOnly, match=r'heartbeat.*target "last"'):
            store.commit(old, [message])
        old.history.pop()
        time.sleep(2.2)  # the settling margin: the original has surely read its rows by now
        fresh = say(store, "internal:fresh")  # created after its load: not in its memory, never its "last"
        second = user_message("again")
        fresh.history.append(second)
        store.commit(fresh, [second])
        # once a Discord session has newer activity, "last" is that one: the loaded session is free again
        raw = sqlite3.connect(store.path, isolation_level=None)
        raw.execute(
            "INSERT INTO sessions (id, channel, meta, history, opened_files, last_activity) VALUES"
            " ('discord:1', 'discord', '{\"channelId\":\"1\"}', '[]', '[]', '2026-01-01T00:00:00.000Z')"
        )
        raw.close()
        old = store.get("internal:old")
        old.history.append(message)
        store.commit(old, [message])
    finally:
        original.stop()


def test_discord_sessions_are_read_only_while_the_original_runs(store):
    raw = sqlite3.connect(store.path, isolation_level=None)
    raw.execute(
        "INSERT INTO sessions (id, channel, meta, history, opened_files) VALUES"
        " ('discord:7', 'discord', '{\"channelId\":\"7\"}', '[]', '[]')"
    )
    raw.close()
    session = store.get("discord:7")
    original = Held(store.path)
    try:
        session.opened_files.append("/workspace/a")
        with pytest.raises(SessionReadOnly, match=r"belongs to the original runtime.*writes this Discord session"):
            store.save_state(session)
    finally:
        original.stop()
    store.save_state(session)
    assert store.get("discord:7").opened_files == ["/workspace/a"]


def job(job_id: str) -> dict:
    return {
        "delivery": "none",
        "enabled": True,
        "execution": "isolated",
        "id": job_id,
        "prompt": "p",
        "schedule": {"at": "2030-01-01T00:00:00Z"},
        "target": "last",
    }


def test_a_one_shot_job_is_the_originals_when_it_was_there_at_its_start(store):
    store.upsert_job(job("before"))
    assert store.job_left_to_original("before") is False  # nobody else runs: cireil's
    original = Held(store.path)
    try:
        assert store.job_left_to_original("before") is True  # it read cron_jobs at its start
        time.sleep(2.2)
        store.upsert_job(job("after"))
        assert store.job_left_to_original("after") is False  # written after its load: it never sees it
    finally:
        original.stop()
