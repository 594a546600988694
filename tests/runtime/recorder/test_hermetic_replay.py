"""Hermetic replay (issue 31): a recorded turn's MCP calls are answered from its cassette when it is replayed,
forked or run as an exported test, with the real MCP server (the official SDK's, on loopback) stopped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import cireil
from cireil.render.replay import ReplayView
from cireil.runtime.base.errors import ConfigError
from cireil.runtime.recorder.portable import pack_turns, unpack_turns
from cireil.runtime.recorder.replay import replay
from cireil.testing.scripted_llm import reply
from mcp_peers.launch import mcp_toml, sdk_server
from turnkit import TURN_TOOLS, turn_agent

SECRET = "hermetic-s3cret-token"  # the header value mcp.toml sends; never needed offline, never written out
ADD = "mcp__demo__add"


def record(tmp_path: Path, llm, url: str) -> tuple[cireil.Agent, object]:
    """An agent whose mcp.toml names the SDK server at `url` with a secret header, and one recorded turn of
    three MCP calls to it, two of them identical."""
    directory = turn_agent(tmp_path, llm.base_url, tools=TURN_TOOLS + f"{ADD} = true\n")
    (directory / "config" / "mcp.toml").write_text(mcp_toml({"demo": url}, headers={"X-Api-Key": SECRET}))
    agent = cireil.load(directory)
    llm.script(
        reply.tool_calls((ADD, {"a": 2, "b": 3})),
        reply.tool_calls((ADD, {"b": 3, "a": 2}), (ADD, {"a": 1, "b": 1})),
        reply.tool_calls(("respond", {"content": "5, 5 and 2"})),
    )
    agent.turn("add some numbers")
    turn = agent.turns()[-1]
    assert [c.result.get("structuredContent") for c in turn.calls[:3]] == [{"result": 5}, {"result": 5}, {"result": 2}]
    return agent, turn


def loopback_only(command: list[str]) -> list[str]:
    """`command` in a network namespace of its own with only loopback up (no route anywhere else)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("unshare or ip is not installed")
    flags = "-n" if os.geteuid() == 0 else "-rn"
    probe = subprocess.run(["unshare", flags, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare {flags} is refused here: {probe.stderr.strip()}")
    return ["unshare", flags, "sh", "-c", 'ip link set lo up && exec "$0" "$@"', *command]


def test_a_replay_answers_mcp_calls_from_the_recording_with_the_server_stopped(tmp_path, llm):
    with sdk_server() as url:
        agent, turn = record(tmp_path, llm, url)
    try:  # the server is gone: a live call would fail "cannot reach"
        assert turn.cassette is not None
        result = agent.replay(turn.id)
        assert result.same, ReplayView(result).text()
        mcp = [c for s in result.steps for c in s.calls if c.name == ADD]
        assert [c.replayed["structuredContent"] for c in mcp] == [{"result": 5}, {"result": 5}, {"result": 2}]
        assert {c.mcp for c in mcp} == {"from recording"}
        assert "[MCP from recording]" in ReplayView(result).text()
        assert "[MCP from recording]" in ReplayView(result).html()
        in_place = agent.replay(turn.id, in_place=True)  # the agent's own MCP connections: the hook answers
        assert in_place.same and {c.mcp for s in in_place.steps for c in s.calls if c.name == ADD} == {"from recording"}
        # asked for live servers, the replay needs them: refused while the server is down, marked "live" after
        with pytest.raises(ConfigError, match="server 'demo': cannot initialize or list tools"):
            agent.replay(turn.id, live_mcp=True)
        with sdk_server(port=urlsplit(url).port):
            live = agent.replay(turn.id, live_mcp=True)
        assert live.same and {c.mcp for s in live.steps for c in s.calls if c.name == ADD} == {"live"}
        assert "[MCP live]" in ReplayView(live).text()
    finally:
        agent.close()


def test_the_exported_test_passes_offline_in_a_loopback_only_network_namespace(tmp_path, llm):
    with sdk_server() as url:
        agent, turn = record(tmp_path, llm, url)
        out = tmp_path / "exported" / "test_adds.py"
        out.parent.mkdir()
        agent.export_test(turn.id, out)
        agent.close()
    text = out.read_text()
    assert SECRET not in text and "X-Api-Key" not in text  # the header stays in mcp.toml
    assert urlsplit(url).netloc not in text.split("CASSETTE =", 1)[1]  # the cassette does not name the server
    assert text.isascii()
    env = {k: v for k, v in os.environ.items() if SECRET not in v}
    env["PYTHONPATH"] = str(Path(cireil.__file__).parent.parent)
    command = [sys.executable, "-m", "pytest", str(out), "-q", "-p", "no:cacheprovider"]
    ran = subprocess.run(loopback_only(command), cwd=out.parent, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "1 passed" in ran.stdout


def test_a_fork_with_edited_arguments_fails_clearly_offline_and_runs_live_when_asked(tmp_path, llm):
    with sdk_server() as url:
        agent, turn = record(tmp_path, llm, url)
    try:
        agent.fork(turn.id, 2, position=1, arguments={"a": 7, "b": 1})
        forked = agent.turns("*")[-1]
        assert forked.session_id.startswith("notebook:fork-")
        calls = [c for c in forked.calls if c.name == ADD]
        assert [c.result.get("structuredContent") for c in calls[:2]] == [{"result": 5}, {"result": 5}]
        error = calls[2].result["error"]
        assert calls[2].result["success"] is False
        assert "'demo'" in error and "'add'" in error and '{"a": 7, "b": 1}' in error
        assert '{"a": 1, "b": 1}' in error  # the nearest recorded arguments
        # the server back where it was: with live_mcp=True the edited call reaches it
        with sdk_server(port=urlsplit(url).port):
            agent.fork(turn.id, 2, position=1, arguments={"a": 7, "b": 1}, live_mcp=True)
            live = [c for c in agent.turns("*")[-1].calls if c.name == ADD]
        assert live[2].arguments == {"a": 7, "b": 1} and live[2].result["structuredContent"] == {"result": 8}
    finally:
        agent.close()


def test_a_turn_recorded_without_a_cassette_runs_only_against_live_servers(tmp_path, llm):
    with sdk_server() as url:
        agent, turn = record(tmp_path, llm, url)
        try:
            (old,) = unpack_turns(pack_turns([turn]))  # no store behind it: no cassette, as before issue 31
            assert old.cassette is None
            with pytest.raises(
                ValueError, match=r"called MCP server\(s\) 'demo' but was recorded before .*live_mcp=True"
            ):
                replay(agent, old)
            with pytest.raises(ValueError, match="live_mcp=True"):
                agent.export_test(old, tmp_path / "test_old.py")
            assert replay(agent, old, live_mcp=True).same  # the live server answers as it did
        finally:
            agent.close()


def test_an_exported_notebook_replays_a_session_of_mcp_turns_with_the_server_stopped(tmp_path, llm):
    import nbformat
    from nbclient import NotebookClient

    with sdk_server() as url:
        agent, _ = record(tmp_path, llm, url)
        llm.script(
            reply.tool_calls((ADD, {"a": 2, "b": 3}), (ADD, {"a": 40, "b": 2})),
            reply.tool_calls(("respond", {"content": "5 and 42"})),
        )
        agent.turn("and again")
        target = tmp_path / "session.ipynb"
        agent.export_notebook(None, target)
        agent.close()
    text = target.read_text()
    assert SECRET not in text and "X-Api-Key" not in text
    served = len(llm.requests)
    nb = nbformat.read(target, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "5, 5 and 2" in outputs and "5 and 42" in outputs
    assert "42" in outputs and "cannot reach" not in outputs and "no recorded answer" not in outputs
    assert len(llm.requests) == served  # the replies came from the notebook's own stand-in
