"""Hermetic replay of a turn with MCP calls: the cassette's size and the replay's time, from the recording
against the live server, in the same run.

    python bench/replay_mcp.py [--runs 10]

A turn of three MCP calls (`add`, two of them identical) to the official SDK's server on loopback is
recorded; then the same turn is replayed `--runs` times each way, interleaved so that machine noise hits
both alike: from its cassette (an McpMock on loopback, the default) and with live_mcp=True against the live
SDK server. Reported: the cassette's JSON bytes (whole, the tools/list part, and per call), and the median
replay time each way with its tool time. Needs the test extra (`mcp`). Servers listen on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import cireil
from cireil.testing.scripted_llm import ScriptedLLM, reply
from mcp_peers.launch import mcp_toml, sdk_server
from turnkit import TURN_TOOLS, turn_agent

ADD = "mcp__demo__add"


def size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, sort_keys=True).encode())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ScriptedLLM() as llm, sdk_server() as url:
        directory = turn_agent(Path(tmp), llm.base_url, tools=TURN_TOOLS + f"{ADD} = true\n")
        (directory / "config" / "mcp.toml").write_text(mcp_toml({"demo": url}))
        agent = cireil.load(directory)
        try:
            llm.script(
                reply.tool_calls((ADD, {"a": 2, "b": 3})),
                reply.tool_calls((ADD, {"a": 2, "b": 3}), (ADD, {"a": 1, "b": 1})),
                reply.tool_calls(("respond", {"content": "5, 5 and 2"})),
            )
            agent.turn("add some numbers")
            turn = agent.turns()[-1]
            cassette = turn.cassette
            if cassette is None:
                print("the turn has no cassette: the recorder did not keep its MCP answers")
                return 1
            servers = cassette["servers"].values()
            calls = [c for s in servers for c in s["calls"]]
            listing = sum(size(s["tools"]) for s in servers)
            recorded, live = [], []
            for _ in range(opts.runs):
                for out, live_mcp in ((recorded, False), (live, True)):
                    result = agent.replay(turn.id, live_mcp=live_mcp)
                    if not result.same:
                        print(f"replay (live_mcp={live_mcp}) differs: {result.summary()}")
                        return 1
                    out.append((result.seconds, result.tool_seconds))
        finally:
            agent.close()

    def ms(runs: list[tuple[float, float]], i: int) -> float:
        return statistics.median(r[i] for r in runs) * 1000

    print(f"cassette of a turn with {len(calls)} MCP calls")
    print(f"  whole                   {size(cassette):7,} bytes of JSON")
    print(f"  tools/list answers      {listing:7,} bytes")
    print(f"  per call                {statistics.mean(size(c) for c in calls):7,.0f} bytes (tool, arguments, answer)")
    print(f"replay, median of {opts.runs} runs each (copy, load, 3 model calls, 3 MCP calls)")
    print(f"  from the recording      {ms(recorded, 0):7.1f} ms   (tools {ms(recorded, 1):6.1f} ms)")
    print(f"  live SDK server         {ms(live, 0):7.1f} ms   (tools {ms(live, 1):6.1f} ms)")
    print(f"  ratio                   {ms(recorded, 0) / ms(live, 0):7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
