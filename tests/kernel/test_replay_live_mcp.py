"""`%cireil replay` of a turn with MCP calls (issue 31): answered from the recording with the server stopped,
from the live server with --live-mcp; the view says which for each call. `export test --live-mcp` too."""

from __future__ import annotations

from urllib.parse import urlsplit

from cireil.testing.scripted_llm import reply
from magicshell import loaded, run
from mcp_peers.launch import mcp_toml, sdk_server
from turnkit import TURN_TOOLS, turn_agent

ADD = "mcp__demo__add"


def test_replay_serves_mcp_from_the_recording_unless_live_mcp(tmp_path, llm, shell):
    agent = turn_agent(tmp_path, llm.base_url, tools=TURN_TOOLS + f"{ADD} = true\n")
    with sdk_server() as url:
        (agent / "config" / "mcp.toml").write_text(mcp_toml({"demo": url}))
        loaded(shell, agent)
        llm.script(
            reply.tool_calls((ADD, {"a": 2, "b": 3}), (ADD, {"a": 2, "b": 3})),
            reply.tool_calls(("respond", {"content": "5"})),
        )
        run(shell, "%%cireil_agent\nadd 2 and 3, twice")
    text = run(shell, "%cireil replay").text  # the server is stopped
    assert "every tool result as recorded" in text and text.count("[MCP from recording]") == 2
    failed = run(shell, "%cireil replay --live-mcp", ok=False)
    assert "cannot initialize or list tools" in str(failed.error)
    with sdk_server(port=urlsplit(url).port):
        text = run(shell, "%cireil replay --live-mcp").text
    assert "every tool result as recorded" in text and text.count("[MCP live]") == 2
    run(shell, f"%cireil export test 1 {tmp_path / 'test_offline.py'}")
    run(shell, f"%cireil export test 1 {tmp_path / 'test_live.py'} --live-mcp")
    assert "LIVE_MCP = False" in (tmp_path / "test_offline.py").read_text()
    assert "LIVE_MCP = True" in (tmp_path / "test_live.py").read_text()
