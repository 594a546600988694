"""The conversation tools (read-session, list-sessions, query-sessions, read-history, download-attachments,
react, prune-boundaries) through execute(), on a real store and a real agent directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from cireil.render import result_bundle
from cireil.runtime.config.sandbox_config import Mount
from cireil.runtime.sessions import SessionStore
from cireil.runtime.sessions.messages import assistant_message, system_message, tool_response, user_message
from cireil.runtime.toolkit.registry import BUILTIN_NAMES, builtin
from cireil.runtime.toolkit.result import ToolResult
from conversationkit import Harness, respond

TOOLS = (
    "read-history",
    "read-session",
    "list-sessions",
    "query-sessions",
    "download-attachments",
    "react",
    "prune-boundaries",
)


@pytest.fixture
def store(agent_dir: Path):
    s = SessionStore.for_agent(agent_dir)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def h(agent_dir, store) -> Harness:
    return Harness(agent_dir, store)


def test_all_seven_are_registered_with_views():
    assert set(TOOLS) <= set(BUILTIN_NAMES)
    for name in TOOLS:
        assert builtin(name).name == name


def test_every_tool_needs_a_store(h):
    h.ctx.conversation = None
    args = {
        "read-history": {"message_id": "m"},
        "read-session": {"id": "x"},
        "list-sessions": {},
        "query-sessions": {"query": "x"},
        "download-attachments": {"message_id": "m", "to": "/workspace"},
        "react": {"emoji": "👍", "message_id": "m"},
        "prune-boundaries": {"start": "a", "end": "b", "identifier": "t", "summary": "s"},
    }
    for name in TOOLS:
        result = h.run(name, args[name])
        assert result["success"] is False
        assert result["error"].startswith(f"{name} needs a session store"), name


# -- read-session --------------------------------------------------------------------------------


def test_read_session_renders_parts(h):
    long_thought = "t" * 250
    h.add(
        user_message("hello", timestamp="2026-05-01T12:00:00+02:00"),
        assistant_message(
            [
                {"type": "thinking", "thinking": long_thought},
                {"type": "thinking", "thinking": "short"},
                {"type": "redactedThinking"},
                {"type": "toolCall", "id": "1", "name": "read", "input": {"path": "/workspace/a"}},
                {"type": "toolCall", "id": "2", "name": "respond", "input": {"content": "hi there"}},
                {"type": "image", "mediaType": "image/png", "data": ""},
                {"type": "video", "mediaType": "video/mp4", "data": ""},
                {"type": "text", "text": ""},
            ],
            timestamp="2026-05-01T12:00:05+02:00",
        ),
        tool_response("2", "respond", {"success": True}),
        system_message("not shown"),
    )
    result = h.run("read-session", {"id": "notebook:main", "order": "asc"})
    ids = [m["id"] for m in h.session.history[:2]]
    assert result == {
        "id": "notebook:main",
        "messages": [
            {"content": "hello", "id": ids[0], "role": "user", "timestamp": "2026-05-01 12:00:00 +02:00"},
            {
                "content": "\n".join(
                    [
                        f"[thinking: {'t' * 200}… (truncated)]",
                        "[thinking: short]",
                        "[redacted_thinking]",
                        '[toolCall: read {"path": "/workspace/a"}]',
                        "hi there",
                        "[image]",
                        "[video]",
                    ]
                ),
                "id": ids[1],
                "role": "assistant",
                "timestamp": "2026-05-01 12:00:05 +02:00",
            },
        ],
        "success": True,
        "totalMessages": 2,
    }
    assert list(result) == ["id", "messages", "success", "totalMessages"]


def test_read_session_other_sessions_paging_since_and_unknown(h, store):
    other = store.open_session("internal:job")  # an internal session (isolated cron runs are never stored, §5)
    msgs = [user_message(f"m{i}", timestamp=f"2026-01-0{i + 1}T00:00:00+00:00") for i in range(5)]
    other.history += msgs
    store.commit(other, msgs)
    page = h.run("read-session", {"id": "internal:job", "limit": 2, "offset": 1})
    assert [m["content"] for m in page["messages"]] == ["m3", "m2"] and page["totalMessages"] == 5
    since = h.run("read-session", {"id": "internal:job", "since": "2026-01-04T00:00:00+00:00", "order": "asc"})
    assert [m["content"] for m in since["messages"]] == ["m3", "m4"]
    ignored = h.run("read-session", {"id": "internal:job", "since": "last tuesday"})
    assert ignored["totalMessages"] == 5
    missing = h.run("read-session", {"id": "nope"})
    assert missing["success"] is False and missing["error"] == "Session not found: nope"
    bad = h.run("read-session", {"id": "internal:job", "limit": 101})
    assert bad["success"] is False and bad["error"] == "limit: Invalid value: Expected <=100 but received 101"


def test_read_session_sees_the_uncommitted_turn(h):
    h.add(user_message("not yet committed"), commit=False)
    assert h.run("read-session", {"id": "notebook:main"})["messages"][0]["content"] == "not yet committed"


# -- list-sessions and query-sessions ------------------------------------------------------------


def test_list_sessions_tool(h, store):
    h.add(user_message("hi <i>there</i>", timestamp="2026-02-01T00:00:00+00:00"))
    other = store.open_session("discord:42")
    first = user_message("older", timestamp="2026-01-01T00:00:00+00:00")
    other.history.append(first)
    store.commit(other, [first])
    store.open_session("cron:x")
    result = h.run("list-sessions", {})
    assert result["success"] is True
    assert [s["id"] for s in result["sessions"]] == ["notebook:main", "discord:42"]
    assert result["sessions"][0]["preview"] == "hi there"
    assert [s["id"] for s in h.run("list-sessions", {"origin": ["disc%"]})["sessions"]] == ["discord:42"]
    assert h.run("list-sessions", {"limit": 31})["success"] is False


def test_query_sessions_tool(h):
    h.add(user_message("Deploy the garden"), respond("done"), user_message("deploy again"))
    result = h.run("query-sessions", {"query": "deploy*"})
    assert result["success"] is True and result["totalMatches"] == 2
    assert list(result) == ["matches", "success", "totalMatches"]
    assert h.run("query-sessions", {"query": "Deploy", "mode": "raw"})["totalMatches"] == 1
    assert h.run("query-sessions", {"query": "GARDEN$", "mode": "regex"})["totalMatches"] == 1
    bad = h.run("query-sessions", {"query": "(", "mode": "regex"})
    assert bad["success"] is False and bad["error"].startswith("Invalid regular expression: ")
    assert h.run("query-sessions", {"query": "x", "mode": "fuzzy"})["success"] is False


# -- read-history --------------------------------------------------------------------------------


def test_read_history_directions(h):
    msgs = [user_message(f"u{i}") if i % 2 == 0 else respond(f"a{i}") for i in range(7)]
    h.add(*msgs[:3], tool_response("c", "respond", {"success": True}), *msgs[3:])
    ids = [m["id"] for m in msgs]
    before = h.run("read-history", {"message_id": ids[3], "limit": 2})
    assert before["count"] == 2 and before["direction"] == "before"
    assert [line.split('id="')[1].split('"')[0] for line in before["messages"].split("\n")] == ids[1:3]
    assert before["messages"].split("\n")[1] == (
        f'<msg from="user" id="{ids[2]}" timestamp="{msgs[2]["timestamp"]}">u2</msg>'
    )
    assert f'<msg from="agent" id="{ids[1]}"' in before["messages"] and ">a1</msg>" in before["messages"]
    after = h.run("read-history", {"message_id": ids[5], "direction": "after"})
    assert after["count"] == 1 and ">u6</msg>" in after["messages"]
    around = h.run("read-history", {"message_id": ids[3], "direction": "around", "limit": 3})
    assert [f">{t}</msg>" in around["messages"] for t in ("u2", "a3", "u4")] == [True, True, True]
    assert around["count"] == 3
    assert h.run("read-history", {"message_id": ids[0]}) == {"messages": [], "success": True}
    missing = h.run("read-history", {"message_id": "nope"})
    assert missing["success"] is False and missing["error"] == "Message not found: nope"


def test_read_history_skips_agent_messages_that_sent_nothing(h):
    question, answer = user_message("q"), respond("a")
    working = assistant_message([{"type": "toolCall", "id": "c", "name": "read", "input": {"path": "/x"}}])
    h.add(question, working, tool_response("c", "read", {"ok": True}), answer)
    result = h.run("read-history", {"message_id": answer["id"]})
    assert result["count"] == 1 and result["messages"].startswith(f'<msg from="user" id="{question["id"]}"')
    around = h.run("read-history", {"message_id": working["id"], "direction": "around", "limit": 3})
    assert around["count"] == 3  # the anchor itself is always shown
    assert f'id="{working["id"]}"' in around["messages"]


def test_read_history_shows_attachments(h, store):
    msg = user_message("see file")
    meta = store.add_attachment(h.session.id, msg["id"], 'a"b.txt', "text/plain", b"hello")
    msg["attachments"] = [meta]
    h.add(msg, respond("ok"))
    result = h.run("read-history", {"message_id": h.session.history[1]["id"]})
    assert result["messages"] == (
        f'<msg from="user" id="{msg["id"]}" timestamp="{msg["timestamp"]}">see file\n'
        '<attachment filename="a&quot;b.txt" size="5"/></msg>'
    )


# -- internal sessions: no channel ---------------------------------------------------------------


@pytest.mark.parametrize("session_id", ["cron:job", "internal:notes"])
def test_internal_sessions_have_no_channel(agent_dir, store, session_id):
    h = Harness(agent_dir, store, session_id)
    msg = user_message("hi")
    h.add(msg)
    assert h.run("read-history", {"message_id": msg["id"]})["error"] == "This channel does not support history fetching"
    assert (
        h.run("download-attachments", {"message_id": msg["id"], "to": "/workspace"})["error"]
        == "This channel does not support downloading attachments"
    )
    assert h.run("react", {"emoji": "👍", "message_id": msg["id"]})["error"] == (
        "Reactions are not supported on this channel"
    )


# -- download-attachments ------------------------------------------------------------------------


def test_download_attachments_round_trip(h, store, agent_dir):
    msg = user_message("files")
    first = store.add_attachment(h.session.id, msg["id"], "dir\\photo.png", "image/png", b"\x89PNG")
    second = store.add_attachment(h.session.id, msg["id"], "../notes.txt", "text/plain", b"notes")
    msg["attachments"] = [first, second]
    h.add(msg)
    result = h.run("download-attachments", {"message_id": msg["id"], "to": "/workspace/inbox/"})
    expected = [f"/workspace/inbox/{msg['id']}-photo.png", f"/workspace/inbox/{msg['id']}-notes.txt"]
    assert result == {"count": 2, "saved": expected, "success": True}
    assert (agent_dir / "workspace/inbox" / f"{msg['id']}-photo.png").read_bytes() == b"\x89PNG"
    assert (agent_dir / "workspace/inbox" / f"{msg['id']}-notes.txt").read_bytes() == b"notes"
    again = h.run("download-attachments", {"message_id": msg["id"], "to": "/workspace/inbox"})
    assert again["success"] is False
    assert again["error"] == f"File already exists at /workspace/inbox/{msg['id']}-photo.png"
    assert again["hint"] == "Choose another path with `to`."
    assert (agent_dir / "workspace/inbox" / f"{msg['id']}-photo.png").read_bytes() == b"\x89PNG"


def test_download_attachments_errors(h, store, agent_dir, tmp_path):
    msg = user_message("bad names")
    store.add_attachment(h.session.id, msg["id"], "good.txt", "text/plain", b"ok")
    store.add_attachment(h.session.id, msg["id"], "..", "text/plain", b"x")
    h.add(msg)
    result = h.run("download-attachments", {"message_id": msg["id"], "to": "/workspace/in"})
    assert result["error"] == "Attachment has an invalid filename: .."
    assert (agent_dir / "workspace/in" / f"{msg['id']}-good.txt").read_bytes() == b"ok"  # earlier ones stay
    missing = h.run("download-attachments", {"message_id": "nope", "to": "/workspace"})
    assert missing["error"] == "Message not found: nope"
    outside = h.run("download-attachments", {"message_id": msg["id"], "to": "/etc"})
    assert outside["success"] is False and outside["error"].startswith("Access denied")
    empty = user_message("no files")
    h.add(empty)
    assert h.run("download-attachments", {"message_id": empty["id"], "to": "/workspace"}) == {
        "count": 0,
        "saved": [],
        "success": True,
    }


def test_download_attachments_respects_read_only_mounts(agent_dir, store, tmp_path):
    source = tmp_path / "ro"
    source.mkdir()
    h = Harness(agent_dir, store, mounts=[Mount(source=source, target="ro", mode="ro")])
    msg = user_message("f")
    store.add_attachment(h.session.id, msg["id"], "x.txt", "text/plain", b"x")
    h.add(msg)
    result = h.run("download-attachments", {"message_id": msg["id"], "to": "/workspace/ro"})
    assert result["success"] is False and "read-only" in result["error"]
    assert list(source.iterdir()) == []


# -- react ---------------------------------------------------------------------------------------


def test_react_on_stored_message_and_event(h, store):
    msg = user_message("nice")
    h.add(msg)
    assert h.run("react", {"emoji": "👍", "message_id": msg["id"]}) == {"reacted": True, "success": True}
    h.run("react", {"emoji": "👍", "message_id": msg["id"]})  # the same emoji twice is one reaction
    assert store.find_message(h.session.id, msg["id"])["reactions"] == ["👍"]
    assert h.session.history[0]["reactions"] == ["👍"]
    assert h.events == [{"type": "react", "sessionId": "notebook:main", "messageId": msg["id"], "emoji": "👍"}] * 2


def test_react_defaults_to_trigger_and_needs_a_target(h, store):
    trigger = user_message("start")
    h.add(trigger, commit=False)  # the turn's trigger is committed when the turn ends
    h.conversation.trigger_message_id = trigger["id"]
    assert h.run("react", {"emoji": "🎉", "message_id": None})["reacted"] is True
    assert trigger["reactions"] == ["🎉"]
    store.commit(h.session, [trigger])
    assert store.find_message(h.session.id, trigger["id"])["reactions"] == ["🎉"]
    h.conversation.trigger_message_id = None
    none = h.run("react", {"emoji": "🎉"})
    assert none["success"] is False and none["error"].startswith("No message to react to")
    assert "message_id" in none["hint"]
    assert h.run("react", {"emoji": "🎉", "message_id": "nope"})["error"] == "Message not found: nope"
    assert h.run("react", {"emoji": ""})["success"] is False


# -- prune-boundaries ----------------------------------------------------------------------------


def test_prune_boundaries_commits_summary(h, store):
    msgs = [user_message(f"u{i}") for i in range(5)]
    h.add(*msgs)
    ids = [m["id"] for m in msgs]
    args = {
        "start": ids[1],
        "end": ids[3],
        "identifier": "Garden Plans!",
        "summary": "We planned.",
        "preserve": [ids[2]],
    }
    result = h.run("prune-boundaries", args)
    assert result == {"identifier": "Garden Plans!", "messagesCompacted": 3, "slug": "garden-plans", "success": True}
    summary = {
        "slug": "garden-plans",
        "displayName": "Garden Plans!",
        "startMessageId": ids[1],
        "endMessageId": ids[3],
        "preserve": [ids[2]],
        "summary": "We planned.",
    }
    assert h.session.summaries == [summary]
    assert store.get(h.session.id).summaries == [summary]
    h.run("prune-boundaries", {**args, "identifier": "garden plans", "summary": "Replaced.", "preserve": []})
    assert [s["summary"] for s in store.get(h.session.id).summaries] == ["Replaced."]


def test_prune_boundaries_errors(h):
    msgs = [user_message(f"u{i}") for i in range(3)]
    h.add(*msgs)
    ids = [m["id"] for m in msgs]
    base = {"identifier": "t", "summary": "s"}
    missing = h.run("prune-boundaries", {**base, "start": "x1", "end": "x2"})
    assert missing["error"] == "Message ID(s) not found in session history: start: x1, end: x2"
    assert "read-session" in missing["hint"]
    one = h.run("prune-boundaries", {**base, "start": ids[0], "end": "x2"})
    assert one["error"] == "Message ID(s) not found in session history: end: x2"
    backwards = h.run("prune-boundaries", {**base, "start": ids[2], "end": ids[0]})
    assert backwards["error"] == "Start message must come before end message in session history."
    preserved = h.run("prune-boundaries", {**base, "start": ids[0], "end": ids[2], "preserve": ["p1", ids[1], "p2"]})
    assert preserved["error"] == "Preserved message ID(s) not found: p1, p2"
    empty = h.run("prune-boundaries", {"start": ids[0], "end": ids[0], "identifier": "!!!", "summary": "s"})
    assert empty["error"] == "Identifier produces an empty slug."
    assert h.session.summaries == []
    assert h.run("prune-boundaries", {"start": ids[0], "end": ids[0], "identifier": "t"})["success"] is False


# -- views ---------------------------------------------------------------------------------------


def test_views_escape_and_stay_inert(h, store):
    hostile = "<script>alert(1)</script>"
    msg = user_message(hostile)
    store.add_attachment(h.session.id, msg["id"], "x.txt", "text/plain", b"x")
    h.add(msg, respond(hostile))
    calls = {
        "read-session": {"id": "notebook:main"},
        "list-sessions": {},
        "query-sessions": {"query": "*script*"},
        "read-history": {"message_id": h.session.history[1]["id"]},
        "download-attachments": {"message_id": msg["id"], "to": "/workspace/<b>"},
        "react": {"emoji": hostile, "message_id": msg["id"]},
        "prune-boundaries": {"start": msg["id"], "end": msg["id"], "identifier": hostile, "summary": "s"},
    }
    for name, args in calls.items():
        data = h.run(name, args)
        assert data["success"] is True, (name, data)
        bundle = result_bundle(ToolResult(name, args, data))
        html = bundle["text/html"]
        assert f"cireil-{name}" in html, name  # its own view, not the generic one
        assert "<script" not in html and "<style" not in html, name
        assert bundle["text/plain"], name
    text = result_bundle(ToolResult("query-sessions", calls["query-sessions"], h.run("query-sessions", {"query": "*"})))
    assert "match" in text["text/plain"]


def test_thinking_is_cut_only_when_longer_than_200():
    from cireil.runtime.toolkit.conversation_tools import message_text

    exact = assistant_message([{"type": "thinking", "thinking": "x" * 200}])
    longer = assistant_message([{"type": "thinking", "thinking": "x" * 200 + "y"}])
    assert message_text(exact) == f"[thinking: {'x' * 200}]"
    assert message_text(longer) == f"[thinking: {'x' * 200}… (truncated)]"
