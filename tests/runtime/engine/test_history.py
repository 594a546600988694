"""History shaping and pruning (reference §7.4) and the token estimate (§7.3)."""

from __future__ import annotations

import copy
import json
import math

from cireil.runtime.engine.history import (
    TokenCache,
    estimate_system,
    estimate_tokens,
    shape_history,
    unanswered_from,
)


def user(mid: str, text: str = "", *parts: dict, **extra) -> dict:
    content = ([{"type": "text", "text": text}] if text else []) + list(parts)
    return {"id": mid, "role": "user", "timestamp": "2026-05-01T12:00:00+02:00", "content": content, **extra}


def assistant(mid: str, *parts: dict) -> dict:
    return {"id": mid, "role": "assistant", "timestamp": "2026-05-01T12:00:00+02:00", "content": list(parts)}


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def call(cid: str, name: str, **inp) -> dict:
    return {"type": "toolCall", "id": cid, "name": name, "input": inp}


def result(mid: str, cid: str, name: str, output) -> dict:
    return {"id": mid, "role": "toolResponse", "timestamp": "x", "toolCallId": cid, "name": name, "output": output}


def image(tag: str) -> dict:
    return {"type": "image", "mediaType": "image/webp", "data": tag}


def video(tag: str) -> dict:
    return {"type": "video", "mediaType": "video/mp4", "data": tag}


def ids(messages: list[dict]) -> list[str]:
    return [msg["id"] for msg in messages]


# -- estimate -----------------------------------------------------------------------------------------


def test_estimate_arithmetic() -> None:
    assert estimate_tokens([user("u", "Hello world")]) == 4 + 4
    assert estimate_tokens([user("u", "", image("x" * 5000))]) == 204
    assert estimate_tokens([user("u", "", video("v"))]) == 204
    assert estimate_tokens([user("u"), assistant("a")]) == 8
    thinking = {"type": "thinking", "thinking": "t" * 10}
    # toolCall input JSON: {"path":"/w/a.txt"} is 19 characters
    assert estimate_tokens([assistant("a", thinking, call("c", "read", path="/w/a.txt"))]) == 4 + 4 + 7
    # output JSON {"content":"xxx","success":true} is 32 characters
    assert estimate_tokens([result("r", "c", "read", {"content": "xxx", "success": True})]) == 4 + math.ceil(32 / 3)
    assert estimate_tokens([result("r", "c", "exec", "é\n")]) == 4 + math.ceil(len('"é\\n"') / 3)
    assert estimate_tokens([{"id": "s", "role": "system", "content": "s" * 7}]) == 4 + 3
    assert estimate_system("a" * 300) == 100 and estimate_system("a" * 301) == 101


def test_token_cache_follows_what_is_used() -> None:
    cache = TokenCache()
    a, b = user("a", "x" * 30), result("r", "c", "read", {"content": "y" * 90})
    assert estimate_tokens([a, b], cache) == 14 + 4 + math.ceil(len('{"content":"' + "y" * 90 + '"}') / 3)
    cache.sweep()
    size = len(cache)
    assert estimate_tokens([a, b], cache) == estimate_tokens([a, b])  # served from the cache, same answer
    cache.sweep()
    estimate_tokens([a], cache)  # b is no longer part of what is sent: its entries go at the sweep
    cache.sweep()
    assert 0 < len(cache) < size
    cache.sweep()  # a call that used nothing
    assert len(cache) == 0


# -- shaping ------------------------------------------------------------------------------------------


def test_untouched_history_passes_through_as_the_stored_objects() -> None:
    history = [user("u1", "hi"), assistant("a1", text("hello")), user("u2", "bye")]
    shaped = shape_history(history)
    assert shaped.messages == history and all(x is y for x, y in zip(shaped.messages, history, strict=True))
    assert shaped.cursor == 0 and shaped.tokens == estimate_tokens(history)


def test_starts_at_the_cursor() -> None:
    history = [user("u1", "old"), assistant("a1", text("r")), user("u2", "new")]
    assert ids(shape_history(history, cursor=2).messages) == ["u2"]


def test_consecutive_same_role_messages_are_merged_without_touching_the_originals() -> None:
    history = [
        user("u1", "one", attachments=[{"filename": "a.txt"}]),
        user("u2", "two", attachments=[{"filename": "b.txt"}]),
        assistant("a1", text("x")),
        assistant("a2", text("y")),
        user("u3", "three"),
    ]
    stored = copy.deepcopy(history)
    shaped = shape_history(history)
    assert ids(shaped.messages) == ["u1", "a1", "u3"]
    assert shaped.messages[0]["content"] == [text("one"), text("two")]
    assert shaped.messages[0]["attachments"] == [{"filename": "a.txt"}, {"filename": "b.txt"}]
    assert shaped.messages[1]["content"] == [text("x"), text("y")]
    assert history == stored
    # one message fewer each: the per-message overhead is the only difference
    assert shaped.tokens == estimate_tokens(history) - 2 * 4


def test_tool_results_are_not_merged() -> None:
    history = [
        user("u1", "go"),
        assistant("a1", call("c1", "list-dir", path="/"), call("c2", "list-dir", path="/w")),
        result("r1", "c1", "list-dir", {"ok": 1}),
        result("r2", "c2", "list-dir", {"ok": 2}),
    ]
    assert ids(shape_history(history).messages) == ["u1", "a1", "r1", "r2"]


def test_orphaned_calls_and_results_are_removed() -> None:
    history = [
        user("u1", "go"),
        assistant("a1", text("let me look"), call("c1", "read", path="/a"), call("c2", "read", path="/b")),
        result("r1", "c1", "read", {"content": "a"}),
        result("r9", "c9", "read", {"content": "nobody asked"}),
        assistant("a2", call("c3", "write", path="/c")),
        user("u2", "next"),
    ]
    stored = copy.deepcopy(history)
    shaped = shape_history(history)
    assert ids(shaped.messages) == ["u1", "a1", "r1", "u2"]
    assert shaped.messages[1]["content"] == [text("let me look"), call("c1", "read", path="/a")]
    assert shaped.removed == {"orphaned tool results": 1, "orphaned tool calls": 2}
    assert history == stored


def test_results_whose_call_lies_before_the_cursor_are_orphans() -> None:
    history = [
        user("u1", "go"),
        assistant("a1", call("c1", "read", path="/a")),
        result("r1", "c1", "read", {}),
        user("u2"),
    ]
    assert ids(shape_history(history, cursor=2).messages) == ["u2"]


def test_topic_summary_replaces_its_range_and_keeps_preserved_messages() -> None:
    history = [
        user("u1", "start"),
        assistant("a1", text("keep me")),
        user("u2", "two"),
        assistant("a2", text("three")),
        user("u3", "after"),
    ]
    stored = copy.deepcopy(history)
    summary = {
        "slug": "setup",
        "displayName": 'Setup "phase"',
        "startMessageId": "u1",
        "endMessageId": "a2",
        "preserve": ["a1"],
        "summary": "We set things up.",
    }
    shaped = shape_history(history, summaries=[summary])
    topic = '<topic-summary slug="setup" display-name="Setup &quot;phase&quot;">We set things up.</topic-summary>'
    assert [msg["role"] for msg in shaped.messages] == ["user", "assistant", "user"]
    assert shaped.messages[0]["content"] == [text(topic)]
    assert shaped.messages[1] is history[1] and shaped.messages[2] is history[4]
    assert history == stored


def test_summary_next_to_a_user_message_merges_with_it() -> None:
    history = [user("u1", "a"), assistant("a1", text("b")), user("u2", "after")]
    summary = {
        "slug": "s",
        "displayName": "S",
        "startMessageId": "u1",
        "endMessageId": "a1",
        "preserve": [],
        "summary": "x",
    }
    shaped = shape_history(history, summaries=[summary])
    assert shaped.messages[0]["content"] == [
        text('<topic-summary slug="s" display-name="S">x</topic-summary>'),
        text("after"),
    ]
    assert len(shaped.messages) == 1


def test_summary_that_starts_before_the_cursor_covers_what_is_left_of_it() -> None:
    history = [user("u1", "a"), assistant("a1", text("b")), user("u2", "c"), assistant("a2", text("d")), user("u3")]
    summary = {
        "slug": "s",
        "displayName": "S",
        "startMessageId": "u1",
        "endMessageId": "u2",
        "preserve": ["u1"],
        "summary": "sum",
    }
    shaped = shape_history(history, cursor=2, summaries=[summary])
    assert shaped.messages[0]["content"] == [text('<topic-summary slug="s" display-name="S">sum</topic-summary>')]
    assert ids(shaped.messages)[1:] == ["a2", "u3"]  # u1 was pruned before the cursor: not preserved any more
    # a summary wholly before the cursor is gone with its range
    assert ids(shape_history(history, cursor=3, summaries=[summary]).messages) == ["a2", "u3"]


def test_summary_with_unknown_ids_is_ignored() -> None:
    history = [user("u1", "a")]
    summary = {
        "slug": "s",
        "displayName": "S",
        "startMessageId": "zz",
        "endMessageId": "u1",
        "preserve": [],
        "summary": "x",
    }
    assert shape_history(history, summaries=[summary]).messages == history


def test_media_removed_for_models_without_vision_or_video() -> None:
    history = [
        user("u1", "look", image("i1"), video("v1")),
        assistant("a1", text("ok")),
        user("u2", "", image("i2")),
        assistant("a2", text("ok")),
    ]
    stored = copy.deepcopy(history)
    shaped = shape_history(history, supports_vision=False, supports_video=False)
    # u2 held only a picture, so it goes, and the two replies around it become one
    assert ids(shaped.messages) == ["u1", "a1"]
    assert shaped.messages[0]["content"] == [text("look")]
    assert shaped.messages[1]["content"] == [text("ok"), text("ok")]
    assert shaped.removed == {"images (unsupported)": 2, "videos (unsupported)": 1}
    assert history == stored
    with_video = shape_history(history, supports_vision=True, supports_video=True)
    assert with_video.messages == history
    default = shape_history(history)  # vision yes, video no
    assert default.messages[0]["content"] == [text("look"), image("i1")]


def test_picture_only_message_that_loses_its_picture_is_left_out() -> None:
    history = [user("u1", "hi"), assistant("a1", text("ok")), user("u2", "", image("i"))]
    shaped = shape_history(history, supports_vision=False)
    assert ids(shaped.messages) == ["u1", "a1"]


def test_image_cap_drops_the_oldest_images() -> None:
    history = [
        user("u1", "a", image("i1"), image("i2")),
        assistant("a1", text("x")),
        user("u2", "b", image("i3")),
        assistant("a2", text("y")),
        user("u3", "", image("i4"), video("v1")),
    ]
    shaped = shape_history(history, max_images_per_request=2, supports_video=True)
    parts = [p for msg in shaped.messages for p in msg["content"]]
    assert [p["data"] for p in parts if p["type"] in ("image", "video")] == ["i3", "i4", "v1"]
    assert shaped.removed == {"images over the per-request cap": 2}
    assert ids(shape_history(history, max_images_per_request=0, supports_video=True).messages) == ids(history)


def test_transient_messages_are_kept_unless_the_turn_has_ended() -> None:
    history = [user("u1", "hi"), assistant("a1", text("x")), user("n1", "context", persistent=False)]
    assert ids(shape_history(history).messages) == ["u1", "a1", "n1"]
    assert ids(shape_history(history, drop_transient=True).messages) == ["u1", "a1"]


# -- pruning ------------------------------------------------------------------------------------------


def _window_between(total: int, after: int) -> int:
    """A window whose hard budget is below `total` and whose soft budget is at least `after`."""
    window = math.ceil(total / 0.85) - 1
    while math.floor(window * 0.85) >= total:
        window -= 1
    assert math.floor(window * 0.6) >= after, "test history does not leave room between the budgets"
    return window


def _read_history() -> list[dict]:
    return [
        user("u1", "read a"),
        assistant("a1", call("c1", "read", path="/workspace/a.txt")),
        result("r1", "c1", "read", {"content": "x" * 3000, "path": "/workspace/a.txt", "size": 3000, "success": True}),
        assistant("a2", text("read it")),
        user("u2", "again"),
        assistant("a3", call("c2", "read", path="/workspace/./a.txt")),
        result("r2", "c2", "read", {"content": "y" * 3000, "path": "/workspace/a.txt", "size": 3000, "success": True}),
        assistant("a4", text("done")),
        user("u3", "thanks"),
    ]


def test_without_a_window_nothing_is_superseded() -> None:
    history = _read_history()
    shaped = shape_history(history)
    assert shaped.messages == history and shaped.rewrites == {} and shaped.superseded_reads == 0


def test_under_the_hard_budget_an_earlier_read_of_a_path_read_again_is_superseded() -> None:
    history = _read_history()
    stored = copy.deepcopy(history)
    total = estimate_tokens(history)
    shaped = shape_history(history, context_window=math.ceil(total / 0.85) + 1)
    # the original's stub, keys in the order it saves them; the rest of the message as it was
    assert json.dumps(shaped.messages[2]) == json.dumps(
        {
            "id": "r1",
            "role": "toolResponse",
            "timestamp": "x",
            "toolCallId": "c1",
            "name": "read",
            "output": {"path": "/workspace/a.txt", "superseded": True},
        }
    )
    assert shaped.rewrites == {2: {"path": "/workspace/a.txt", "superseded": True}}
    assert shaped.superseded_reads == 1 and shaped.superseded_stale == shaped.superseded_budget == 0
    assert all(shaped.messages[i] is history[i] for i in range(len(history)) if i != 2)
    assert shaped.cursor == 0 and shaped.dropped_turns == 0
    assert history == stored  # the caller stores the rewrite (assemble does, on a real call)


def test_only_read_results_count_and_paths_match_exactly() -> None:
    def read(mid: str, path: str, **extra) -> dict:
        return result(mid, f"c{mid}", "read", {"content": "x", "path": path, "success": True, **extra})

    history = [
        user("u1", "go"),
        read("1", "/workspace/a.txt"),
        read("2", "/workspace/./a.txt"),  # another spelling: another path to the original
        result("3", "c3", "open-file", {"path": "/workspace/b.txt", "success": True}),
        result("4", "c4", "read-sections", {"path": "/workspace/b.txt", "success": True}),
        result("5", "c5", "read", {"error": "ENOENT", "success": False}),  # no path: never superseded
        result("6", "c6", "read", {"error": "ENOENT", "success": False}),
        read("7", "/workspace/b.txt"),
        read("8", "/workspace/a.txt"),
        result("9", "c9", "read", "a string output"),
        user("u2", "next"),
    ]
    shaped = shape_history(history, context_window=10**6)
    assert shaped.rewrites == {1: {"path": "/workspace/a.txt", "superseded": True}}
    # already a stub: nothing left to rewrite, and the stub still marks its path as read
    stubbed = [*history[:1], {**history[1], "output": {"path": "/workspace/a.txt", "superseded": True}}, *history[2:]]
    assert shape_history(stubbed, context_window=10**6).rewrites == {}


def test_reads_before_the_cursor_neither_supersede_nor_are_superseded() -> None:
    history = _read_history()
    shaped = shape_history(history, cursor=3, context_window=10**6)
    assert shaped.rewrites == {} and shaped.messages[3]["output"]["content"] == "y" * 3000


def _turn_in_progress() -> list[dict]:
    return [
        user("u1", "read a"),
        assistant("a1", call("c1", "read", path="/workspace/a.txt")),
        result("r1", "c1", "read", {"content": "old", "path": "/workspace/a.txt", "success": True}),
        assistant("a2", call("c2", "read", path="/workspace/a.txt")),
        result("r2", "c2", "read", {"content": "new", "path": "/workspace/a.txt", "success": True}),
    ]


def test_results_the_model_has_not_answered_yet_supersede_nothing_until_it_replies() -> None:
    # the original holds the latest reply's results apart until the model answers them: the request that
    # carries r2 still carries r1 whole
    history = _turn_in_progress()
    assert unanswered_from(history) == 4
    assert shape_history(history, context_window=10**6).rewrites == {}
    # once the model answered (a3), r1 is superseded on the next call
    history += [
        assistant("a3", call("c3", "respond", content="done")),
        result("r3", "c3", "respond", {"final": True, "sent": True}),
    ]
    assert unanswered_from(history) == len(history)  # the turn ended: between turns everything counts
    assert shape_history(history, context_window=10**6).rewrites == {
        2: {"path": "/workspace/a.txt", "superseded": True}
    }


def test_where_the_unanswered_messages_begin() -> None:
    turn = _turn_in_progress()
    notice = user("n1", "the tool failed", notice=True)
    media = user("p1", "", image("i"), media=True)
    retry = assistant("t1", text("plain text"))
    assert unanswered_from([*turn, notice, media, retry]) == 4  # still the results of a2 and what followed
    assert unanswered_from([*turn, user("u2", "next question")]) == 6  # a new turn: all of it answered
    intermediate = result("r3", "c3", "respond", {"final": False, "sent": True})
    assert unanswered_from([*turn[:3], assistant("a3", call("c3", "respond")), intermediate]) == 4
    failed = result("r3", "c3", "respond", {"error": "no such file", "success": False})
    assert unanswered_from([*turn[:3], assistant("a3", call("c3", "respond")), failed]) == 4
    ended = result("r3", "c3", "no-response", {"success": True})
    assert unanswered_from([*turn[:3], assistant("a3", call("c3", "no-response")), ended]) == 5
    assert unanswered_from([user("u1", "hi")]) == 1 and unanswered_from([]) == 0


def test_stale_read_superseded_first() -> None:
    history = _read_history()
    # spelled otherwise, the original does not match the path; above the hard budget cireil still finds it stale
    history[6] = {**history[6], "output": {**history[6]["output"], "path": "/workspace/./a.txt"}}
    stored = copy.deepcopy(history)
    total = estimate_tokens(history)
    stub = {"reason": "stale", "superseded": True, "tool": "read"}
    saved = estimate_tokens([history[2]]) - estimate_tokens([result("r1", "c1", "read", stub)])
    shaped = shape_history(history, context_window=_window_between(total, total - saved))
    assert shaped.superseded_stale == 1 and shaped.superseded_budget == 0 and shaped.dropped_turns == 0
    assert shaped.superseded_reads == 0 and shaped.rewrites == {}  # cireil's own stubs are not saved
    assert shaped.messages[2]["output"] == stub and shaped.messages[2]["toolCallId"] == "c1"
    assert shaped.messages[6] is history[6]
    assert shaped.tokens == total - saved and shaped.cursor == 0
    assert history == stored


def test_above_the_hard_budget_the_originals_stub_stays_and_is_not_made_stale() -> None:
    history = _read_history()
    total = estimate_tokens(history)
    shaped = shape_history(history, context_window=_window_between(total, total - 1000))
    assert shaped.messages[2]["output"] == {"path": "/workspace/a.txt", "superseded": True}
    assert shaped.superseded_reads == 1 and shaped.superseded_stale == 0 and shaped.superseded_budget == 0


def test_read_then_written_is_stale_but_failed_writes_do_not_count() -> None:
    history = [
        user("u1", "go"),
        assistant("a1", call("c1", "read", path="/workspace/a.txt"), call("c2", "read", path="/workspace/b.txt")),
        result("r1", "c1", "read", {"content": "x" * 3000, "success": True}),  # path known from the call
        result("r2", "c2", "read", {"content": "z" * 3000, "path": "/workspace/b.txt", "success": True}),
        assistant("a2", call("c3", "write", path="/workspace/a.txt"), call("c4", "edit", path="/workspace/b.txt")),
        result("r3", "c3", "write", {"path": "/workspace/a.txt", "success": True}),
        result("r4", "c4", "edit", {"error": "no match", "path": "/workspace/b.txt", "success": False}),
        assistant("a3", text("ok")),
        user("u2", "next"),
    ]
    total = estimate_tokens(history)
    shaped = shape_history(history, context_window=_window_between(total, total - 1000))
    assert shaped.messages[2]["output"] == {"reason": "stale", "superseded": True, "tool": "read"}
    assert shaped.messages[3] is history[3]


def test_oldest_results_give_way_to_the_budget_next() -> None:
    def big(i: int) -> list[dict]:
        return [
            user(f"u{i}", f"turn {i}"),
            assistant(f"a{i}", call(f"c{i}", "exec", command=f"job {i}")),
            result(f"r{i}", f"c{i}", "exec", {"stdout": str(i) * 3000, "success": True}),
            assistant(f"b{i}", text("ok")),
        ]

    history = big(1) + big(2) + big(3) + [user("u4", "and now?")]
    total = estimate_tokens(history)
    stub_saving = estimate_tokens([history[2]]) - estimate_tokens(
        [result("r1", "c1", "exec", {"reason": "budget", "superseded": True, "tool": "exec"})]
    )
    window = _window_between(total, total - stub_saving)
    shaped = shape_history(history, context_window=window)
    assert shaped.superseded_budget == 1 and shaped.superseded_stale == 0 and shaped.dropped_turns == 0
    assert shaped.messages[2]["output"] == {"reason": "budget", "superseded": True, "tool": "exec"}
    assert shaped.messages[6] is history[6] and shaped.messages[10] is history[10]
    assert shaped.tokens <= math.floor(window * 0.6)


def test_whole_oldest_turns_dropped_last_and_the_cursor_advances() -> None:
    history = []
    for i in range(6):
        history += [user(f"u{i}", "q" * 600), assistant(f"a{i}", text("r" * 600))]
    stored = copy.deepcopy(history)
    per_turn = estimate_tokens(history[:2])
    total = estimate_tokens(history)
    assert total == 6 * per_turn
    window = 5 * per_turn  # hard 4.25 turns < 6 turns; soft 3 turns
    shaped = shape_history(history, context_window=window)
    assert shaped.dropped_turns == 3 and shaped.superseded_budget == 0
    assert ids(shaped.messages) == ["u3", "a3", "u4", "a4", "u5", "a5"]
    assert shaped.cursor == 6 and history == stored
    # the system prompt and opened files count too: with them, one more turn goes
    assert shape_history(history, context_window=window, fixed_tokens=10).cursor == 8
    # the next call from the stored cursor sees what this one sent and prunes no further
    again = shape_history(history, cursor=shaped.cursor, context_window=window)
    assert again.messages == shaped.messages and again.cursor == 6


def test_latest_turn_is_never_dropped_nor_its_fresh_results_evicted() -> None:
    history = [
        user("u1", "old"),
        assistant("a1", text("old reply")),
        user("u2", "read the big file"),
        assistant("a2", call("c1", "read", path="/workspace/big.txt")),
        result("r1", "c1", "read", {"content": "b" * 9000, "path": "/workspace/big.txt", "success": True}),
    ]
    shaped = shape_history(history, context_window=100)
    assert ids(shaped.messages) == ["u2", "a2", "r1"]
    assert shaped.messages[2] is history[4] and shaped.cursor == 2


def test_summary_group_is_dropped_whole_and_the_cursor_moves_past_its_range() -> None:
    history = [
        user("u1", "a" * 30),
        assistant("a1", text("b" * 900)),
        user("u2", "c" * 30),
        assistant("a2", text("d" * 30)),
        user("u3", "e" * 30),
        assistant("a3", text("f" * 30)),
    ]
    # u2 is preserved, yet it does not start a turn: cutting there would land the cursor inside the range
    summary = {
        "slug": "s",
        "displayName": "S",
        "startMessageId": "u1",
        "endMessageId": "a2",
        "preserve": ["a1", "u2", "a2"],
        "summary": "x",
    }
    full = shape_history(history, summaries=[summary])
    assert ids(full.messages) == ["summary:s", "a1", "u2", "a2", "u3", "a3"]
    assert estimate_tokens(full.messages[2:]) <= 60 < estimate_tokens(full.messages[1:])
    shaped = shape_history(history, summaries=[summary], context_window=100)
    assert ids(shaped.messages) == ["u3", "a3"] and shaped.cursor == 4


def test_preserved_tail_merged_into_the_next_turn_still_lets_that_turn_lead() -> None:
    history = [
        user("u1", "a" * 30),
        assistant("a1", text("b" * 900)),
        user("u2", "c" * 30),
        assistant("a2", text("d" * 30)),
        user("u3", "e" * 30),
        assistant("a3", text("f" * 30)),
    ]
    summary = {
        "slug": "s",
        "displayName": "S",
        "startMessageId": "u1",
        "endMessageId": "a2",
        "preserve": ["a1", "u2"],
        "summary": "x",
    }
    full = shape_history(history, summaries=[summary])
    assert ids(full.messages) == ["summary:s", "a1", "u2", "a3"]  # u2 and u3 merged
    shaped = shape_history(history, summaries=[summary], context_window=100)
    assert ids(shaped.messages) == ["u2", "a3"] and shaped.cursor == 4
    assert ids(shape_history(history, cursor=4, summaries=[summary], context_window=100).messages) == ["u3", "a3"]


def test_without_a_window_the_last_max_turns_turns_are_kept() -> None:
    history = [assistant("a0", text("greeting"))]
    for i in range(10):
        history += [user(f"u{i}", f"t{i}"), assistant(f"a{i + 1}", text("r"))]
    shaped = shape_history(history, max_turns=3)
    assert ids(shaped.messages) == ["u7", "a8", "u8", "a9", "u9", "a10"]
    assert shaped.cursor == 15 and shaped.dropped_turns == 8  # the greeting counts as a turn of its own
    assert shape_history(history, max_turns=11).cursor == 0
    assert shape_history(history, max_turns=10).cursor == 1
    # images and huge texts do not matter here: only the number of turns does
    assert shape_history(history, cursor=15, max_turns=3).messages == shaped.messages
