"""One session passed back and forth between cireil and the original CireilClaw itself, one after the other.

The original runs for real (tests/originalkit.py): its own `init` writes the root, its own `run` startup loads
the sessions cireil stored, its own scheduler runs a cron job with execution = "main" in that session and its
own shutdown flushes the result; cireil then continues what the original stored. Both talk to one scripted
model server, so what each sent for the other's history is checked on the wire, and sessions.db row by row.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import struct
import zlib
from pathlib import Path

import pytest

import cireil
from cireil.runtime.original.runtime_root import MIGRATION_IDS
from cireil.testing.scripted_llm import ScriptedLLM, reply
from originalkit import Original, point_engine

SESSION = "internal:roundtrip"
CRON = """\
[[jobs]]
id = "followup"
prompt = "Follow up on the picture."
execution = "main"
target = "internal:roundtrip"
delivery = "none"
schedule = { every = 86400 }
"""


def png(width: int = 16, height: int = 8) -> bytes:
    """A real PNG: red on the left half, blue on the right."""
    row = b"\x00" + b"".join(b"\xff\x00\x00" if x < width // 2 else b"\x00\x00\xff" for x in range(width))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(row * height)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def rows(agent_dir: Path) -> dict[str, dict]:
    db = sqlite3.connect(agent_dir / "sessions.db")
    try:
        db.row_factory = sqlite3.Row
        return {row["id"]: dict(row) for row in db.execute("SELECT * FROM sessions")}
    finally:
        db.close()


def image_rows(agent_dir: Path) -> list[tuple]:
    db = sqlite3.connect(agent_dir / "sessions.db")
    try:
        return db.execute("SELECT id, session_id, media_type FROM images").fetchall()
    finally:
        db.close()


def history(agent_dir: Path, session: str = SESSION) -> list[dict]:
    return json.loads(rows(agent_dir)[session]["history"])


def sent_texts(messages: list[dict]) -> list[str]:
    """Every text part of the chat messages a runtime sent, in order."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [part["text"] for part in content if part.get("type") == "text"]
    return out


def tool_calls(messages: list[dict]) -> list[tuple[str, str, dict]]:
    return [
        (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"]))
        for message in messages
        for call in message.get("tool_calls") or []
    ]


def image_urls(messages: list[dict]) -> list[str]:
    return [
        part["image_url"]["url"]
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_the_originals_migrations_are_the_ones_cireil_knows(original: Original) -> None:
    assert original.migration_ids() == list(MIGRATION_IDS)


def test_a_session_goes_cireil_original_cireil_with_text_tools_and_a_picture(original: Original, home: Path) -> None:
    agent_dir = original.init_root(home, "Peer Agent", preset="standard")
    assert agent_dir == home.resolve() / ".cireilclaw" / "agents" / "peer-agent"
    tools_toml = (agent_dir / "config" / "tools.toml").read_bytes()
    assert b"str-replace = true" in tools_toml  # the original still writes it: cireil must load it as it is
    assert not (home / ".cireilclaw" / "config" / "migrations.json").exists()  # its init writes none
    picture = png()
    (agent_dir / "workspace" / "pic.png").write_bytes(picture)
    (agent_dir / "workspace" / "notes.md").write_text("# Notes\n\nWater the tomatoes.\n")
    picture_url = "data:image/png;base64," + base64.b64encode(picture).decode()

    with ScriptedLLM(default=reply.tool_calls(("no-response", {}))) as llm:
        point_engine(agent_dir, llm.base_url)

        # 1. cireil: a turn with a tool call that reads a picture, stored in sessions.db
        agent = cireil.load(agent_dir)
        try:
            assert "edit" in [t.name for t in agent.tools]
            llm.script(
                reply.tool_calls(("read", {"path": "/workspace/pic.png"}, "call_pic")),
                reply.tool_calls(("respond", {"content": "Red on the left, blue on the right."}, "call_say")),
            )
            outcome = agent.turn("What is in pic.png?", session=SESSION)
            assert outcome.error is None and outcome.ended == "respond"
        finally:
            agent.close()
        assert (agent_dir / "config" / "tools.toml").read_bytes() == tools_toml
        by_cireil = history(agent_dir)
        roles = ["user", "assistant", "toolResponse", "user", "assistant", "toolResponse"]
        assert [m["role"] for m in by_cireil] == roles
        ((image_id, image_session, media_type),) = image_rows(agent_dir)
        assert (image_session, media_type) == (SESSION, "image/png")
        assert (agent_dir / "images" / f"{image_id}.png").read_bytes() == picture

        # 2. the original: its own startup loads the session, its scheduler's cron code runs a "main" job in it
        (agent_dir / "config" / "cron.toml").write_text(CRON)
        original.mark_migrations_applied(home)  # what `cireil init --adopt` is for: else `run` stops at a prompt
        cireil_requests = len(llm.requests)
        llm.script(
            reply.tool_calls(("read", {"path": "/workspace/notes.md"}, "call_notes")),
            reply.tool_calls(("no-response", {}, "call_quiet")),
        )
        with original.start(home) as peer:
            loaded = {s["id"]: s for s in peer.sessions()}
            assert loaded[SESSION]["history"] == len(by_cireil)
            assert peer.cron("followup")["ran"] is True
        # leaving the block stopped it with SIGINT: its shutdown flushed the debounced save

        sent = llm.requests[cireil_requests].body["messages"]
        assert "What is in pic.png?" in sent_texts(sent)
        assert "Follow up on the picture." in sent_texts(sent)
        assert tool_calls(sent)[:2] == [
            ("call_pic", "read", {"path": "/workspace/pic.png"}),
            ("call_say", "respond", {"content": "Red on the left, blue on the right."}),
        ]
        assert image_urls(sent) == [picture_url]  # cireil's picture, sent by the original byte for byte
        by_original = history(agent_dir)
        assert by_original[: len(by_cireil)] == by_cireil  # what cireil stored, kept as it was
        added = by_original[len(by_cireil) :]
        assert [m["role"] for m in added] == ["user", "assistant", "toolResponse", "assistant", "toolResponse"]
        assert added[0]["content"] == {"content": "Follow up on the picture.", "type": "text"}
        assert added[2]["content"]["output"]["content"].startswith("# Notes")
        assert rows(agent_dir)[SESSION]["last_activity"] is None  # a cron job is not user activity
        assert len(image_rows(agent_dir)) == 1

        # 3. cireil again: it loads what the original stored and continues from there
        original_requests = len(llm.requests)
        llm.script(reply.tool_calls(("respond", {"content": "Done."}, "call_done")))
        agent = cireil.load(agent_dir)
        try:
            outcome = agent.turn("Thanks!", session=SESSION)
            assert outcome.error is None and outcome.ended == "respond"
        finally:
            agent.close()
        sent = llm.requests[original_requests].body["messages"]
        texts = sent_texts(sent)
        assert texts.index("What is in pic.png?") < texts.index("Follow up on the picture.") < texts.index("Thanks!")
        assert [name for _, name, _ in tool_calls(sent)] == ["read", "respond", "read", "no-response"]
        assert image_urls(sent) == [picture_url]
        final = history(agent_dir)
        assert final[: len(by_original)] == by_original  # the original's turn, kept as it stored it
        assert final[len(by_original)]["content"] == {"content": "Thanks!", "type": "text"}
        assert set(rows(agent_dir)) == {SESSION}
