"""Build notebooks/08-turn-recorder.ipynb (run: .venv/bin/python notebooks/make_08_turn_recorder.py)."""

from __future__ import annotations

from pathlib import Path

from nbbuild import code, md, write_notebook

OUT = Path(__file__).resolve().parent / "08-turn-recorder.ipynb"

GARDEN = '''\
"""A small MCP server made with the official SDK, on 127.0.0.1 only."""
import sys

from mcp.server import MCPServer

mcp = MCPServer("garden")


@mcp.tool()
def forecast(city: str) -> dict:
    """Tomorrow's rain for a city, in millimetres."""
    return {"city": city, "rain_mm": {"Porto": 2.5, "Lisbon": 0.0}.get(city, 1.0)}


mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
'''

# Section 7: a turn with MCP calls replayed, exported and mocked after its server is gone
MCP_SECTION = [
    md(
        "## 7. MCP calls, replayed from the recording\n\n"
        "A turn that called an MCP server keeps that server's answers in the recording too (its **cassette**:\n"
        "the tools it listed and every call with its answer, secrets masked). Replays, forks and exported tests\n"
        "answer MCP calls from it, so they need neither the server, nor the network, nor the `mcp.toml` token,\n"
        "and never act twice (a ticket filed twice). A call the recording has no answer for fails, naming the\n"
        "nearest recorded one; `--live-mcp` (`live_mcp=True`) calls the live servers instead.\n\n"
        "Start a small MCP server (as in tutorial 05), point the agent at it with a secret header, and run a\n"
        "turn that calls it three times:"
    ),
    code(
        "import socket\nimport time\n\n"
        "from cireil.runtime.base.scratch import scratch_dir  # removed when the kernel ends, however it ends\n\n"
        f"GARDEN = '''\\\n{GARDEN}'''\n\n"
        'server_py = scratch_dir("cireil-tutorial-") / "garden_server.py"\n'
        "server_py.write_text(GARDEN)\n"
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
        '(agent.directory / "config" / "mcp.toml").write_text(\n'
        "    f'[servers.garden]\\nurl = \"http://127.0.0.1:{port}/mcp\"\\n'\n"
        "    '[servers.garden.headers]\\nAuthorization = \"Bearer garden-secret-token\"\\n'\n"
        ")\n"
        'with open(agent.directory / "config" / "tools.toml", "a") as tools:\n'
        '    tools.write("mcp__garden__forecast = true\\n")\n'
        "%cireil restart\n"
        "agent = cireil.current_agent()\n"
        'porto = ("mcp__garden__forecast", {"city": "Porto"})\n'
        "llm.script(\n"
        "    reply.tool_calls(porto),\n"
        '    reply.tool_calls(porto, ("mcp__garden__forecast", {"city": "Lisbon"})),\n'
        '    reply.tool_calls(("respond", {"content": "Rain in Porto (2.5 mm), none in Lisbon."})),\n'
        ")"
    ),
    code("%%cireil_agent\nWill it rain tomorrow in Porto or Lisbon?"),
    md(
        "Now stop the server, and replay the turn: each MCP call is marked **from recording**, and every\n"
        "result is as recorded. The exported test carries the cassette and serves it itself on `127.0.0.1`:\n"
        "it passes with the server gone (in CI: with the network off and no token set)."
    ),
    code("server.terminate()\nserver.wait()\nturn_id = agent.turns()[-1].id\n%cireil replay $turn_id"),
    code(
        'mcp_test = scratch_dir("cireil-tutorial-") / "test_forecast_turn.py"\n'
        "agent.export_test(turn_id, mcp_test)\n"
        'print("token in the test file:", "garden-secret-token" in mcp_test.read_text())\n'
        "pytest(mcp_test)"
    ),
    md(
        "The recording also works as a **mock MCP server** any MCP client can use — a server author's CI, the\n"
        "MCP Inspector, or here the official SDK's client: `cireil.mcp_mock(AGENT_DIR, turn=N)` serves the\n"
        "turn's recorded tools and answers on loopback (`cireil mcp mock AGENT_DIR --turn N` from a shell). An\n"
        "unrecorded call gets an error saying what was recorded."
    ),
    code(
        "from mcp.client.session import ClientSession\n"
        "from mcp.client.streamable_http import streamable_http_client\n"
        "from mcp.shared.exceptions import MCPError\n\n"
        "with cireil.mcp_mock(agent.directory, turn=turn_id) as url:\n"
        "    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:\n"
        "        await session.initialize()\n"
        '        print("tools:", [t.name for t in (await session.list_tools()).tools])\n'
        '        answer = await session.call_tool("forecast", {"city": "Porto"})\n'
        '        print("Porto:", answer.content[0].text)\n'
        "        try:\n"
        '            await session.call_tool("forecast", {"city": "Oslo"})\n'
        "        except MCPError as exc:\n"
        '            print("Oslo:", exc.error.message)'
    ),
]

CELLS = [
    md(
        "# The turn recorder: what the model saw, replayed offline, kept as a test\n\n"
        "A bad agent turn is usually seen once: the model is not deterministic, and every retry is a paid call.\n"
        "cireil records every model call of every turn — the exact request body, the reply, the timings, each\n"
        "tool call with its result — in the agent's own `cireil-recordings.db`. In this tutorial you will\n\n"
        "1. run a turn and look at each of its model calls, with a **diff** against the call before;\n"
        "2. see the tokens, time and cost of your turns;\n"
        "3. **replay** the turn offline, with no key and no network, and see what changed;\n"
        "4. **export** it as a pytest file that fails when the agent's tools stop behaving as recorded;\n"
        "5. **fork** it from a step with an edited call, and step through a turn from Python;\n"
        "6. replay a turn that called an **MCP server** after the server is gone, and serve its recording as a\n"
        "   mock MCP server;\n"
        "7. step through a turn with **buttons**: approve, edit, skip or mock each tool call.\n\n"
        "As in tutorial 06, the model is a scripted stand-in on `127.0.0.1`, so this runs anywhere."
    ),
    code(
        "%load_ext cireil\n"
        "%cireil load --demo\n\n"
        "import cireil\n"
        "from cireil.testing.demo_model import wren\n"
        "from cireil.testing.scripted_llm import ScriptedLLM, reply\n\n"
        "llm = ScriptedLLM(default=wren).start()\n"
        "agent = cireil.current_agent()\n"
        'engine_toml = agent.directory / "config" / "engine.toml"\n'
        "engine_toml.write_text(f'''\n"
        "[local]\n"
        'apiBase = "{llm.base_url}"\n'
        'defaultModel = "wren-scripted"\n'
        "isGlobalDefault = true\n"
        "''')\n"
        "print(engine_toml.read_text())"
    ),
    md(
        "## 1. A turn that goes a little wrong\n\n"
        "We script the model's five replies: it reads the committee notes, then tries three times to read\n"
        "minutes that do not exist. After three failures in a row the runtime's **breaker** takes `read` away\n"
        "for the rest of the turn and tells the model, which then answers.\n\n"
        "Under the turn's footer, **model calls (5)** lists each call: tokens in and out, time to the first\n"
        "token, latency and what the model called. Open one: it folds out to the diff against the call before,\n"
        "the request exactly as POSTed, and the reply as the model sent it."
    ),
    code(
        'missing = ("read", {"path": "/workspace/minutes.md"})\n'
        "llm.script(\n"
        '    reply.tool_calls(("read", {"path": "/workspace/notes.txt"}), reasoning="Read the notes first."),\n'
        "    reply.tool_calls(missing),\n"
        "    reply.tool_calls(missing),\n"
        "    reply.tool_calls(missing),\n"
        '    reply.tool_calls(("respond", {"content": "Your notes list five points; I found no minutes file."})),\n'
        ")"
    ),
    code("%%cireil_agent\nSummarise the committee notes and the minutes."),
    md(
        "The same data from Python: `agent.turns()` lists the session's recorded turns, each with its `steps`.\n"
        "A step's `request` is the body exactly as it was sent, `reply` what came back, and `diff(prev)` what\n"
        "changed in between — messages added, messages that left the window, tool results stubbed by pruning,\n"
        "opened files re-rendered, tools the breaker disabled, and the metadata message that changes every call."
    ),
    code(
        "turn = agent.turns()[-1]\n"
        "for step in turn.steps:\n"
        '    print(f"step {step.n}: {step.tokens_in} in / {step.tokens_out} out, {step.latency * 1000:.0f} ms,",\n'
        '          [c["name"] for c in step.tool_calls])\n'
        "print()\n"
        'print("what changed before the last call:")\n'
        "print(turn.steps[-1].diff(turn.steps[-2]))"
    ),
    code(
        "last = turn.steps[-1].request\n"
        'print(len(last["messages"]), "messages,", len(last["tools"]), "tools offered;",\n'
        '      "read offered:", any(t["function"]["name"] == "read" for t in last["tools"]))'
    ),
    md(
        "Identical messages are stored once: every call of a turn re-sends the whole conversation, but the\n"
        "recording keeps each message a single time and a step keeps only references. The oldest turns are\n"
        "evicted beyond a limit you set in `config/cireil.toml`, cireil's own settings file (the original\n"
        "CireilClaw runtime never reads it)."
    ),
    md(
        "## 2. What did it cost?\n\n"
        "`%cireil usage` totals the recorded turns of the session (`--all`: every session). Give it prices, in\n"
        "USD per million tokens, and it shows the cost too:"
    ),
    code(
        '(agent.directory / "config" / "cireil.toml").write_text(\n'
        '    "[recording]\\nmax_turns = 500\\n\\n"\n'
        "    '[prices.\"wren-scripted\"]\\ninput = 0.15\\noutput = 0.60\\n'\n"
        ")\n"
        "%reload_ext cireil\n"
        "%cireil load $agent.directory\n"
        "agent = cireil.current_agent()"
    ),
    code("%cireil usage"),
    md(
        "`%cireil prompt --diff` compares the request the *next* call would send with the last one sent: here,\n"
        "the turn's last reply and its result are new, and `read` is offered again (the breaker lasts one turn)."
    ),
    code("%cireil prompt --diff"),
    md(
        "## 3. Replay it offline\n\n"
        "`%cireil replay` runs the recorded turn again: the stand-in serves the **recorded** replies, and the\n"
        "tools run for real on a throwaway copy of the agent (`--in-place` runs them on the agent itself). No\n"
        "key, no network, no cost. Every tool result is compared with the recording:"
    ),
    code("%cireil replay"),
    md(
        "Now change what the agent reads, and replay again: the step whose result differs is marked, with both results."
    ),
    code(
        'notes = agent.directory / "workspace" / "notes.txt"\n'
        "original = notes.read_text()\n"
        'notes.write_text(original + "- Shed roof leaks again; Ed has a tarp.\\n")\n'
        "%cireil replay"
    ),
    md(
        "A recorded call that the agent's tools no longer accept — the tool was switched off in `tools.toml`,\n"
        "or its arguments changed shape — is named at the top of the replay instead of failing somewhere inside."
    ),
    md(
        "## 4. Keep the turn as a test\n\n"
        "`%cireil export test TURN PATH.py` writes a pytest file holding the recorded replies and results. It\n"
        "replays them the same way and asserts the sequence of tool calls, each call's success, and the result\n"
        "fields you pick with `--fields` (`read.content`: the `content` of every `read` result). It runs with\n"
        "plain pytest, so it can live in your CI next to the agent."
    ),
    code(
        "import subprocess\n"
        "import sys\n\n"
        "from cireil.runtime.base.scratch import scratch_dir  # removed when the kernel ends, however it ends\n\n"
        "notes.write_text(original)  # back to what the turn saw\n"
        'test_file = scratch_dir("cireil-tutorial-") / "test_committee_turn.py"\n'
        "turn_id = agent.turns()[-1].id\n"
        "%cireil export test $turn_id $test_file --fields read.content\n\n\n"
        "def pytest(path):\n"
        '    command = [sys.executable, "-m", "pytest", str(path), "-q", "--color=no", "-p", "no:cacheprovider"]\n'
        "    run = subprocess.run(command, capture_output=True, text=True)\n"
        "    lines = run.stdout.splitlines()\n"
        '    wanted = ("AssertionError", " passed", " failed")\n'
        '    print("\\n".join(line for line in lines if any(w in line for w in wanted)))\n\n\n'
        "pytest(test_file)"
    ),
    md("Change the notes again, as a change to a tool or to the workspace would, and the test says what broke:"),
    code(
        'notes.write_text(original.replace("five", "six") + "- A new line the turn never saw.\\n")\npytest(test_file)'
    ),
    md(
        "## 5. Fork from a step\n\n"
        "What if the model had read the right file at step 2? `%cireil fork TURN STEP` continues the recorded\n"
        "turn from that step in a **new session** (`notebook:fork-<turn>-<step>`) that starts from the history\n"
        "the turn saw: `--args` edits what the step's call asks for, `--result` gives the model another result\n"
        "instead of running it. The replies up to the step come from the recording; after it, the recorded\n"
        "replies go on (offline), or with `--live` the model takes over — here the stand-in, which now reads\n"
        "the substituted minutes and answers. The fork is recorded, linked to its origin; the original\n"
        "recording stays as it was."
    ),
    code(
        "notes.write_text(original)\n"
        "# turn 1 is the turn above (%cireil usage lists them); a magic line with JSON takes no $variables\n"
        "%cireil fork 1 2 --live --result "
        '\'{"path": "/workspace/minutes.md", "content": "Roof fixed.", "success": true}\''
    ),
    code(
        'fork = agent.turns("*")[-1]\n'
        'print(fork.session_id, "forked from", fork.origin)\n'
        "print([(c.name, c.success) for c in fork.calls])"
    ),
    md(
        "## 6. Step through a turn from Python\n\n"
        "`on_tool_call` is asked before each tool call of a turn: return `None` to let it run, or a\n"
        "`ToolDecision` to edit its arguments, skip it, or mock its result."
    ),
    code(
        "from cireil.runtime.engine.toolhook import ToolDecision\n\n\n"
        "def review(call, step):\n"
        "    print(f\"step {step}: {call['name']} {call['input']}\")\n"
        '    if call["name"] == "list-dir":\n'
        '        return ToolDecision.mock({"entries": [{"name": "only-this.md", "type": "file"}], "success": True})\n'
        "    return None\n\n\n"
        'outcome = agent.turn("What files are in my workspace?", on_tool_call=review)\n'
        "print(outcome.text)"
    ),
    *MCP_SECTION,
    md(
        "## 8. Step through a turn with buttons\n\n"
        "`%%cireil_agent --step` does the same in the notebook: the turn pauses before each tool call and shows\n"
        "what the model asks for, with four buttons:\n\n"
        "- **Approve** runs the call as the model asked;\n"
        "- **Edit arguments** opens a form built from the tool's schema, filled in with the model's arguments;\n"
        "  **Run with these arguments** runs it once the tool accepts them (a wrong value is named, and the call\n"
        "  keeps waiting);\n"
        "- **Skip** does not run it, and the model is told so;\n"
        "- **Mock result** gives the model your text instead of running the call (a JSON object as written,\n"
        '  other text as `{"result": …}`).\n\n'
        "The cell returns at once and the turn goes on below it as you click: a cell that waited for a click\n"
        "would never get it, since the kernel handles clicks only between cells. Here the model will write a\n"
        "to-do list and then answer."
    ),
    code(
        "llm.script(\n"
        '    reply.tool_calls(("write", {"path": "/workspace/todo.md", "content": "- water the beans\\n"})),\n'
        '    reply.tool_calls(("respond", {"content": "Your to-do list is in /workspace/todo.md."})),\n'
        ")"
    ),
    code("%%cireil_agent --step\nPut watering the beans on my to-do list."),
    md(
        "Click **Edit arguments**, add a line `- sow the radishes` to `content`, and press **Run with these\n"
        "arguments**; then **Approve** the `respond` call. **Stop turn** — or `%cireil stop`, or interrupting\n"
        "the kernel (■) while the turn waits — ends it instead, storing nothing of it, as any interrupted\n"
        "turn.\n\n"
        "Then run the next cell. Its `%cireil stop` ends the turn if it is still waiting (after *Run All* nobody\n"
        "has clicked yet), and `%cireil steps` shows the recording, which keeps what you did: the call is marked\n"
        "`write (edited)`, and it folds open to the arguments the model asked for and the ones it ran with. A\n"
        "replay does the same again: the edited call runs with your arguments, a skipped or mocked call gives\n"
        "the model the recorded result."
    ),
    code("%cireil stop\n%cireil steps"),
    code("llm.stop()"),
]


if __name__ == "__main__":
    write_notebook(OUT, CELLS)
