"""`cireil mcp mock SOURCE`: a recording served as an MCP server from the shell. It prints its URL, the official
SDK client lists and calls the recorded tools through it, and Ctrl-C stops it cleanly (exit 0); SOURCE is a wire
log exported by `%cireil mcp log --export` or an agent directory with --turn N."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

import cireil
from cireil import cli
from cireil.testing.scripted_llm import reply
from mcp_peers.launch import mcp_toml
from turnkit import turn_agent

pytest_plugins = ("mcp_peers.fixtures",)  # the SDK server

TOOLS = "respond = true\nmcp__demo__add = true\nmcp__demo__weather = true\n"
SECRET = "hdr-secret-3131-abcdef"


def serve(*args: str) -> tuple[subprocess.Popen, dict[str, str]]:
    """Start `cireil mcp mock ARGS`; its URLs by server once it says it is serving."""
    env = {**os.environ, "PYTHONPATH": str(Path(cireil.__file__).parent.parent)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cireil", "mcp", "mock", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    urls = {}
    for line in proc.stdout:
        if line.startswith("serving recorded MCP traffic"):
            return proc, urls
        name, url, *_ = line.split()
        urls[name] = url
    raise AssertionError(f"cireil mcp mock exited: {proc.wait()} {proc.stderr.read()}")


def interrupt(proc: subprocess.Popen) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


async def list_and_call(url: str, calls: list[tuple[str, dict]]) -> tuple[list[str], list]:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = [t.name for t in (await session.list_tools()).tools]
        return names, [await session.call_tool(tool, args) for tool, args in calls]


def record_a_turn(tmp_path: Path, llm, url: str) -> tuple[cireil.Agent, Path]:
    directory = turn_agent(tmp_path, llm.base_url, tools=TOOLS)
    (directory / "config" / "mcp.toml").write_text(mcp_toml({"demo": url}, headers={"X-Team-Token": SECRET}))
    agent = cireil.load(directory)
    add = ("mcp__demo__add", {"a": 2, "b": 3})
    llm.script(
        reply.tool_calls(add, ("mcp__demo__weather", {"city": "Oslo"})),
        reply.tool_calls(add),
        reply.tool_calls(("respond", {"content": "done"})),
    )
    assert agent.turn("use the tools").ended == "respond"
    return agent, directory


def test_a_wire_log_export_is_served_until_ctrl_c(tmp_path, llm, sdk_sse):
    agent, _ = record_a_turn(tmp_path, llm, sdk_sse)
    try:
        export = tmp_path / "wire.jsonl"
        assert agent.export_mcp_log(export) > 0
    finally:
        agent.close()
    assert SECRET not in export.read_text()
    proc, urls = serve(str(export))
    try:
        assert list(urls) == ["demo"] and urls["demo"].startswith("http://127.0.0.1:")
        calls = [("add", {"b": 3, "a": 2}), ("weather", {"city": "Oslo"})]  # key order does not matter
        names, results = asyncio.run(list_and_call(urls["demo"], [*calls, ("add", {"a": 2, "b": 3})]))
        assert {"add", "weather"} <= set(names)
        assert [r.content[0].text for r in (results[0], results[2])] == ["5", "5"]
        assert results[1].structured_content == {"city": "Oslo", "temperature": 21, "tags": ["mild", "dry"]}
    finally:
        code, out, err = interrupt(proc)
    assert code == 0, err
    assert out.strip().endswith("stopped") and "Traceback" not in err


def test_an_agent_directory_turn_is_served_and_unrecorded_calls_say_what_was_recorded(tmp_path, llm, sdk_sse):
    agent, directory = record_a_turn(tmp_path, llm, sdk_sse)
    (turn,) = agent.turns()
    agent.close()
    proc, urls = serve(str(directory), "--turn", str(turn.id), "--server", "demo")
    try:

        async def run() -> str:
            async with streamable_http_client(urls["demo"]) as (read, write), ClientSession(read, write) as session:
                await session.discover()
                assert (await session.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
                assert (await session.call_tool("add", {"a": 2, "b": 3})).content[0].text == "5"
                try:
                    await session.call_tool("add", {"a": 2, "b": 4})
                except Exception as exc:  # the SDK's MCPError
                    return str(exc)
                return "answered"

        message = asyncio.run(run())
    finally:
        code, _, err = interrupt(proc)
    assert code == 0, err
    assert "no recorded answer for MCP server 'demo' tool 'add'" in message
    assert 'nearest recorded arguments: {"a": 2, "b": 3}' in message


def test_usage_errors_are_one_line(tmp_path, capsys):
    assert cli.main(["mcp", "mock", str(tmp_path)]) == 2
    assert "is an agent directory: name the recorded turn (--turn N, turn=N)" in capsys.readouterr().err
    assert cli.main(["mcp", "mock", str(tmp_path), "--turn", "1"]) == 2
    assert "no cireil-recordings.db; record a turn first" in capsys.readouterr().err
    (tmp_path / "w.jsonl").write_text(json.dumps({"server": "demo", "method": "x", "request": {"body": {}}}) + "\n")
    assert cli.main(["mcp", "mock", str(tmp_path / "w.jsonl"), "--server", "nope"]) == 2
    assert "no MCP server 'nope'; recorded: 'demo'" in capsys.readouterr().err
    assert cli.main(["mcp", "mock", str(tmp_path / "w.jsonl"), "--port", "70000"]) == 2
    assert "is not a port number" in capsys.readouterr().err


def test_another_host_than_loopback_is_served_with_a_warning(tmp_path):
    export = tmp_path / "w.jsonl"
    cassette = {"format": "cireil-mcp-cassette/1", "servers": {"demo": {"tools": [{"name": "add"}], "calls": []}}}
    export.write_text(json.dumps(cassette))
    env = {**os.environ, "PYTHONPATH": str(Path(cireil.__file__).parent.parent)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cireil", "mcp", "mock", str(export), "--host", "0.0.0.0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    first = proc.stdout.readline()
    code, _, err = interrupt(proc)
    assert first.startswith("demo  http://0.0.0.0:") and code == 0
    assert "warning: serving on 0.0.0.0: the recorded tool results are readable by anyone" in err
