"""Build notebooks/09-evals.ipynb (run: .venv/bin/python notebooks/make_09_evals.py)."""

from __future__ import annotations

from pathlib import Path

from nbbuild import code, md, write_notebook

OUT = Path(__file__).resolve().parent / "09-evals.ipynb"

CELLS = [
    md(
        "# Evals: does the model call the right tools, reliably?\n\n"
        "Calling a tool by hand tells you the tool works. What you really want to know is whether the **model**\n"
        "calls it when it should, with the right arguments, every time — and whether your last change to a tool\n"
        "description or to `core.md` made that better or worse. A **scenario** says what the person writes and\n"
        "what should happen; `%cireil eval` (or `cireil eval` in a shell, or CI) runs it, many times, across\n"
        "**variants** of the agent, and shows a grid of pass rates.\n\n"
        "Every run happens on a throwaway copy of the agent, in its own process: your agent never changes."
    ),
    code("%load_ext cireil\n%cireil load --demo"),
    md(
        "## 1. The demo's scenarios\n\n"
        "The demo agent ships three scenarios in its `evals/` folder. Here is one: the message, the call that\n"
        "must happen (`schedule`, with argument matchers: `{ regex = ... }`, `{ any = true }`, an exact value,\n"
        "or `{ subset = {...} }` for part of a JSON object; `ok = true` means the call must also succeed), and\n"
        "checks on the answer. Its `[[reply]]` tables **pin** the model's replies: the model's side is a\n"
        "script, so the suite runs offline and gives the same result every time, while the tools run for real."
    ),
    code(
        "import cireil\n\n"
        "agent = cireil.current_agent()\n"
        "suite = agent.directory / 'evals'\n"
        "print(sorted(p.name for p in suite.iterdir()))\n"
        "print((suite / 'reminder.toml').read_text())"
    ),
    md(
        "`variants.toml` beside the scenarios lists the variants to compare. `no-schedule` switches the\n"
        "`schedule` tool off in `tools.toml` (in the copy only):"
    ),
    code("print((suite / 'variants.toml').read_text())"),
    md(
        "## 2. Run them\n\n"
        "With no file named, `%cireil eval` runs the loaded agent's `evals/` folder against every variant. The\n"
        "grid fills in as runs finish. Each cell is the passes out of the runs, the mean tokens and seconds;\n"
        "click a cell to open its runs: each failed one lists the checks that failed, and one more click opens\n"
        "the turn it recorded — every model call, what was sent, what came back, and the tool calls made."
    ),
    code("%cireil eval"),
    md(
        "Without `schedule`, the reminder scenario fails: the model still asks for the tool, and the runtime\n"
        "answers that it is not available. Every other scenario is unaffected — that is the kind of answer an\n"
        "eval gives before you ship a change. Open the `no-schedule` cell of `reminder`, then **recorded turn**\n"
        "under the failed run: step 1 shows the model calling `schedule`, step 2's diff the refusal it got back.\n"
        "Each run worked on a copy of the agent that is gone now; a failed run's turn came back with its result."
    ),
    md(
        "## 3. Your own scenario, against a model\n\n"
        "A scenario without `[[reply]]` asks the agent's real model. So that this notebook runs offline, the\n"
        "next cell starts the rule-based stand-in from tutorial 06 and points the agent at it; with a real\n"
        "provider in `config/engine.toml` the same cells evaluate the real model. The files go in a folder of\n"
        "the demo copy, and the kernel changes into it so the paths below stay short."
    ),
    code(
        "import os\n\n"
        "from cireil.testing.demo_model import wren\n"
        "from cireil.testing.scripted_llm import ScriptedLLM\n\n"
        "os.chdir(agent.directory)\n"
        "llm = ScriptedLLM(default=wren).start()\n"
        "(agent.directory / 'config' / 'engine.toml').write_text(f'''\n"
        "[local]\n"
        'apiBase = \\"{llm.base_url}\\"\n'
        'defaultModel = \\"wren-scripted\\"\n'
        "isGlobalDefault = true\n"
        "''')\n\n"
        "mine = agent.directory / 'my-evals'\n"
        "mine.mkdir(exist_ok=True)\n"
        "(mine / 'files.toml').write_text('''\n"
        'message = "What files are in my workspace?"\n\n'
        "[expect]\n"
        'order = "strict"                 # exactly these calls, in this order (respond aside)\n'
        'forbid = ["exec"]\n'
        "[[expect.call]]\n"
        'tool = "list-dir"\n'
        'args = { path = "/workspace" }\n'
        "ok = true\n\n"
        "[answer]\n"
        'contains = "harvest.csv"\n\n'
        "[limits]\n"
        "steps = 4\n"
        "seconds = 60\n"
        "''')\n"
        "(mine / 'variants.toml').write_text('''\n"
        "[baseline]\n\n"
        "[terse-list]\n"
        'descriptions = { list-dir = "List a folder." }   # what the model is told about the tool\n\n'
        "[no-list]\n"
        "tools = { list-dir = false }\n"
        "''');"
    ),
    md(
        "`--repeat` runs each cell several times (a real model is not deterministic: the pass rate is what\n"
        "matters), `--jobs` how many at once, and `--json` keeps the results for later:"
    ),
    code("%cireil eval my-evals --repeat 2 --jobs 2 --json before.json"),
    md(
        "`terse-list` tells the model less about `list-dir`: with a real model, that is where pass rates move.\n"
        "The stand-in follows fixed rules, so here only `no-list` changes the result.\n\n"
        "The failed runs keep their recorded turns in the JSON file too. From Python they are the same\n"
        "`RecordedTurn` objects `agent.turns()` gives (tutorial 08): steps with the request, the reply and the\n"
        "tool calls. Here is what the model did without `list-dir`:"
    ),
    code(
        "from cireil.runtime.evals.report import EvalReport\n\n"
        "report = EvalReport.load('before.json')\n"
        "failed = report.failed()[0]\n"
        "print(failed.variant, failed.failures)\n"
        "for step in failed.turns[0].steps:\n"
        "    print(step.n, [(c.name, c.arguments, c.result.get('error')) for c in step.calls])"
    ),
    md("In a shell (or a CI log), `cireil eval-show` lists the failed runs of a result file and opens one:"),
    code(
        "import subprocess\n"
        "import sys\n\n"
        "def cireil(*args):\n"
        "    out = subprocess.run([sys.executable, '-m', 'cireil', *args], capture_output=True, text=True)\n"
        "    print(out.stdout, out.stderr, sep='')\n\n"
        "cireil('eval-show', 'before.json')\n"
        "cireil('eval-show', 'before.json', failed.run_id)"
    ),
    md("A bad scenario file is reported like every configuration file — every problem at once, with its line:"),
    code(
        "(mine / 'typo.toml').write_text(\n"
        '    \'message = "hi"\\n[expect]\\norder = "strictly"\\n[answr]\\ncontains = "x"\\n\'\n'
        ");"
    ),
    code("%cireil eval my-evals/typo.toml", fails=True),
    md(
        "## 4. Compare, and gate CI\n\n"
        "`cireil eval-compare A.json B.json` says which scenario got worse (or better) on which variant, and\n"
        "exits non-zero when something got worse. Here the stand-in's rules change between the two runs:"
    ),
    code(
        "from cireil.testing.scripted_llm import reply\n\n"
        "(mine / 'typo.toml').unlink()\n"
        "llm.default = lambda body: reply.tool_calls(('respond', {'content': 'I would rather not look.'}))\n"
        "%cireil eval my-evals --variant baseline --json after.json\n"
        "llm.default = wren"
    ),
    code(
        "out = subprocess.run([sys.executable, '-m', 'cireil', 'eval-compare', 'before.json', 'after.json'],\n"
        "                     capture_output=True, text=True)\n"
        "print(out.stdout, 'exit status', out.returncode)"
    ),
    md(
        "In CI, run the suite from a shell and fail the job below a pass rate; `--junit` writes a report CI\n"
        "systems display (a test case per run, the failed checks as its failure):\n\n"
        "```\n"
        "cireil eval path/to/agent path/to/agent/evals --variant baseline --min-pass 1.0 --junit eval.xml\n"
        "```\n\n"
        "The exit status is 0 when the pass rate reaches `--min-pass`, 1 below it, 2 for a bad scenario or\n"
        "variants file, 130 when interrupted (the runs that finished are still reported and written). Runs use\n"
        "a local process pool; with the `cireil[dask]` extra, `--dask ADDRESS` sends them to a Dask cluster.\n"
        "`--keep DIR` keeps each run's copy of the agent, its `sessions.db` holding the turn."
    ),
    code("llm.stop()"),
]


if __name__ == "__main__":
    write_notebook(OUT, CELLS)
