"""Build notebooks/06-agent-turns.ipynb (run: .venv/bin/python notebooks/make_06_agent_turns.py)."""

from __future__ import annotations

from pathlib import Path

from nbbuild import code, md, write_notebook

OUT = Path(__file__).resolve().parent / "06-agent-turns.ipynb"

CELLS = [
    md(
        "# Agent turns: talk to the agent and watch what it does\n\n"
        "Until now you called the agent's tools yourself. In this tutorial the agent calls them: you send it a\n"
        "message from a cell, and its **turn** renders live below the cell — every tool call with its arguments\n"
        "and its result (the same views as the magics), what it says to you as chat bubbles, and the token usage\n"
        "at the end. You will also look at exactly what the model was sent, switch between sessions, and see\n"
        "that a conversation survives a restart.\n\n"
        "A turn needs a model. So that this notebook runs anywhere (and in CI) without a network or an API key,\n"
        "it talks to a **scripted stand-in**: a small local server that speaks the OpenAI chat-completions\n"
        "protocol and answers with simple rules. Section 6 shows how to point the agent at a real model."
    ),
    code("%load_ext cireil\n%cireil load --demo"),
    md(
        "## 1. Start the stand-in model\n\n"
        "`ScriptedLLM` is an OpenAI-compatible server on `127.0.0.1`; `cireil.testing.demo_model.wren` is the rule\n"
        "book it answers with (it lists files when you mention the workspace, reads the volunteer list, schedules\n"
        "reminders...). The agent's `config/engine.toml` says which endpoint and model its turns use; the next\n"
        "cell points this throwaway demo copy at the stand-in."
    ),
    code(
        "import cireil\n"
        "from cireil.testing.demo_model import wren\n"
        "from cireil.testing.scripted_llm import ScriptedLLM\n\n"
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
        "## 2. Send a message\n\n"
        "`%%cireil_agent` sends the cell as your message. Watch the turn: the agent calls `list-dir`, gets its\n"
        "result (shown by list-dir's own view), then calls `respond` — the only way its words reach you — and the\n"
        "turn ends. The footer says how it ended, how many model calls it took and the tokens used."
    ),
    code("%%cireil_agent\nWhat files are in my workspace?"),
    code("%%cireil_agent\nWho are our volunteers?"),
    md(
        "Every tool result in the turn is the same object a magic returns, so actions work here too (an edit\n"
        "preview's Apply button, an outline's open buttons). A reaction lands on your message:"
    ),
    code("%%cireil_agent\nThanks, that is helpful!"),
    md(
        "## 3. What exactly did the model see?\n\n"
        "`%cireil prompt` shows the request the **next** model call would send, part by part and folded: the\n"
        "system prompt (core.md, the memory blocks, the skills, the session's metadata), every message of the\n"
        "history, the opened files, the metadata message with the date and context usage, every tool schema,\n"
        "and the JSON body as it would be POSTed. Nothing is summarised: what you see is what is sent."
    ),
    code("# the request the next model call would send\n%cireil prompt"),
    md("The stand-in records every request it received, so you can also check what was really sent:"),
    code(
        "last = llm.requests[-1].body\n"
        'print("model:", last["model"], "| tool_choice:", last["tool_choice"], "| tools:", len(last["tools"]))\n'
        'for m in last["messages"]:\n'
        '    calls = [c["function"]["name"] for c in m.get("tool_calls", [])]\n'
        '    text = m.get("content") if isinstance(m.get("content"), str) else str(m.get("content") or calls)\n'
        "    print(f\"{m['role']:>9}: {text[:90]!r}\")"
    ),
    md(
        "## 4. Sessions\n\n"
        "Every conversation is a **session**, kept in the agent's `sessions.db` (SQLite, in the original\n"
        "CireilClaw runtime's format, so the agent can go back to it). Cells use\n"
        "`notebook:main` unless you name another: `--session NAME` (or `%cireil session NAME`) switches.\n"
        "The agent can look at its sessions too, with read-session, list-sessions and query-sessions."
    ),
    code("%%cireil_agent --session planning\nRemind me to water the seedlings"),
    md(
        "The agent scheduled a one-shot job two seconds from now. When it fires, it runs a turn of its own in an\n"
        "internal session (`cron:demo:water-seedlings`), and what it says is announced back to this session.\n"
        "Announcements made while no cell was watching are shown by the next `%cireil` command:"
    ),
    code("import time\n\ntime.sleep(4)\n%cireil sessions"),
    code("%cireil session main"),
    code("%cireil_query_sessions volunteers mode=raw"),
    md(
        "Files go along with a message too: `%cireil attach` shows an upload button, and what you pick there\n"
        "travels with your next `%%cireil_agent` message (or name files on the magic line: `--attach PATH`).\n"
        "cireil keeps them in its own `cireil-side.db` beside `sessions.db`; the agent saves them into its\n"
        "sandbox with download-attachments. Pick a file with the button (any small file), then run the cell after it."
    ),
    code("# pick files here: they go with the next message\n%cireil attach"),
    code(
        "# without a browser (as when CI runs this notebook) nothing was picked: attach a file by path instead\n"
        "from cireil.kernel.magics.agent import STAGED\n\n"
        "picked = bool(STAGED.get(id(get_ipython())))\n"
        'extra = "" if picked else f"--attach {agent.directory}/workspace/notes.txt"'
    ),
    code("%%cireil_agent $extra\nPlease save the attached file."),
    md(
        "## 5. The conversation survives a restart\n\n"
        "Sessions live on disk, not in the kernel. Reloading the extension drops everything in memory (the agent,\n"
        "its sessions, the runtime thread); loading the same agent directory again reads the conversation back\n"
        "from `sessions.db`. A real kernel restart (Kernel → Restart) does the same — start the stand-in again\n"
        "first, then `%cireil load` the directory printed below."
    ),
    code("directory = agent.directory\nprint(directory)\n%reload_ext cireil\n%cireil load $directory\n%cireil session"),
    code("%%cireil_agent\nDid we talk about volunteers earlier?"),
    md(
        "## 6. Pointing the agent at a real model\n\n"
        "Any OpenAI-compatible chat-completions endpoint works (OpenAI, OpenRouter, a local llama.cpp, vLLM or\n"
        "Ollama server). Edit the agent's `config/engine.toml` — the demo agent ships with this one, its key a\n"
        "placeholder:\n\n"
        "```toml\n"
        "[default]                             # every top-level table is a provider\n"
        'kind = "openai"\n'
        'apiBase = "https://api.openai.com/v1"\n'
        'apiKey = "sk-..."                     # or a list of keys, taken in turn\n'
        'defaultModel = "gpt-4o-mini"\n'
        "isGlobalDefault = true                # exactly one provider is the default\n\n"
        '[default.models."gpt-4o-mini"]\n'
        "contextWindow = 128000                # enables budget-based pruning of old turns\n"
        "```\n\n"
        "This is the original CireilClaw's own format, so the agent runs there too. To keep the secret out of\n"
        'the file, cireil also accepts `apiKey = { env = "OPENAI_API_KEY" }` (read from the kernel\'s environment\n'
        "at turn time), but the original does not read that form. With several keys, a rate-limited one is set\n"
        "aside for 30 minutes. `%cireil dry-run` checks the file, and each turn re-reads it, so an edit applies\n"
        "to the next message. Replies stream: a long `respond` appears while the model is still writing it."
    ),
    code("%cireil dry-run"),
    md(
        "The stand-in keeps running until the kernel stops, so every cell above can be run again, and you can\n"
        "go on sending your own messages to it. To stop it yourself: `llm.stop()`."
    ),
]


if __name__ == "__main__":
    write_notebook(OUT, CELLS)
