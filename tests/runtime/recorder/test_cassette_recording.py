"""Issue 31, part 1: each recorded turn keeps its MCP cassette (every tools/call answer as the server sent it,
each server's tools/list and handshake) in cireil-recordings.db, bounded like the rest, with no secret of
mcp.toml in it; files of format 2 are migrated and their turns have no cassette."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path

import pytest

import cireil
from cireil.runtime.recorder import recording
from cireil.runtime.recorder.model import RecordedTurn
from cireil.runtime.recorder.store import CASSETTE_FORMAT, FORMAT, RECORDINGS_FILE, RecordingStore
from cireil.testing.scripted_llm import ScriptedLLM, reply
from mcp_peers.launch import mcp_toml, sdk_server
from turnkit import turn_agent

TOOLS = "".join(
    f"{name} = true\n"
    for name in ("respond", "mcp__demo__add", "mcp__demo__weather", "mcp__demo__fail", "mcp__gone__add")
)
# every kind of secret mcp.toml can hold: a header value, a URL password, a credential in the query
HEADER_SECRET = "hdr-secret-5555-abcdef"
URL_PASSWORD = "pw-secret-4242-abcdef"
QUERY_KEY = "qk-secret-9876-abcdef"
GONE_KEY = "gone-secret-7777-abcdef"
SECRETS = (HEADER_SECRET, URL_PASSWORD, QUERY_KEY, GONE_KEY)


def with_credentials(url: str, key: str, param: str = "key") -> str:
    return url.replace("http://", f"http://alice:{URL_PASSWORD}@") + f"?{param}={key}"


def mcp_agent(tmp_path: Path, llm: ScriptedLLM, demo_url: str, gone_url: str, settings: str = "") -> cireil.Agent:
    directory = turn_agent(tmp_path, llm.base_url, tools=TOOLS)
    servers = {"demo": with_credentials(demo_url, QUERY_KEY), "gone": with_credentials(gone_url, GONE_KEY, "api_key")}
    (directory / "config" / "mcp.toml").write_text(mcp_toml(servers, headers={"X-Team-Token": HEADER_SECRET}))
    if settings:
        (directory / "config" / "cireil.toml").write_text(settings)
    return cireil.load(directory)


def mcp_turn(agent: cireil.Agent, llm: ScriptedLLM, message: str = "use the tools") -> None:
    """Two identical adds, a structured result, an isError result, then a call to a server that is gone."""
    add = ("mcp__demo__add", {"a": 2, "b": 3})
    llm.script(
        reply.tool_calls(add, add),
        reply.tool_calls(("mcp__demo__weather", {"city": "Oslo"}), ("mcp__demo__fail", {"msg": "boom"})),
        reply.tool_calls(("mcp__gone__add", {"a": 1, "b": 1})),
        reply.tool_calls(("respond", {"content": "done"})),
    )
    outcome = agent.turn(message)
    assert outcome.ended == "respond", outcome


@pytest.fixture
def demo_url():
    """The SDK server, one per test: its `fail` tool logs a traceback to a pipe that no one reads, and a
    server shared by many tests stops answering once that pipe is full."""
    with sdk_server() as url:
        yield url


@pytest.fixture
def agent_and_gone(tmp_path, llm, demo_url):
    """An agent of two servers, demo (the SDK server) and gone (an SDK server stopped after load)."""
    with sdk_server() as gone_url:
        agent = mcp_agent(tmp_path, llm, demo_url, gone_url)
    yield agent
    agent.close()


def file_bytes(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.glob(RECORDINGS_FILE + "*")))


def test_a_turn_keeps_every_mcp_answer_in_order_with_each_servers_listing(agent_and_gone, llm):
    agent = agent_and_gone
    mcp_turn(agent, llm)
    (turn,) = agent.turns()
    cassette = agent.cassette(turn.id)
    assert cassette == turn.cassette == agent.cassette()  # the session's last turn by default
    assert cassette["format"] == CASSETTE_FORMAT == "cireil-mcp-cassette/1"
    assert list(cassette["servers"]) == ["demo", "gone"]

    demo = cassette["servers"]["demo"]
    assert demo["revision"] == "2026-07-28"  # the SDK server is dual-era: the probe finds it modern
    assert demo["serverInfo"]["name"] == "demo"
    assert demo["instructions"] == "Demo server: use add for sums."
    names = [t["name"] for t in demo["tools"]]
    assert {"add", "weather", "fail", "ns.dotted-name", "slow"} <= set(names)  # as listed, not only those enabled
    add_spec = next(t for t in demo["tools"] if t["name"] == "add")
    assert add_spec["inputSchema"]["required"] == ["a", "b"] and add_spec["description"] == "Add two numbers."

    calls = demo["calls"]
    assert [(c["tool"], c["arguments"]) for c in calls] == [
        ("add", {"a": 2, "b": 3}),
        ("add", {"a": 2, "b": 3}),
        ("weather", {"city": "Oslo"}),
        ("fail", {"msg": "boom"}),
    ]
    assert calls[0] == calls[1]  # the identical call, kept twice: replay answers each in its turn
    assert calls[0]["error"] is None
    assert calls[0]["result"]["content"] == [{"type": "text", "text": "5"}]
    assert calls[0]["result"]["structuredContent"] == {"result": 5}
    assert calls[0]["result"].get("isError") in (False, None)
    assert calls[2]["result"]["structuredContent"] == {"city": "Oslo", "temperature": 21, "tags": ["mild", "dry"]}
    assert calls[3]["result"]["isError"] is True and calls[3]["result"]["content"][0]["type"] == "text"
    # the JSON-RPC result as the server sent it, and the tool result the model got, side by side
    seen = {c.name: c.result for c in turn.calls}
    assert seen["mcp__demo__weather"]["structuredContent"] == calls[2]["result"]["structuredContent"]
    assert seen["mcp__demo__fail"]["success"] is False and "isError" not in seen["mcp__demo__fail"]

    gone = cassette["servers"]["gone"]
    assert gone["revision"] == "2026-07-28" and gone["tools"]  # the listing it had at load
    (failed,) = gone["calls"]
    assert failed["tool"] == "add" and failed["arguments"] == {"a": 1, "b": 1} and failed["result"] is None
    error = failed["error"]
    assert error["code"] == -32000 and error["data"] == {"failure": "transport", "status": None}
    assert error["message"].startswith("cannot reach http://alice:••••@127.0.0.1:")
    assert "api_key=••••" in error["message"]
    assert "cannot reach" in seen["mcp__gone__add"]["error"]

    json.dumps(cassette)  # plain JSON data, as the contract says
    if importlib.util.find_spec("cireil.testing.mcp_cassette") is not None:  # helper B's validator, when present
        from cireil.testing.mcp_cassette import Cassette

        recorded = Cassette(cassette)
        first = recorded.answer("demo", "add", {"b": 3, "a": 2})  # key order ignored
        assert first["result"]["content"][0]["text"] == "5"
        assert recorded.answer("demo", "add", {"a": 2, "b": 3}) == first


def test_no_secret_of_mcp_toml_is_in_the_recordings_file(agent_and_gone, llm):
    agent = agent_and_gone
    mcp_turn(agent, llm)
    text = json.dumps([agent.cassette(), agent.turns()[0].to_dict()], ensure_ascii=False)
    agent.close()  # the WAL checkpointed: the bytes below are the whole file
    raw = file_bytes(agent.directory)
    assert b"mcp_calls" in raw and b"cannot reach" in raw  # the file holds the cassette and the error
    for secret in SECRETS:
        assert secret not in text, secret
        assert secret.encode() not in raw, secret
    assert "alice:••••@" in text and "api_key=••••" in text  # the URL is still named, its credentials masked


def test_a_turn_without_mcp_calls_has_an_empty_cassette_and_to_dict_carries_it(agent_and_gone, llm):
    agent = agent_and_gone
    llm.script(reply.tool_calls(("respond", {"content": "hi"})))
    agent.turn("just answer")
    assert agent.cassette() == {"format": CASSETTE_FORMAT, "servers": {}}
    mcp_turn(agent, llm)
    data = agent.turns()[-1].to_dict()
    assert data["cassette"] == agent.cassette()  # an exported test carries it
    assert RecordedTurn.from_dict(data).cassette == data["cassette"]


def test_an_answer_over_the_cap_is_kept_as_not_recorded(agent_and_gone, llm, monkeypatch):
    monkeypatch.setattr(recording, "CALL_LIMIT", 300)  # weather's answer is longer, add's is not
    agent = agent_and_gone
    mcp_turn(agent, llm)
    calls = agent.cassette()["servers"]["demo"]["calls"]
    assert calls[0]["result"]["content"][0]["text"] == "5"
    weather = calls[2]
    assert weather["result"] is None and weather["error"] is None
    assert weather["notRecorded"].startswith("too big: the answer is ") and "over the 300" in weather["notRecorded"]
    assert weather["arguments"] == {"city": "Oslo"}  # what was asked stays: replay names the call it cannot answer


def test_eviction_takes_a_turns_cassette_with_it(tmp_path, llm, demo_url):
    with sdk_server() as gone_url:
        agent = mcp_agent(tmp_path, llm, demo_url, gone_url, "[recording]\nmax_turns = 1\n")
    try:
        mcp_turn(agent, llm, "first")
        first = agent.turns()[0].id
        mcp_turn(agent, llm, "second")
        (kept,) = agent.turns("*")
        assert kept.text == "second" and agent.recording.store.cassette(first) is None
        db = agent.recording.store.db
        assert db.execute("SELECT DISTINCT turn_id FROM mcp_calls").fetchall() == [(kept.id,)]
        assert db.execute("SELECT DISTINCT turn_id FROM mcp_servers").fetchall() == [(kept.id,)]
        # the listings are blobs of the kept turn (the same listing is stored once for both turns)
        hashes = [r[0] for r in db.execute("SELECT listing FROM mcp_servers")]
        assert db.execute(
            f"SELECT count(*) FROM turn_blobs WHERE turn_id = ? AND hash IN ({','.join('?' * len(hashes))})",
            (kept.id, *hashes),
        ).fetchone() == (len(set(hashes)),)
    finally:
        agent.close()


def schema(path: Path) -> list[tuple]:
    """Every table's columns as SQLite describes them, to compare a migrated file with a new one."""
    db = sqlite3.connect(path)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    out = [(t, [tuple(c[1:]) for c in db.execute(f"PRAGMA table_info({t})")]) for t in tables]
    db.close()
    return out


def test_a_file_of_format_2_is_migrated_and_its_turns_have_no_cassette(agent_and_gone, llm, tmp_path, demo_url):
    agent = agent_and_gone
    mcp_turn(agent, llm, "before")
    agent.close()
    servers = {"demo": demo_url, "gone": demo_url}  # loads again with gone answering
    (agent.directory / "config" / "mcp.toml").write_text(mcp_toml(servers))
    path = agent.directory / RECORDINGS_FILE
    db = sqlite3.connect(path)  # as cireil wrote it before cassettes (format 2)
    db.executescript(
        "DROP TABLE mcp_calls; DROP TABLE mcp_servers; ALTER TABLE turns DROP COLUMN mcp;"
        "UPDATE meta SET value = '2' WHERE key = 'format';"
    )
    db.close()
    before = schema(path)
    assert "mcp_calls" not in str(before)

    again = cireil.load(agent.directory)
    try:
        (old,) = again.turns()
        assert again.recording.problem is None
        assert old.cassette is None and again.cassette(old.id) is None  # recorded before: nothing to serve
        assert [c.name for c in old.calls][:2] == ["mcp__demo__add", "mcp__demo__add"]  # the rest reads as ever
        assert "cassette" not in old.to_dict()
        mcp_turn(again, llm, "after")
        assert again.cassette()["servers"]["demo"]["calls"][0]["arguments"] == {"a": 2, "b": 3}
    finally:
        again.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() == (str(FORMAT),) == ("3",)
    db.close()
    fresh = tmp_path / "fresh.db"
    RecordingStore(fresh).close()
    assert schema(path) == schema(fresh)  # the migration gives the very schema a new file has


def test_the_migration_is_one_transaction(tmp_path):
    """A file the migration cannot finish (a table already there) is left as it was, refused with a message."""
    path = tmp_path / RECORDINGS_FILE
    RecordingStore(path).close()
    db = sqlite3.connect(path)
    db.executescript("ALTER TABLE turns DROP COLUMN mcp; UPDATE meta SET value = '2' WHERE key = 'format';")
    db.close()  # mcp_calls is still there: the step creating it fails after ADD COLUMN ran
    with pytest.raises(Exception, match="already exists"):
        RecordingStore(path)
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() == ("2",)
    assert "mcp" not in [c[1] for c in db.execute("PRAGMA table_info(turns)")]  # the ADD COLUMN was rolled back
    db.close()


def test_each_kind_of_mcp_failure_is_kept_as_a_json_rpc_error():
    from cireil.runtime.mcp.errors import McpError, McpHttpError, McpRemoteError, McpTimeout

    remote = McpRemoteError(-32602, "unknown city", {"city": "Atlantis"})
    assert remote.rpc_error() == {"code": -32602, "message": "unknown city", "data": {"city": "Atlantis"}}
    assert McpRemoteError("odd", "x").rpc_error()["code"] == -32000  # a code that is no integer is not kept
    timeout = McpTimeout("timed out after 10 ms calling add").rpc_error()
    assert timeout["code"] == -32001 and timeout["data"] == {"failure": "timeout", "status": None}
    refused = McpHttpError("HTTP 401 from http://h/mcp?token=abcdef123456 refused", 401).rpc_error()
    assert refused == {
        "code": -32000,
        "message": "HTTP 401 from http://h/mcp?token=•••• refused",  # masked as every McpError is
        "data": {"failure": "http", "status": 401},
    }
    assert McpHttpError("HTTP 400", 400, -32020, {"x": 1}).rpc_error()["data"] == {
        "failure": "http",
        "status": 400,
        "data": {"x": 1},
    }
    assert (
        McpError("cannot reach http://u:pw-123456@h/mcp").rpc_error()["message"] == "cannot reach http://u:••••@h/mcp"
    )


def test_a_damaged_cassette_row_is_a_call_that_says_so(agent_and_gone, llm):
    agent = agent_and_gone
    mcp_turn(agent, llm)
    store = agent.recording.store
    store.db.execute("UPDATE mcp_calls SET answer = '{not json' WHERE step = 2 AND position = 0")
    store.db.execute("UPDATE mcp_servers SET listing = 'no-such-blob' WHERE server = 'gone'")
    cassette = agent.cassette()
    weather = cassette["servers"]["demo"]["calls"][2]
    assert weather["tool"] == "weather" and weather["result"] is None and weather["error"] is None
    assert "MCP call 0 of step 2 of turn" in weather["notRecorded"] and "not JSON" in weather["notRecorded"]
    assert cassette["servers"]["demo"]["calls"][3]["result"]["isError"] is True  # the others read as ever
    gone = cassette["servers"]["gone"]
    assert gone["tools"] == [] and "missing from the blobs table" in gone["notRecorded"]
    assert gone["calls"][0]["error"]["code"] == -32000


def test_answers_and_listings_keep_the_key_order_the_server_wrote():
    answer = {"tool": "t", "arguments": {"z": 1, "a": 2}, "result": {"z": 1, "a": 2}, "error": None}
    assert recording._mcp_call(0, "s", answer)[3:] == ('{"z":1,"a":2}', '{"result":{"z":1,"a":2}}')
    listing = {"revision": "r", "serverInfo": None, "instructions": None, "tools": [{"name": "t", "description": ""}]}
    assert '"tools":[{"name":"t","description":""}]' in recording._listing(listing)
