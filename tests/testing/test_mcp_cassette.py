"""The cassette's matching rules (server, tool, JSON-equal arguments, recorded order, nearest) and its refusals."""

from __future__ import annotations

import json
import threading

import pytest

from cireil.testing.mcp_cassette import FORMAT, Cassette, Unrecorded, canonical, cassette_from, load_cassette

ADD = {"name": "add", "inputSchema": {"type": "object"}}


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}], "isError": False}


def call(tool: str, arguments: dict, result: dict | None = None, error: dict | None = None) -> dict:
    return {"tool": tool, "arguments": arguments, "result": result, "error": error}


def cassette(*calls: dict, tools: list | None = None) -> dict:
    server = {"revision": "2025-06-18", "serverInfo": {"name": "demo", "version": "1"}, "instructions": "Sums."}
    return {"format": FORMAT, "servers": {"demo": {**server, "tools": tools or [ADD], "calls": list(calls)}}}


def test_identical_calls_are_answered_in_recorded_order_then_unrecorded():
    c = Cassette(cassette(call("add", {"a": 1, "b": 2}, text("first")), call("add", {"a": 1, "b": 2}, text("second"))))
    # key order, and 2 against 2.0, do not matter
    assert c.answer("demo", "add", {"b": 2, "a": 1})["result"] == text("first")
    assert c.answer("demo", "add", {"a": 1.0, "b": 2})["result"] == text("second")
    with pytest.raises(Unrecorded) as info:
        c.answer("demo", "add", {"a": 1, "b": 2})
    assert "all 2 recorded calls with these arguments were already answered" in info.value.message
    c.reset()
    assert c.answer("demo", "add", {"a": 1, "b": 2})["result"] == text("first")


def test_different_calls_interleave_each_in_its_own_order():
    c = Cassette(
        cassette(call("add", {"a": 1}, text("1a")), call("add", {"a": 2}, text("2")), call("add", {"a": 1}, text("1b")))
    )
    assert c.answer("demo", "add", {"a": 2})["result"] == text("2")
    assert c.answer("demo", "add", {"a": 1})["result"] == text("1a")
    assert c.answer("demo", "add", {"a": 1})["result"] == text("1b")


def test_json_equality_is_equality_of_json_values():
    assert canonical({"b": [1, {"y": 1.0, "x": None}], "a": "é"}) == canonical(
        {"a": "é", "b": [1.0, {"x": None, "y": 1}]}
    )
    assert canonical(True) != canonical(1)  # a boolean is never a number
    assert canonical(0) == canonical(-0.0)
    assert canonical([1, 2]) != canonical([2, 1])  # arrays keep their order
    assert canonical(1.5) != canonical(1)
    with pytest.raises(ValueError):
        canonical(float("nan"))
    c = Cassette(cassette(call("add", {"flag": True}, text("t"))))
    with pytest.raises(Unrecorded):
        c.answer("demo", "add", {"flag": 1})
    assert c.answer("demo", "add", {"flag": True})["result"] == text("t")


def test_absent_arguments_are_the_empty_object():
    c = Cassette(cassette(call("add", {}, text("none"))))
    assert c.answer("demo", "add", None)["result"] == text("none")


def test_an_unrecorded_call_names_server_tool_and_nearest_arguments():
    c = Cassette(
        cassette(
            call("add", {"a": 1, "b": 2, "c": 3}, text("x")),
            call("add", {"a": 7, "b": 5, "c": 3}, text("y")),
            call("add", {"a": 9, "b": 9, "c": 9}, text("z")),
            call("add", {"a": 1, "b": 2, "c": 3}, text("x again")),
        )
    )
    with pytest.raises(Unrecorded) as info:
        c.answer("demo", "add", {"a": 1, "b": 5, "c": 3})
    error = info.value
    assert (error.server, error.tool) == ("demo", "add")
    # one top-level value differs from the first and from the second: a tie goes to the earlier; each once
    assert error.nearest == [{"a": 1, "b": 2, "c": 3}, {"a": 7, "b": 5, "c": 3}, {"a": 9, "b": 9, "c": 9}]
    assert "\n" not in error.message
    assert error.message == (
        'no recorded answer for MCP server \'demo\' tool \'add\' with arguments {"a": 1, "b": 5, "c": 3}: '
        'nearest recorded arguments: {"a": 1, "b": 2, "c": 3}; {"a": 7, "b": 5, "c": 3}; {"a": 9, "b": 9, "c": 9}'
    )
    with pytest.raises(Unrecorded) as info:
        c.answer("demo", "sub", {})
    assert info.value.nearest == ["add"] and "tools called on 'demo': 'add'" in info.value.message
    with pytest.raises(Unrecorded) as info:
        c.answer("other", "add", {})
    assert info.value.nearest == ["demo"] and "recorded servers: 'demo'" in info.value.message
    # a never-called tool on a server with no calls: the listed tools are named
    with pytest.raises(Unrecorded) as info:
        Cassette(cassette()).answer("demo", "sub", {})
    assert "tools listed on 'demo': 'add'" in info.value.message


def test_a_huge_argument_is_quoted_short():
    c = Cassette(cassette(call("add", {"a": 1}, text("x"))))
    with pytest.raises(Unrecorded) as info:
        c.answer("demo", "add", {"a": "z" * 100_000})
    assert len(info.value.message) < 1000


def test_answers_are_copies_and_the_cassette_keeps_its_own():
    data = cassette(call("add", {"a": 1}, text("x")), call("add", {"a": 1}, text("x")))
    c = Cassette(data)
    data["servers"]["demo"]["calls"][1]["result"] = text("changed after loading")
    first = c.answer("demo", "add", {"a": 1})
    first["result"]["content"] = []
    assert c.answer("demo", "add", {"a": 1})["result"] == text("x")


def test_concurrent_identical_calls_each_get_one_recorded_answer():
    c = Cassette(cassette(*(call("add", {"a": 1}, text(str(i))) for i in range(200))))
    got: list[str] = []
    lock = threading.Lock()

    def ask() -> None:
        for _ in range(50):
            answer = c.answer("demo", "add", {"a": 1})["result"]["content"][0]["text"]
            with lock:
                got.append(answer)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got, key=int) == [str(i) for i in range(200)]


def test_errors_and_unanswered_calls_are_kept():
    error = {"code": -32602, "message": "bad b", "data": {"b": "no"}}
    c = Cassette(cassette(call("add", {"b": "no"}, error=error), {**call("add", {"t": 1}), "notRecorded": "too big"}))
    assert c.answer("demo", "add", {"b": "no"})["error"] == error
    assert c.answer("demo", "add", {"t": 1})["notRecorded"] == "too big"
    data = {"format": FORMAT, "servers": {"gone": {"tools": [], "calls": [], "notRecorded": "listing damaged"}}}
    with pytest.raises(Unrecorded, match="the recording says: listing damaged"):
        Cassette(data).answer("gone", "add", {})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "$: expected an object, found an array"),
        ({"servers": {}}, "$.format: expected 'cireil-mcp-cassette/1', found null"),
        ({"format": FORMAT, "servers": []}, "$.servers: expected an object, found an array"),
        ({"format": FORMAT, "servers": {"demo": {"tools": {}}}}, '$.servers["demo"].tools: expected an array'),
        (
            {"format": FORMAT, "servers": {"demo": {"tools": [{}]}}},
            '$.servers["demo"].tools[0].name: expected a string',
        ),
        (
            {"format": FORMAT, "servers": {"demo": {"calls": [{"tool": "add", "arguments": [1]}]}}},
            '$.servers["demo"].calls[0].arguments: expected an object, found an array',
        ),
        (
            cassette(call("add", {}, text("x"), {"code": 1, "message": "m"})),
            '$.servers["demo"].calls[0]: has both a result and an error',
        ),
        (cassette(call("add", {}, error={"code": True, "message": "m"})), ".calls[0].error.code: expected an integer"),
        (cassette(call("add", {}, error={"code": 1})), ".calls[0].error.message: expected a string, found null"),
        (cassette(call("add", {"x": float("inf")}, text("x"))), "not JSON data"),
        (cassette(call("add", {"x": {1, 2}}, text("x"))), "not JSON data"),
        ({"format": FORMAT, "servers": {"d": {"revision": 3}}}, '$.servers["d"].revision: expected a string or null'),
    ],
)
def test_bad_cassettes_are_refused_naming_the_path(data, message):
    with pytest.raises(ValueError) as info:
        Cassette(data)
    assert message in str(info.value)


def test_depth_and_size_are_bounded():
    deep: dict = {}
    node = deep
    for _ in range(150):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ValueError, match="nested deeper than 100"):
        Cassette(cassette(call("add", deep, text("x"))))
    with pytest.raises(ValueError, match="over 64 MiB"):
        Cassette(cassette(*(call("add", {"i": i}, text("y" * (1 << 20))) for i in range(65))))
    with pytest.raises(ValueError, match="nested deeper than 100"):
        load_cassette("[" * 100_000 + "]" * 100_000)


def _exchange(seq: int, method: str, params: dict, answer: dict | None, kind: str = "json", **extra) -> dict:
    body = {"jsonrpc": "2.0", "id": seq, "method": method, "params": params}
    response = {"status": 200, "headers": {}, "type": kind}
    if answer is not None:
        message = {"jsonrpc": "2.0", "id": seq, **answer}
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 0}}
        response["messages"] = [progress, message] if kind == "sse" else [message]
    else:
        response["messages"] = []
    return {
        "seq": seq,
        "server": "demo",
        "method": method,
        "http": "POST",
        "revision": "2025-06-18",
        "request": {"headers": {"authorization": "***"}, "body": body},
        "response": response,
        **extra,
    }


def wire_log() -> list[dict]:
    init = {
        "result": {
            "protocolVersion": "2025-06-18",
            "serverInfo": {"name": "demo", "version": "0.1"},
            "instructions": "Use add.",
            "capabilities": {},
        }
    }
    return [
        _exchange(1, "initialize", {"protocolVersion": "2025-11-25"}, init),
        {
            "seq": 2,
            "server": "demo",
            "method": "notifications/initialized",
            "http": "POST",
            "request": {"body": {"jsonrpc": "2.0", "method": "notifications/initialized"}},
            "response": {"status": 202, "messages": []},
        },
        _exchange(3, "tools/list", {}, {"result": {"tools": [ADD, {"name": "old"}]}}),
        _exchange(4, "tools/list", {}, {"result": {"tools": [{**ADD, "description": "newer"}]}}),
        _exchange(5, "tools/call", {"name": "add", "arguments": {"a": 1}}, {"result": text("1")}, "sse"),
        _exchange(6, "tools/call", {"name": "add", "arguments": {"a": 1}}, {"result": text("1 again")}),
        _exchange(
            7, "tools/call", {"name": "add", "arguments": {"a": "x"}}, {"error": {"code": -32602, "message": "no"}}
        ),
        _exchange(8, "tools/call", {"name": "add", "arguments": {"a": 2}}, None, error="timed out"),
        {**_exchange(9, "tools/call", {"name": "add", "arguments": {"a": 3}}, None), "request": {"body": "{cut"}},
        {
            "seq": 10,
            "server": "demo",
            "method": "(end session)",
            "http": "DELETE",
            "request": {"body": ""},
            "response": {"status": 200, "messages": []},
        },
    ]


def test_a_cassette_from_an_exported_wire_log():
    c = Cassette.from_wire_log(wire_log())
    demo = c.server("demo")
    assert demo["revision"] == "2025-06-18"
    assert demo["serverInfo"] == {"name": "demo", "version": "0.1"} and demo["instructions"] == "Use add."
    assert demo["tools"] == [{**ADD, "description": "newer"}, {"name": "old"}]  # later listings win per name
    assert [(x["arguments"], x["error"] is not None) for x in demo["calls"]] == [
        ({"a": 1}, False),
        ({"a": 1}, False),
        ({"a": "x"}, True),
    ]  # the call never answered and the one cut by the log's size limit are left out
    assert c.answer("demo", "add", {"a": 1})["result"] == text("1")
    assert c.answer("demo", "add", {"a": 1})["result"] == text("1 again")
    # the file as `%cireil mcp log --export` writes it: JSON lines
    lines = "".join(json.dumps(e) + "\n" for e in wire_log())
    assert load_cassette(lines).to_dict() == c.to_dict()
    with pytest.raises(ValueError, match="holds no MCP exchange"):
        Cassette.from_wire_log([])
    with pytest.raises(ValueError, match=r"\$\[0\].server"):
        Cassette.from_wire_log([{"method": "tools/list"}])


def test_a_modern_discover_gives_server_info_and_instructions():
    meta = {"io.modelcontextprotocol/serverInfo": {"name": "demo", "version": "2"}}
    found = {"result": {"supportedVersions": ["2026-07-28"], "instructions": "Modern.", "_meta": meta}}
    log = [{**_exchange(1, "server/discover", {}, found), "revision": "2026-07-28"}]
    demo = Cassette.from_wire_log(log).server("demo")
    assert (demo["revision"], demo["serverInfo"]["version"], demo["instructions"]) == ("2026-07-28", "2", "Modern.")


def test_sources_a_dict_a_file_or_an_agent_directory(tmp_path):
    data = cassette(call("add", {"a": 1}, text("x")))
    assert cassette_from(data).to_dict() == Cassette(data).to_dict()
    (tmp_path / "c.json").write_text(json.dumps(data))
    assert cassette_from(tmp_path / "c.json", server="demo").to_dict() == Cassette(data).to_dict()
    with pytest.raises(ValueError, match="no MCP server 'nope'; recorded: 'demo'"):
        cassette_from(data, server="nope")
    with pytest.raises(ValueError, match="name the recorded turn"):
        cassette_from(tmp_path)
    assert cassette_from(tmp_path, turn=4, recorded=lambda d, t: data if t == 4 else None).server("demo")
    with pytest.raises(ValueError, match="turn 5 has no recorded MCP traffic"):
        cassette_from(tmp_path, turn=5, recorded=lambda d, t: None)
    with pytest.raises(ValueError, match="no such file"):
        cassette_from(tmp_path / "missing.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"server": "demo"}\nnot json\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl: line 2: not JSON"):
        cassette_from(tmp_path / "bad.jsonl")
