"""Build notebooks/05-mcp-and-plugins.ipynb (run: .venv/bin/python notebooks/make_05_mcp_and_plugins.py)."""

from __future__ import annotations

from pathlib import Path

from nbbuild import code, md, write_notebook

OUT = Path(__file__).resolve().parent / "05-mcp-and-plugins.ipynb"

SERVER = '''\
"""A small MCP server made with the official SDK: three tools, on 127.0.0.1 only."""
import sys
from typing import TypedDict

from mcp.server import MCPServer

mcp = MCPServer("garden", instructions="Garden helper: use forecast before planning a planting day.")


class Forecast(TypedDict):
    city: str
    rain_mm: float
    frost: bool


@mcp.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's weather for a city."""
    return {"city": city, "rain_mm": 2.5, "frost": False}


@mcp.tool(name="beds.count")
def count_beds(rows: int, per_row: int) -> int:
    """How many beds a grid of rows holds."""
    return rows * per_row


def leaf_png(size: int = 64) -> bytes:
    """A green leaf with a vein and a stem, drawn pixel by pixel into a PNG (no imaging library needed)."""
    import struct
    import zlib

    rows = []
    for y in range(size):
        row = bytearray(1)  # filter type 0 (no backslash escapes: this script sits in a string in a cell)
        for x in range(size):
            u, v = 2 * x / size - 1, 2 * y / size - 1
            a, b = (u - v) / 1.45, (u + v) / 1.45  # along and across the leaf, tilted 45 degrees
            blade = abs(a) <= 0.92 and abs(b) <= 0.42 * (1 - (a / 0.92) ** 2)
            vein = blade and abs(b) < 0.025
            stem = -1.05 <= a < -0.9 and abs(b) < 0.03
            pixel = (46, 110, 50, 255) if vein or stem else (88, 170, 72, 255) if blade else (0, 0, 0, 0)
            row += bytes(pixel)
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    pixels = zlib.compress(b"".join(rows))
    signature = bytes([137, 80, 78, 71, 13, 10, 26, 10])
    return signature + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


@mcp.tool()
def leaf():
    """A picture of a leaf."""
    from mcp.server.mcpserver import Image

    return Image(data=leaf_png(), format="png")


mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
'''

# Section 5: what the MCP Inspector is used for, and what a model provider will think of the definitions
LOOKING_CLOSER = [
    md(
        "## 5. Looking closer: the wire, output schemas, lint and what each tool costs\n\n"
        "Every MCP result has a **wire** fold at its end: the HTTP exchange of that call, the JSON-RPC\n"
        "request and the response (or every SSE event), status, headers and timings (connect, first byte,\n"
        "total). `Authorization`, cookies and every header from `mcp.toml` are masked. When the tool declares an\n"
        "`outputSchema`, the view also checks the `structuredContent` against it (the agent's result is\n"
        "never changed by the check). Open the fold:"
    ),
    code('agent.call("mcp__garden__forecast", city="Porto")'),
    md(
        "Each server keeps its last exchanges in memory (a small ring, 64 by default). `%cireil mcp log`\n"
        "shows them, oldest first; `--export FILE` (or `agent.export_mcp_log(path)`) writes them as JSON lines."
    ),
    code("%cireil mcp log garden --limit 3"),
    code(
        "import json\n\n"
        'count = agent.export_mcp_log(root / "wire.jsonl")\n'
        'first = json.loads((root / "wire.jsonl").read_text().splitlines()[0])\n'
        'count, first["method"], first["timings_ms"]'
    ),
    md(
        "`%cireil mcp` shows each server: URL, negotiated revision, session, capabilities, instructions,\n"
        "how many tools it listed and its last errors, with a **Reconnect** button (a new connection; the\n"
        "tool definitions stay as discovered until `%cireil restart`)."
    ),
    code("%cireil mcp garden"),
    md(
        "Every request to the model carries every enabled tool's definition again. `%cireil tools` shows\n"
        "what each one adds (the engine's own token estimate of the exact JSON sent) and the total;\n"
        "`--lint` checks the definitions for what model providers reject (OpenAI: descriptions over 1,024\n"
        "characters, names with dots, schemas that are not objects...) and what makes models call a tool\n"
        "wrongly (untyped or undescribed parameters, `required` naming a parameter that does not exist, enum\n"
        "values of the wrong type). Findings are advice: the agent stays valid. `cireil dry-run` and\n"
        "`%cireil dry-run` report them too. Only the agent's own, plugin and MCP tools are checked by\n"
        "default: cireil's built-in tools send the original CireilClaw's definitions as they are, so their\n"
        "findings are nothing you could fix (add `--builtins` to see them)."
    ),
    code("%cireil tools --lint"),
    md(
        "Every call you make from a form, a magic or Python is kept for this kernel: each tool's form lists\n"
        "its earlier calls, and one click refills the form to run again with an edit. From Python:"
    ),
    code('[(c.when, c.arguments, c.summary) for c in agent.calls("mcp__garden__forecast")]'),
]

CELLS = [
    md(
        "# External tools: MCP servers and plugins\n\n"
        "Most tools an agent uses come from outside. An **MCP server** offers tools over HTTP (the\n"
        "*Streamable HTTP* transport); a **plugin** is a Python package or folder that adds tools.\n"
        "Either way they become ordinary tools here: each gets its `%cireil_<name>` magic and its form,\n"
        "and must be enabled in `config/tools.toml` by name.\n\n"
        "In this tutorial you will start a small MCP server, point an agent at it, check the configuration\n"
        "with a dry-run, call a remote tool by magic and by form, look at the content blocks it returned,\n"
        "and then load the example plugin."
    ),
    md(
        "## 1. A small MCP server\n\n"
        "This server is made with the official `mcp` SDK and listens on the loopback interface only. It has\n"
        "three tools: `forecast` (structured content), `beds.count` (a name with a dot) and `leaf` (an image)."
    ),
    code(
        "import socket\nimport subprocess\nimport sys\nimport time\nfrom pathlib import Path\n\n"
        "from cireil.runtime.base.scratch import scratch_dir\n\n"
        f"SERVER = '''\\\n{SERVER}'''\n\n"
        "# a runtime root (agents/, plugins/, config/), removed when this kernel ends, however it ends\n"
        'root = scratch_dir("cireil-tutorial-")\n'
        'server_py = root / "garden_server.py"\n'
        "server_py.write_text(SERVER)\n\n"
        "with socket.socket() as s:\n"
        '    s.bind(("127.0.0.1", 0))\n'
        "    port = s.getsockname()[1]\n"
        'quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}\n'
        "server = subprocess.Popen([sys.executable, str(server_py), str(port)], **quiet)\n"
        "for _ in range(200):  # wait until it accepts connections\n"
        "    try:\n"
        '        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()\n'
        "        break\n"
        "    except OSError:\n"
        "        time.sleep(0.05)\n"
        'url = f"http://127.0.0.1:{port}/mcp"\n'
        "url"
    ),
    md(
        "## 2. Tell an agent about it: `config/mcp.toml`\n\n"
        "Each server is a `[servers.<name>]` table with a `url` and an optional `timeout` in milliseconds\n"
        "(it covers connecting and listing the tools, and separately each call). Static headers — an\n"
        "`Authorization` token, say — go in `[servers.<name>.headers]`; headers the transport owns are refused.\n\n"
        "**Only configure servers you trust** with whatever the agent passes to their tools. Calls go from this\n"
        "kernel straight to the server, not through the exec sandbox, and enabling a tool gives the agent its\n"
        "remote effects. An `mcp.toml` holding secrets (a header, a token in the URL) is a **credential file**:\n"
        "keep it private (`chmod 600 config/mcp.toml`); loading warns, naming the file, when others can read it."
    ),
    code(
        "from cireil.runtime.scaffold import init\n\n"
        'agent_dir = init(root / "agents" / "garden")\n'
        '(agent_dir / "config" / "mcp.toml").write_text(f"""\\\n'
        "[servers.garden]\n"
        'url = "{url}"\n'
        "timeout = 10000\n"
        '""")\n'
        'print((agent_dir / "config" / "mcp.toml").read_text())'
    ),
    md(
        "## 3. Enable a remote tool\n\n"
        "Remote tools are named `mcp__<server>__<tool>`; characters other than letters, digits, `-` and `_`\n"
        "become `_` (so `beds.count` is `mcp__garden__beds_count`), while calls still use the remote name.\n"
        "Like every tool, they are enabled by name in `config/tools.toml`."
    ),
    code(
        'tools_toml = agent_dir / "config" / "tools.toml"\n'
        '_ = tools_toml.write_text(tools_toml.read_text() + """\n'
        "mcp__garden__forecast = true\n"
        "mcp__garden__beds_count = true\n"
        "mcp__garden__leaf = true\n"
        '""")'
    ),
    md(
        "A dry-run connects, initializes and lists the server's tools — without calling any — and checks\n"
        "every name in tools.toml against them. A wrong URL, a server that is down, a redirect or a tool the\n"
        "server does not offer shows up here, at its line:"
    ),
    code("%load_ext cireil\n%cireil dry-run $agent_dir"),
    code(
        'tools_toml.write_text(tools_toml.read_text() + "mcp__garden__forcast = false\\n")\n%cireil dry-run $agent_dir'
    ),
    code(
        'tools_toml.write_text(tools_toml.read_text().replace("mcp__garden__forcast = false\\n", ""))\n'
        "%cireil load $agent_dir\n"
        "%cireil tools"
    ),
    md(
        "The *origin* column says where each tool comes from; for an MCP tool it also names the protocol\n"
        "revision its server speaks (`2026-07-28` when the server answers the modern probe, otherwise the\n"
        "older handshake's version). The parameters are the server's own `inputSchema`, passed on as is;\n"
        "the description carries the server's instructions."
    ),
    code(
        "import cireil\n\n"
        "agent = cireil.current_agent()\n"
        'forecast = agent.tool("mcp__garden__forecast")\n'
        "print(forecast.description)\n"
        "forecast.parameters"
    ),
    md("## 4. Call it: by magic, by form"),
    code("%cireil_mcp__garden__forecast city=Lisbon"),
    md(
        "The view shows each content block (text as text, images inline, resource links as links) and the\n"
        "`structuredContent` as a collapsible tree. The result the agent gets is the JSON underneath:"
    ),
    code('r = agent.call("mcp__garden__forecast", city="Lisbon")\nr.data'),
    code("%cireil_mcp__garden__leaf"),
    md(
        "The form is built from the remote schema. Fill it in and press **Run** (here the cell fills it in\n"
        "and presses Run itself, so that the tutorial also runs headless)."
    ),
    code(
        "from cireil.kernel.forms.toolform import tool_form\n\n"
        'form = tool_form(agent, "mcp__garden__beds_count")\n'
        'form.fields["rows"].control.value = 4\n'
        'form.fields["per_row"].control.value = 6\n'
        "form.run_button.click()\n"
        "form.wait(10)\n"
        "form"
    ),
    code('form.last_call.result(0)["content"]'),
    md(
        "A failure on the server side (`isError`) is a failed result with the server's content blocks; a\n"
        "network or protocol failure is a failed result too. Neither raises in your cell:"
    ),
    code('agent.call("mcp__garden__beds_count", rows="four", per_row=6)'),
    md(
        "A **timeout** is different from a refusal: the call failed here, but that does not prove the server\n"
        "did nothing. It may have carried the call out after the deadline, so the error and its hint say so.\n"
        "Check the remote state before calling again, above all for tools that change something."
    ),
    md(
        "Tool definitions stay as discovered until `%cireil restart`: edits to `mcp.toml`, or a server that\n"
        "changes its tools, need a restart, which connects and discovers again."
    ),
    code("%cireil restart"),
    *LOOKING_CLOSER,
    md(
        "## 6. Plugins\n\n"
        "A plugin is Python: a package that exposes a `cireil.plugin.Plugin` through the entry point group\n"
        "`cireil.plugins`, or a folder under the runtime root's `plugins/`. The runtime root's\n"
        "`config/plugins.toml` lists them (`name = ...` for a folder, `package = ...` for an entry point).\n"
        "The example plugin in this repository adds a `word-count` tool and an outline extractor for Org files.\n"
        "Here it is copied in as a local folder:"
    ),
    code(
        "import shutil\n\n"
        'example = Path("..", "examples", "plugins", "cireil-example-plugin", "cireil_example_plugin").resolve()\n'
        'shutil.copytree(example, root / "plugins" / "cireil_example_plugin")\n'
        '(root / "config").mkdir(exist_ok=True)\n'
        '(root / "config" / "plugins.toml").write_text(\'[[plugins]]\\nname = "cireil_example_plugin"\\n\')\n'
        'tools_toml.write_text(tools_toml.read_text() + "word-count = true\\n")\n'
        "%cireil restart\n"
        "%cireil tools"
    ),
    code("%cireil_word_count 'Plant beans after the last frost.'"),
    md(
        "A plugin tool that has the name of a built-in is refused unless its entry says\n"
        "`allowOverride = true`; two plugins never share a tool name, and no plugin or Python tool may take an\n"
        "MCP tool's name (the `mcp__` prefix is reserved); a plugin that fails to import is\n"
        "reported with its name and the error, at its line in `plugins.toml`.\n\n"
        "Finally, stop the server. Loading another agent (or closing this one) closes its MCP sessions."
    ),
    code("agent.close()\nserver.terminate()\n_ = server.wait()"),
]


if __name__ == "__main__":
    write_notebook(OUT, CELLS)
