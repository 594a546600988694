"""query-sessions with hostile patterns: linear-time regex and glob, a time budget, RE2's limits said plainly."""

from __future__ import annotations

import time

import pytest

from cireil.runtime.sessions import SessionStore, search
from cireil.runtime.sessions.messages import user_message
from conversationkit import Harness, respond

GENEROUS_S = 10.0  # ~10x what linear matching of these texts takes on a loaded machine


@pytest.fixture
def h(agent_dir):
    store = SessionStore.for_agent(agent_dir)
    try:
        yield Harness(agent_dir, store)
    finally:
        store.close()


def test_nested_quantifier_regex_is_linear(h):
    # (a+)+$ backtracks exponentially in `re`: 27 characters took 7.6 s; here 200,000 plus a miss
    h.add(user_message("a" * 200_000 + "!"), user_message("aaaa"))
    started = time.monotonic()
    result = h.run("query-sessions", {"query": "(a+)+$", "mode": "regex"})
    assert time.monotonic() - started < GENEROUS_S
    assert result["success"] is True and result["totalMatches"] == 1
    assert result["matches"][0]["content"] == "aaaa"


def test_glob_with_many_stars_is_linear(h):
    h.add(user_message("ab" * 100_000), respond("a" + "x" * 50 + "b"))
    query = "a*" * 40 + "c"  # a near miss on every text: backtracking tries every split of the stars
    started = time.monotonic()
    result = h.run("query-sessions", {"query": query})
    assert time.monotonic() - started < GENEROUS_S
    assert result["success"] is True and result["totalMatches"] == 0
    assert h.run("query-sessions", {"query": "a*" * 40 + "b"})["totalMatches"] == 1  # the long one


def test_glob_specials_are_literal(h):
    h.add(user_message("cost: $5 (approx.) [x]\tdone\\"), user_message("cost: 5"))
    found = h.run("query-sessions", {"query": "COST: $5 (*) [?]\tdone\\"})
    assert found["totalMatches"] == 1


def test_backreferences_and_lookaround_are_refused_with_the_reason(h):
    h.add(user_message("abab"))
    for query, feature in ((r"(ab)\1", "backreferences"), ("a(?=b)", "lookaround"), ("(?<!x)a", "lookaround")):
        bad = h.run("query-sessions", {"query": query, "mode": "regex"})
        assert bad["success"] is False
        assert bad["error"].startswith("Invalid regular expression: ")
        assert feature in bad["error"] and "RE2" in bad["error"], bad["error"]


def test_time_budget_stops_the_search_with_an_error(h, monkeypatch):
    h.add(*(user_message(f"message {i}") for i in range(50)))
    monkeypatch.setattr(search, "BUDGET_S", 0.0)
    for mode in ("regex", "glob"):
        result = h.run("query-sessions", {"query": "mess", "mode": mode} if mode == "regex" else {"query": "*"})
        assert result["success"] is False
        assert "time budget" in result["error"] and result["hint"]


def test_non_utf8_name_in_a_message_is_stored_escaped_and_searched(h):
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")  # how os.listdir gives a Latin-1 file name
    h.add(user_message(f"look at {name}"))
    found = h.run("query-sessions", {"query": "look at caf*", "mode": "glob"})
    assert found["totalMatches"] == 1 and found["matches"][0]["content"] == "look at caf\\xe9.txt"
    assert h.run("query-sessions", {"query": "caf\\xe9", "mode": "raw"})["totalMatches"] == 1
    assert h.run("query-sessions", {"query": r"caf\\x[0-9a-f]{2}\.txt", "mode": "regex"})["totalMatches"] == 1


def test_matcher_survives_lone_surrogates():
    # text that reached the store before escaping existed is still searchable, never a crash
    assert search.compile_query("caf*", "glob").test("caf\udce9")
    assert search.compile_query("caf.$", "regex").test("caf\udce9")


def test_an_interrupt_stops_a_running_search_at_once(h):
    import asyncio
    import threading

    from cireil.runtime.base.cancel import context_with

    h.add(*(user_message(f"message {i}") for i in range(50)))
    flag = threading.Event()
    flag.set()  # what Submitted.cancel() does from the kernel's thread when the person interrupts
    with pytest.raises(asyncio.CancelledError):
        context_with(flag).run(h.run, "query-sessions", {"query": "mess.*", "mode": "regex"})
    assert h.run("query-sessions", {"query": "mess.*", "mode": "regex"})["totalMatches"] == 50  # no flag: runs


def test_synchronous_work_sees_a_cancel_from_another_thread():
    from cireil.runtime.base.cancel import cancel_requested
    from cireil.runtime.base.loop import RUNTIME

    async def crunch() -> int:
        rounds = 0
        end = time.monotonic() + 30
        while time.monotonic() < end and not cancel_requested():  # never awaits
            rounds += 1
        return rounds

    submitted = RUNTIME.submit(crunch())
    time.sleep(0.3)
    started = time.monotonic()
    submitted.cancel()
    while not submitted.done() and time.monotonic() - started < GENEROUS_S:
        time.sleep(0.01)
    assert submitted.done() and time.monotonic() - started < GENEROUS_S
