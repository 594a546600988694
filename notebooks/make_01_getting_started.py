"""Build notebooks/01-getting-started.ipynb (run: python notebooks/make_01_getting_started.py)."""

from __future__ import annotations

from pathlib import Path

from nbbuild import code, md, write_notebook

CELLS = [
    md("""
# Getting started with cireil

cireil runs an agent's tools inside this kernel, exactly as the agent would call them. In this tutorial you
will load the bundled demo agent, call its tools three ways (a magic, Python, a form), and read the errors
cireil gives when something is wrong.

The demo agent is *Wren*, an assistant for a community garden. `%cireil load --demo` makes a fresh throwaway
copy of it, so nothing here touches your own files.
"""),
    code("%load_ext cireil"),
    code("%cireil load --demo"),
    md("""
`%cireil tools` lists the enabled tools, the magic each one became, and its description. The set comes from
the agent's `config/tools.toml`.
"""),
    code("%cireil tools"),
    md("""
## 1. Tools as magics

Every enabled tool is a magic named `%cireil_<tool>` (`-` becomes `_`). The simplest form takes the tool's
main argument as a bare word:
"""),
    code("%cireil_list_dir /workspace"),
    md("""
The result you see is rendered for people, but the data underneath is exactly the dict the agent receives.
Arguments can also be `key=value` pairs or a JSON object:
"""),
    code("""
%cireil_write path=/workspace/todo.md content="- water the beans"
"""),
    code("""
%cireil_write {"path": "/workspace/notes/first.md", "content": "Parent folders are created as needed."}
"""),
    md("Tools with a body (like `write`'s content) also have a cell form, where the cell body fills it:"),
    code("""
%%cireil_write /workspace/todo.md
- water the beans
- check the tank gauge
- thank the volunteers
"""),
    code("%cireil_list_dir /workspace"),
    md("""
## 2. Tools from Python

`cireil.current_agent()` is the agent the magics use. `agent.call` runs a tool and returns a `ToolResult`:
`.data` is what the agent sees, `.success` is `False` exactly when the tool failed.
"""),
    code("""
import cireil

agent = cireil.current_agent()
res = agent.call("list-dir", path="/workspace/notes")
res.data
"""),
    code("""
info = agent.call("session-info")
info
"""),
    md("""
`await agent.acall(...)` is the same call for async code; a magic's result can be kept too:
`r = %cireil_list_dir /blocks`.
"""),
    code("""
r = %cireil_list_dir /blocks
[entry["name"] for entry in r.data["entries"]]
"""),
    md("""
## 3. Tools as forms

`%cireil ui` shows a form for every enabled tool (or `%cireil ui TOOL` for one). Fill in the fields and press
**Run**; the result renders under the form, and the kernel stays free to run other cells meanwhile.
"""),
    code("%cireil ui list-dir"),
    md("""
## 4. Reading errors

A tool that fails returns a result with `success: false`, an `error` and often a `hint`, just as the agent
would see it. Paths outside the sandbox are refused, and host paths are never shown:
"""),
    code("%cireil_list_dir /etc"),
    code("%cireil_write path=/workspace/../../escape.txt content=nope"),
    md("""
Parameters are checked against the tool's schema before the tool runs. A magic with a missing or wrong argument
shows every problem (the agent would get the same ones as its result), then the magic's usage, and stops there
(this cell is meant to fail):
"""),
    code(
        """%cireil_write {"path": "/blocks/notes.txt", "content": "blocks only hold .md files", "mode": "append"}""",
        fails=True,
    ),
    md("""
Mistakes in the magic's own syntax are reported in one line, before anything runs (this cell is meant to fail):
"""),
    code("%cireil_list_dir /workspace /memories", fails=True),
    md("""
### Configuration errors name the file and the line

cireil re-reads `config/tools.toml` at the start of every call, so edits apply without a restart. Let's break
it on purpose with a typo:
"""),
    code("""
tools_toml = agent.directory / "config" / "tools.toml"
original = tools_toml.read_text()
tools_toml.write_text(original + "\\nreed = true\\n");
"""),
    md("The next call fails with the file, the line and a suggestion (this cell is meant to fail):"),
    code("%cireil_list_dir /workspace", fails=True),
    md("`%cireil dry-run` validates everything at once and lists every problem:"),
    code("%cireil dry-run"),
    md("Fixing the file is enough; nothing needs restarting:"),
    code("""
tools_toml.write_text(original)
%cireil_list_dir /memories
"""),
    md("""
## Where next

- `%cireil help` lists every subcommand.
- Your own agent, made from the demo: in JupyterLab's terminal (File › New › Terminal) run
  `cireil init ~/my-agent`, or in a cell `!cireil init ~/my-agent`. Then load it here with
  `%cireil load ~/my-agent`. `~/my-agent` is the same folder in your home directory from both places (the
  terminal starts in the repository, this notebook in `tutorials-work/`), and nothing lands in the repository.
- `cireil dry-run ~/my-agent` checks an agent from the command line.
"""),
    code("%cireil help"),
]

if __name__ == "__main__":
    write_notebook(Path(__file__).with_name("01-getting-started.ipynb"), CELLS)
