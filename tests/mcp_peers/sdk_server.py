"""An MCP server made with the official SDK, for tests, the benchmark and the tutorial.

    python sdk_server.py PORT [--json] [--stateless] [--many N] [--marker FILE] [--collide] [--record FILE]

--many N adds N trivial tools (discovery benchmark); --marker FILE is where the slow tool writes
"cancelled" when the client cancels it, so tests can see a cancel arrive on the wire; --record FILE
appends every HTTP request the server receives to FILE (JSON lines, see recorder.py).
"""

from __future__ import annotations

import asyncio
import base64
import sys
from pathlib import Path
from typing import TypedDict

from mcp.server import MCPServer
from mcp.server.mcpserver import Audio, Context, Image

# A 1x1 PNG: small enough to inline in any result
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)


class Weather(TypedDict):
    city: str
    temperature: int
    tags: list[str]


def build(many: int = 0, marker: str | None = None, collide: bool = False) -> MCPServer:
    mcp = MCPServer("demo", instructions="Demo server: use add for sums.", version="0.1", log_level="WARNING")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @mcp.tool(name="ns.dotted-name")
    def dotted() -> str:
        """Tool whose name has a dot."""
        return "dot"

    @mcp.tool()
    def fail(msg: str) -> str:
        """Always raises, which the server reports as an isError result."""
        raise ValueError(msg)

    @mcp.tool()
    def pixel() -> Image:
        """A tiny image."""
        return Image(data=PNG, format="png")

    @mcp.tool()
    def beep() -> Audio:
        """A (silent) sound."""
        return Audio(data=b"RIFF0000WAVEfmt ", format="wav")

    @mcp.tool()
    def weather(city: str) -> Weather:
        """Structured content: a dict result."""
        return {"city": city, "temperature": 21, "tags": ["mild", "dry"]}

    @mcp.tool()
    async def slow(seconds: float, ctx: Context) -> str:
        """Progress and a log line before the response, then sleeps."""
        await ctx.info("starting slow")
        await ctx.report_progress(0, 1, "begin")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            if marker:
                Path(marker).write_text("cancelled")
            raise
        return f"slept {seconds}"

    if collide:  # two remote names that sanitise to one local name

        @mcp.tool(name="a.b")
        def a_dot() -> str:
            return "dot"

        @mcp.tool(name="a/b")
        def a_slash() -> str:
            return "slash"

    for index in range(many):

        def make(i: int):
            def tool(x: int = 0) -> int:
                return x + i

            return tool

        mcp.tool(name=f"t{index:03d}", description=f"trivial tool {index}")(make(index))
    return mcp


if __name__ == "__main__":
    args = sys.argv[1:]
    port = int(args[0])
    many = int(args[args.index("--many") + 1]) if "--many" in args else 0
    marker = args[args.index("--marker") + 1] if "--marker" in args else None
    server = build(many, marker, "--collide" in args)
    modes = {"json_response": "--json" in args, "stateless_http": "--stateless" in args}
    if "--record" in args:
        import uvicorn
        from recorder import recording  # this script runs with its own folder on sys.path

        app = recording(server.streamable_http_app(host="127.0.0.1", **modes), args[args.index("--record") + 1])
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    else:
        server.run("streamable-http", host="127.0.0.1", port=port, **modes)
