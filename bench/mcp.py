"""MCP tool calls and discovery: our client against the official SDK's client, in the same run.

    python bench/mcp.py [--calls 500] [--tools 200] [--runs 10]

(a) `--calls` sequential tools/call round trips (`add`) against one local SDK server (stateful, SSE
    and JSON response modes), our client and the SDK's `mcp.Client` interleaved call by call so that
    machine noise hits both alike; medians per call and the ratio. Once per protocol era, each client
    in the same era: "2026-07-28" (both clients' default: the probe finds the dual-era server modern)
    and "legacy" (both forced to the initialize handshake, as before the modern revision existed).
    Target: ours at most 0.65x the SDK client's time per call, in every mode. Also the whole tool path (`agent.call`:
    validation, result dict, runtime thread hop; the agent picks its era itself) for scale.
(b) discovery (connect, probe or initialize, list every tool) of a server with `--tools` tools:
    medians of `--runs` fresh connections, ours and the SDK's, per era.
Needs the test extra (`mcp`). Servers listen on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

# This file is named mcp.py: its folder must not shadow the SDK package `mcp` it compares against
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent / "tests"))

import cireil  # noqa: E402
from cireil.runtime.config.mcp_config import McpServer  # noqa: E402
from cireil.runtime.mcp.client import McpClient  # noqa: E402
from mcp_peers.launch import mcp_toml, sdk_server  # noqa: E402

ERAS = {"2026-07-28": "auto", "legacy": "legacy"}  # era -> the SDK client's mode


async def calls(url: str, n: int, era: str) -> tuple[float, float, float, float]:
    """Median wall ms per call, ours and the SDK's; then client CPU ms per call (this process only: the
    server runs in another), ours and the SDK's."""
    from mcp import Client

    ours = McpClient(McpServer("bench", url), probe=era != "legacy")
    await ours.connect()
    ours_ms: list[float] = []
    sdk_ms: list[float] = []
    cpu = [0.0, 0.0]
    async with Client(url, mode=ERAS[era]) as sdk:
        expected = "2025-11-25" if era == "legacy" else era  # both clients really speak the era compared
        assert ours.revision == sdk.protocol_version == expected, (ours.revision, sdk.protocol_version)
        for i in range(10):  # warm-up: connections, caches
            await ours.call_tool("add", {"a": i, "b": 1})
            await sdk.call_tool("add", {"a": i, "b": 1})
        for i in range(n):
            started, cpu_started = time.perf_counter(), time.process_time()
            mine = await ours.call_tool("add", {"a": i, "b": 1})
            ours_ms.append((time.perf_counter() - started) * 1000)
            cpu[0] += time.process_time() - cpu_started
            started, cpu_started = time.perf_counter(), time.process_time()
            theirs = await sdk.call_tool("add", {"a": i, "b": 1})
            sdk_ms.append((time.perf_counter() - started) * 1000)
            cpu[1] += time.process_time() - cpu_started
            assert mine["content"][0]["text"] == theirs.content[0].text == str(i + 1)
    await ours.close()
    return statistics.median(ours_ms), statistics.median(sdk_ms), cpu[0] * 1000 / n, cpu[1] * 1000 / n


def tool_path(url: str, n: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        agent_dir = Path(tmp) / "benchagent"
        (agent_dir / "config").mkdir(parents=True)
        (agent_dir / "config" / "tools.toml").write_text("mcp__bench__add = true\n")
        (agent_dir / "config" / "mcp.toml").write_text(mcp_toml({"bench": url}))
        agent = cireil.load(agent_dir)
        try:
            times = []
            for i in range(n):
                started = time.perf_counter()
                assert agent.call("mcp__bench__add", a=i, b=1).success
                times.append((time.perf_counter() - started) * 1000)
            return statistics.median(times)
        finally:
            agent.close()


async def discovery(url: str, runs: int, expected: int, era: str) -> tuple[float, float]:
    from mcp import Client

    ours_ms, sdk_ms = [], []
    for _ in range(runs):
        started = time.perf_counter()
        client = McpClient(McpServer("bench", url), probe=era != "legacy")
        assert len(await client.connect()) >= expected
        ours_ms.append((time.perf_counter() - started) * 1000)
        await client.close()
        started = time.perf_counter()
        async with Client(url, mode=ERAS[era]) as sdk:
            assert len((await sdk.list_tools()).tools) >= expected
            sdk_ms.append((time.perf_counter() - started) * 1000)
    return statistics.median(ours_ms), statistics.median(sdk_ms)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--tools", type=int, default=200)
    parser.add_argument("--runs", type=int, default=10)
    opts = parser.parse_args()
    import urllib.request

    proxied = any(scheme in urllib.request.getproxies() for scheme in ("http", "https", "all"))
    route = "httpx (proxy settings in the environment)" if proxied else "its own HTTP/1.1 (mcp/h1.py)"
    print(f"cireil's client speaks {route}; the SDK client speaks httpx")
    print(f"(a) {opts.calls} sequential tools/call round trips, ms per call (median)")
    for mode, flags in (("SSE", ()), ("JSON", ("--json",))):
        with sdk_server(*flags) as url:
            path = tool_path(url, min(opts.calls, 200))
            print(f"    {mode} stateful server | agent.call (whole tool path) {path:.2f}")
            for era in ERAS:
                ours, sdk, ours_cpu, sdk_cpu = asyncio.run(calls(url, opts.calls, era))
                verdict = "ok" if ours <= 0.65 * sdk else "MISSED (target <= 0.65x)"
                print(
                    f"      {era:10}  ours {ours:.2f}  SDK client {sdk:.2f}  ratio {ours / sdk:.2f}x  {verdict}"
                    f"  | client CPU per call: ours {ours_cpu:.2f}  SDK {sdk_cpu:.2f}  ratio {ours_cpu / sdk_cpu:.2f}x"
                )
    print("    (client CPU is this process only; the rest of each call is the server's time, the same for both)")
    print(f"(b) discovery of a server with {opts.tools} tools (connect + probe or initialize + list), ms (median)")
    with sdk_server("--many", str(opts.tools)) as url:
        for era in ERAS:
            ours, sdk = asyncio.run(discovery(url, opts.runs, opts.tools, era))
            print(f"    {era:10}  ours {ours:.1f}  SDK client {sdk:.1f}  ratio {ours / sdk:.2f}x")


if __name__ == "__main__":
    main()
