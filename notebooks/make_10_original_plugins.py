"""Build notebooks/10-original-plugins.ipynb (run: .venv/bin/python notebooks/make_10_original_plugins.py)."""

from __future__ import annotations

from pathlib import Path

from nbbuild import code, md, write_notebook

OUT = Path(__file__).resolve().parent / "10-original-plugins.ipynb"

# The plugin the notebook writes: an ES module in the original's plugin contract (a default export making
# {name, tools}; parameters are valibot schemas, as the SDK's `vb` is valibot).
PLUGIN = """\
import * as vb from "valibot";

const Spacing = vb.strictObject({
  plant: vb.pipe(vb.picklist(["beans", "carrots", "tomatoes"]), vb.description("What to sow")),
  rows: vb.pipe(vb.number(), vb.integer(), vb.minValue(1), vb.description("How many rows of the bed")),
});
const SPACING_CM = { beans: 10, carrots: 5, tomatoes: 50 };

export default () => ({
  name: "garden",
  tools: {
    "seed-spacing": {
      description: "How many seeds fit in a garden bed, from the spacing each plant needs.",
      parameters: Spacing,
      async execute(input, ctx) {
        const { plant, rows } = vb.parse(Spacing, input);
        const config = (await ctx.cfg.globalPlugin("garden")) ?? {};
        const bed = Number(config.bedLengthCm ?? 120);
        const plans = Number((await ctx.pluginState.readText("plans")) ?? "0") + 1;
        await ctx.pluginState.writeText("plans", String(plans));
        const perRow = Math.floor(bed / SPACING_CM[plant]);
        return { success: true, plant, rows, bedLengthCm: bed, spacingCm: SPACING_CM[plant],
                 seeds: perRow * rows, plansSoFar: plans, node: process.version };
      },
    },
  },
});
"""

MODEL = '''\
def gardener(body: dict):
    """A stand-in model: it asks the garden plugin, then says what the plugin answered."""
    offered = {t["function"]["name"] for t in body.get("tools", [])}
    result = None
    for message in body["messages"]:
        if message["role"] == "tool":
            result = json.loads(message["content"])
        elif message["role"] == "user":
            text = "".join(p.get("text", "") for p in message["content"] if isinstance(p, dict))
            if not text.startswith(("Current date:", "<opened_files>")):  # the runtime's context, not a person
                result = None  # a new message from the person: this turn's results start here
    if result is not None and result.get("name") == "seed-spacing":
        if not result.get("success"):
            return reply.tool_calls(("respond", {"content": f"The plugin failed: {result.get('error')}"}))
        say = f"{result['seeds']} {result['plant']} in {result['rows']} rows, {result['spacingCm']} cm apart."
        return reply.tool_calls(("respond", {"content": say}))
    if "seed-spacing" in offered:
        return reply.tool_calls(("seed-spacing", {"plant": "carrots", "rows": 3}))
    # without Node the plugin's tool is not offered, and a model can only say so
    return reply.tool_calls(("respond", {"content": "The garden plugin is not loaded, so I cannot work it out."}))
'''

CELLS = [
    md(
        "# The original CireilClaw's plugins\n\n"
        "An agent of the original CireilClaw runtime often has tools that are not built in: web search,\n"
        "GitHub, the operator's own. They come from **plugins**, written in JavaScript or TypeScript against\n"
        "the original's SDK and listed in the runtime root's `config/plugins.toml`: an npm package installed\n"
        "in the root (`package = ...`) or a local folder under `plugins/` (`name = ...`).\n\n"
        "cireil runs them as they are, so the agent you open here is the agent you run there. Each plugin runs\n"
        "in a **Node worker process of its own**: its tools become ordinary cireil tools (a magic, a form, a\n"
        "Python call, and the model can call them in a turn), it reads its config files and keeps its private\n"
        "state where the original does, and a plugin that throws, hangs or crashes cannot take the kernel\n"
        "with it.\n\n"
        "In this tutorial you write a small local plugin into a throwaway runtime root, look at its tool, call\n"
        "it from a form and as a magic, and watch a (scripted) model use it in a turn."
    ),
    md(
        "## 1. Node\n\n"
        "Plugins need **Node 22 or newer**. cireil looks at `$CIREIL_NODE`, then `node` on `PATH`, then\n"
        "`~/.cache/cireil/node`, where the project's setup (`./dev tutorial`, `./dev test`) installs Node 22\n"
        "from the npm registry when no Node 22 is found, together with the plugin host's helper\n"
        "`@valibot/to-json-schema` (which turns a plugin's parameter schemas into the JSON Schema the model\n"
        "sees). Each plugin runs in a Node process of its own, sandboxed by Node's permission model: it reads\n"
        "only its own folder, writes nothing and starts no process. Without Node everything else still works;\n"
        "each plugin then says, when\n"
        "the agent loads, how to get it. This notebook runs either way."
    ),
    code(
        "from cireil.runtime.plugins import node\n\n"
        "try:\n"
        "    found = node.find_node()\n"
        '    print(f"Node {found.version} at {found.path}")\n'
        "except node.NodeMissing as missing:\n"
        '    print("no Node for plugins here:", missing)'
    ),
    md(
        "## 2. A runtime root with a local plugin\n\n"
        "An original's runtime root holds `agents/<slug>/`, `config/` (with `plugins.toml`, and each plugin's\n"
        "own `config/plugins/<name>.toml`) and `plugins/<name>/` for local plugins. A local plugin is a folder\n"
        "with a `package.json` whose `main` is the module, and its `node_modules` (from `pnpm install`). This\n"
        "one needs only `valibot`, so instead of installing it the cell links the copy cireil's setup installed.\n\n"
        "The module's default export makes the plugin: its `name` and its `tools`, each with a description,\n"
        "valibot `parameters` and an `execute(input, ctx)`. `ctx` is the SDK's context: this tool reads its\n"
        "config file (`ctx.cfg`) and counts its calls in its private state (`ctx.pluginState`)."
    ),
    code(
        "import json\nfrom pathlib import Path\n\n"
        "from cireil.runtime.base.scratch import scratch_dir\n"
        "from cireil.runtime.scaffold import init\n\n"
        f"PLUGIN = '''\\\n{PLUGIN}'''\n\n"
        "# a runtime root (agents/, plugins/, config/), removed when this kernel ends, however it ends\n"
        'root = scratch_dir("cireil-tutorial-")\n'
        'agent_dir = init(root / "agents" / "garden")\n\n'
        'plugin = root / "plugins" / "garden"\n'
        '(plugin / "node_modules").mkdir(parents=True)\n'
        'package = {"name": "garden", "type": "module", "main": "./index.mjs"}\n'
        '(plugin / "package.json").write_text(json.dumps(package))\n'
        '(plugin / "index.mjs").write_text(PLUGIN)\n'
        "for folder in map(Path, node.module_folders()):  # the valibot beside cireil's Node, as pnpm would link it\n"
        '    if (folder / "valibot").is_dir():\n'
        '        (plugin / "node_modules" / "valibot").symlink_to(folder / "valibot")\n'
        "        break\n\n"
        '(root / "config" / "plugins").mkdir(parents=True)\n'
        '(root / "config" / "plugins.toml").write_text(\'[[plugins]]\\nname = "garden"\\n\')\n'
        '(root / "config" / "plugins" / "garden.toml").write_text("bedLengthCm = 150\\n")\n'
        "# like every tool, a plugin's tools are enabled by name in the agent's tools.toml\n"
        'tools_toml = agent_dir / "config" / "tools.toml"\n'
        'tools_toml.write_text(tools_toml.read_text() + "seed-spacing = true\\n")\n'
        'for path in sorted([*root.glob("config/**/*"), *plugin.glob("*"), *plugin.glob("node_modules/*")]):\n'
        '    print(path.relative_to(root), f"-> {path.readlink()}" if path.is_symlink() else "")'
    ),
    md(
        "## 3. Load the agent\n\n"
        "Loading starts the plugin's worker, which imports the module and reports its tools. A plugin that\n"
        "cannot load (no Node, a missing package, a syntax error) is a warning naming it and what to do; the\n"
        "rest of the agent loads."
    ),
    code(
        "%load_ext cireil\n"
        "%cireil load $agent_dir\n\n"
        "import cireil\n\n"
        "agent = cireil.current_agent()\n"
        "# the cells that call the plugin run only when it loaded; otherwise they say so and skip\n"
        "ready = not any(\"plugin 'garden'\" in str(w) for w in agent.warnings)\n"
        'print("the garden plugin is loaded" if ready else "the garden plugin did not load (see the warning above)")'
    ),
    md(
        "`%cireil tools` lists the plugin's tool with the others; its *origin* names the plugin. Its parameters\n"
        "are the plugin's valibot schema turned into JSON Schema exactly as the original does it, so the model\n"
        "sees the same definition in both runtimes."
    ),
    code("%cireil tools"),
    code('agent.tool("seed-spacing").parameters'),
    md(
        "## 4. Call it: from its form, as a magic, from Python\n\n"
        "The form is built from that schema: `plant` is a choice, `rows` a number. `%cireil ui seed-spacing`\n"
        "shows it; here the cell fills it in and presses **Run** itself, so that the tutorial also runs headless.\n"
        "A call that hangs has a **Cancel** button (a kernel interrupt does the same to a magic), which ends the\n"
        "plugin's worker; the next call starts a fresh one."
    ),
    code(
        "from cireil.kernel.forms.toolform import tool_form\n\n"
        "if ready:\n"
        '    form = tool_form(agent, "seed-spacing")\n'
        '    form.fields["plant"].control.value = "beans"\n'
        '    form.fields["rows"].control.value = 4\n'
        "    form.run_button.click()\n"
        "    form.wait(30)\n"
        "    display(form)\n"
        "else:\n"
        '    print("skipped: the garden plugin is not loaded")'
    ),
    md(
        "A plugin tool's magic is `%cireil_<name>`, with `-` as `_`. The plugin read `bedLengthCm = 150` from\n"
        "its config file, and `plansSoFar` counts up: it is the plugin's private state."
    ),
    code(
        "if ready:\n"
        "    spacing = %cireil_seed_spacing plant=tomatoes rows=2\n"
        "    display(spacing)\n"
        "else:\n"
        '    print("skipped: the garden plugin is not loaded")'
    ),
    md(
        "The state is a file in the agent's `state/<plugin>/` folder, where the original keeps it, so both runtimes\n"
        "see the same state (`stateQuotaBytes` in `plugins.toml` bounds it):"
    ),
    code(
        'state = agent_dir / "state" / "garden"\n'
        "if ready:\n"
        '    print(agent.call("seed-spacing", plant="carrots", rows=1).data)\n'
        '    print("state/garden/plans holds", (state / "plans").read_text())\n'
        "else:\n"
        '    print("skipped: the garden plugin is not loaded")'
    ),
    md(
        "## 5. The model calls it in a turn\n\n"
        "As in tutorial 06, a scripted stand-in plays the model: a small rule that calls `seed-spacing` when the\n"
        "tool is offered and then repeats what the plugin answered. The plugin's result goes back to the model\n"
        "with the next request and into `sessions.db`, like any tool's."
    ),
    code(
        "from cireil.testing.scripted_llm import ScriptedLLM, reply\n\n\n"
        f"{MODEL}\n\n"
        "llm = ScriptedLLM(default=gardener).start()\n"
        '_ = (agent_dir / "config" / "engine.toml").write_text(f"""\\\n'
        "[local]\n"
        'apiBase = "{llm.base_url}"\n'
        'defaultModel = "gardener-scripted"\n'
        "isGlobalDefault = true\n"
        '""")'
    ),
    code("%%cireil_agent\nHow many carrots can I sow in three rows?"),
    md("What the model got back from the plugin, in the second request:"),
    code(
        "tool_results = [m for r in llm.requests for m in r.body['messages'] if m['role'] == 'tool']\n"
        "print(tool_results[-1]['content'] if tool_results else 'no tool was called (the plugin is not loaded)')"
    ),
    md(
        "## Where next\n\n"
        '- An npm plugin (`package = "@scope/plugin-x"` in `plugins.toml`) is installed in the runtime root\n'
        "  as the original does it: `pnpm add @scope/plugin-x` there. cireil loads it from `node_modules`.\n"
        "- `cireil dry-run AGENT_DIR` names every plugin that cannot load, and why.\n"
        "- `[limits] plugin_timeout_s` in the agent's `config/cireil.toml` bounds a plugin call (the\n"
        "  original's timeout by default); a worker that crashed or hung starts again on the next call.\n\n"
        "Stop the stand-in model and the plugin's worker:"
    ),
    code("llm.stop()\nagent.close()"),
]


if __name__ == "__main__":
    write_notebook(OUT, CELLS)
