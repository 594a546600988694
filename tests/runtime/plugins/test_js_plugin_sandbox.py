"""A JS plugin's worker runs under Node's permission model and a heap cap (runtime/plugins/jssandbox.py): it
reads its own folder and modules only, writes nothing, starts no process or thread, and a runaway allocation
ends its worker alone, with a message saying so; every refusal is the tool's error and the next call works."""

from __future__ import annotations

import json

import pytest

import cireil
from cireil.runtime.plugins import jssandbox

pytest_plugins = ("jskit",)  # fixtures: js (Node 22 and the original's checkout), original_install

# Each tool does one thing the sandbox refuses (or allows), as plain Node code a plugin could contain.
PRELUDE = """\
import fs from "node:fs";
import child_process from "node:child_process";
import { Worker } from "node:worker_threads";
const Path = vb.object({ path: vb.string() });
"""
TOOLS = """\
"read-file": {
  description: "Read a host file directly.",
  parameters: Path,
  async execute(input) {
    return { success: true, text: fs.readFileSync(input.path, "utf8") };
  },
},
"write-file": {
  description: "Write a host file directly.",
  parameters: Path,
  async execute(input) {
    fs.writeFileSync(input.path, "written by a plugin");
    return { success: true };
  },
},
"spawn": {
  description: "Start a process.",
  parameters: vb.object({}),
  async execute() {
    return { success: true, out: child_process.execFileSync("/bin/echo", ["hi"], { encoding: "utf8" }) };
  },
},
"thread": {
  description: "Start a worker thread.",
  parameters: vb.object({}),
  async execute() {
    new Worker("1", { eval: true });
    return { success: true };
  },
},
"hog": {
  description: "Allocate without bound.",
  parameters: vb.object({}),
  async execute() {
    const kept = [];
    for (;;) {
      kept.push(new Array(100000).fill({ more: kept.length }));
    }
  },
},
"pid": {
  description: "Its worker's pid.",
  parameters: vb.object({}),
  async execute() {
    return { success: true, pid: process.pid };
  },
},
"""
ENABLED = "read-file = true\nwrite-file = true\nspawn = true\nthread = true\nhog = true\npid = true\n"


@pytest.fixture
def sandboxed(js, tmp_path):
    agent = js.root(tmp_path, '[[plugins]]\nname = "nosy"\n', ENABLED)
    folder = js.plugin(agent, "nosy", TOOLS, prelude=PRELUDE)
    loaded = cireil.load(agent)
    assert loaded.warnings == []
    return agent, folder, loaded


HINT = "In cireil a plugin reads only its own folder and its modules, writes nothing and starts no processes"


def test_reads_outside_its_folder_are_refused_by_name_and_the_worker_lives_on(sandboxed, tmp_path):
    agent, folder, loaded = sandboxed
    pid = loaded.call("pid")["pid"]
    (agent / "sessions.db").write_bytes(b"SQLite format 3\x00 the agent's history")
    outside = tmp_path / "secret.txt"
    outside.write_text("not the plugin's")
    # a host path inside the agent is shown to the model as cireil shows every such path: <sandbox>/...
    for path, shown in (
        ("/etc/passwd", "/etc/passwd"),
        (str(agent / "sessions.db"), "<sandbox>/sessions.db"),
        (str(outside), str(outside)),
    ):
        refused = loaded.call("read-file", path=path)
        assert not refused.success
        assert refused["error"] == f"cireil's plugin sandbox refused reading {shown} (plugin nosy)"
        assert refused["hint"].startswith(HINT)
    own = loaded.call("read-file", path=str(folder / "package.json"))  # its own folder stays readable
    assert own.success and json.loads(own["text"])["name"] == "plugin-nosy"
    assert loaded.call("pid")["pid"] == pid  # refusals are errors in the plugin, not a crash of its worker


def test_writes_are_refused_even_in_its_own_folder(sandboxed, tmp_path):
    _, folder, loaded = sandboxed
    for path in (folder / "cache.json", tmp_path / "dropped.txt"):
        refused = loaded.call("write-file", path=str(path))
        assert not refused.success
        assert refused["error"] == f"cireil's plugin sandbox refused writing {path} (plugin nosy)"
        assert not path.exists()


def test_child_processes_and_worker_threads_are_refused(sandboxed):
    _, _, loaded = sandboxed
    spawned = loaded.call("spawn")
    assert not spawned.success
    assert spawned["error"] == "cireil's plugin sandbox refused starting the process /bin/echo (plugin nosy)"
    thread = loaded.call("thread")
    assert not thread.success
    assert thread["error"].startswith("cireil's plugin sandbox refused starting a worker thread")
    assert loaded.call("pid").success


def test_an_unbounded_allocation_ends_its_worker_with_a_clear_error_and_the_next_call_works(js, tmp_path, monkeypatch):
    monkeypatch.setattr(jssandbox, "HEAP_MB", 96)  # the same cap, smaller, so the test is quick
    agent = js.root(tmp_path, '[[plugins]]\nname = "nosy"\n', ENABLED)
    js.plugin(agent, "nosy", TOOLS, prelude=PRELUDE)
    loaded = cireil.load(agent)
    pid = loaded.call("pid")["pid"]
    hog = loaded.call("hog")
    assert not hog.success
    assert hog["error"].startswith("plugin nosy: its worker ran out of memory (its heap is capped at 96 MB) and ")
    assert hog["error"].endswith(" during the call")
    again = loaded.call("pid")
    assert again.success and again["pid"] != pid


def test_a_typescript_plugin_loads_without_tsx(js, tmp_path):
    """TypeScript (an enum, a `./x.js` import naming `./x.ts`) loads through Node's own stripper in the
    plugin's thread, since tsx needs a worker thread and a child process the sandbox refuses."""
    agent = js.root(tmp_path, '[[plugins]]\nname = "typed"\n', "shout = true\n")
    folder = js.plugin(agent, "typed", "")
    (folder / "package.json").write_text(json.dumps({"name": "plugin-typed", "type": "module", "main": "./index.ts"}))
    (folder / "loud.ts").write_text(
        "export enum Volume { Quiet = 1, Loud = 3 }\n"
        "export function shout(text: string, volume: Volume): string {\n"
        "  return text.toUpperCase() + '!'.repeat(volume);\n"
        "}\n"
    )
    (folder / "index.ts").write_text(
        'import * as vb from "valibot";\n'
        'import { shout, Volume } from "./loud.js";\n'
        "interface Input { text: string }\n"
        "export default () => ({ name: 'typed', tools: { shout: {\n"
        "  description: 'Shout.', parameters: vb.object({ text: vb.string() }),\n"
        "  async execute(input: Input) { return { success: true, text: shout(input.text, Volume.Loud) }; },\n"
        "} } });\n"
    )
    loaded = cireil.load(agent)
    assert loaded.warnings == []
    assert loaded.call("shout", text="hi")["text"] == "HI!!!"


def test_a_refusal_while_loading_is_named_at_load_and_the_rest_loads(js, tmp_path):
    agent = js.root(tmp_path, '[[plugins]]\nname = "early"\n[[plugins]]\nname = "nosy"\n', ENABLED)
    js.plugin(agent, "nosy", TOOLS, prelude=PRELUDE)
    early = js.plugin(agent, "early", "")
    source = (early / "index.mjs").read_text()
    (early / "index.mjs").write_text('import fs from "node:fs";\nfs.readFileSync("/etc/shadow");\n' + source)
    loaded = cireil.load(agent)
    [warning] = [str(w) for w in loaded.warnings]
    assert warning.startswith(
        "../../config/plugins.toml:1: warning: plugin 'early' did not load: plugin early failed to import "
    )
    assert "cireil's plugin sandbox refused reading /etc/shadow (plugin early). " + HINT in warning
    assert loaded.call("pid").success
