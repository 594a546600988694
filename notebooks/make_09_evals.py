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
        "grid fills in as runs finish. Each cell is the passes out of the runs, the pass rate with its 95%\n"
        "interval, the mean tokens and seconds;\n"
        "click a cell to open its runs: each failed one lists the checks that failed, and one more click opens\n"
        "the turn it recorded — every model call, what was sent, what came back, and the tool calls made."
    ),
    code("%cireil eval"),
    md(
        "Without `schedule`, the reminder scenario fails: the model still asks for the tool, and the runtime\n"
        "answers that it is not available. Every other scenario is unaffected — that is the kind of answer an\n"
        "eval gives before you ship a change. Open the `no-schedule` cell of `reminder`, then **recorded turn**\n"
        "under the failed run: step 1 shows the model calling `schedule`, step 2's diff the refusal it got back.\n"
        "Each run worked on a copy of the agent that is gone now; a failed run's turn came back with its result.\n\n"
        "Under the grid, each variant is compared with the first one, scenario by scenario: one run each is\n"
        "**not enough evidence** to call `no-schedule` worse, and the line says about how many runs would be\n"
        "(section 5 lets the eval find out by itself)."
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
        'apiBase = "{llm.base_url}"\n'
        'defaultModel = "wren-scripted"\n'
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
        "`cireil eval-compare A.json B.json` compares two results scenario by scenario with an exact test\n"
        "(Fisher's, Holm-corrected across scenarios, and a paired sign test over scenarios for the overall verdict)\n"
        "and exits non-zero only when something got **significantly** worse. Here the stand-in's rules change\n"
        "between the two runs, and eight runs of the new rules all fail:"
    ),
    code(
        "from cireil.testing.scripted_llm import reply\n\n"
        "(mine / 'typo.toml').unlink()\n"
        "llm.default = lambda body: reply.tool_calls(('respond', {'content': 'I would rather not look.'}))\n"
        "%cireil eval my-evals --variant baseline --repeat 8 --json after.json\n"
        "llm.default = wren"
    ),
    code(
        "out = subprocess.run([sys.executable, '-m', 'cireil', 'eval-compare', 'before.json', 'after.json'],\n"
        "                     capture_output=True, text=True)\n"
        "print(out.stdout, out.stderr, 'exit status', out.returncode)"
    ),
    md(
        "Every cell of the grid carries its uncertainty: `2/2 100% [34–100%]` is two passes in two runs, and the\n"
        "95% Wilson interval says the true pass rate could be anywhere from 34% up. `pass^k` is the chance that\n"
        "all k runs pass (agents are judged on doing it every time), `flaky` marks a cell that both passed and\n"
        "failed. The `--json` file and the `--junit` test cases carry the same figures.\n\n"
        "## 5. Noise, or a real difference?\n\n"
        "A real model calls the right tool with some probability. The stand-in below does that on purpose: with\n"
        "the `baseline` description it lists the folder 95% of the time, with `terse-list`'s only 45% — a real\n"
        "difference of 50 points. Its coin is seeded per variant, so this notebook shows the same runs every time."
    ),
    code(
        "import random\n"
        "import threading\n\n"
        "def coin_model(chance, seed=9):\n"
        "    draws = {name: random.Random(f'{seed}-{name}') for name in chance}\n"
        "    lock = threading.Lock()\n\n"
        "    def answer(body):\n"
        "        if any(m['role'] == 'tool' for m in body['messages']):\n"
        "            return wren(body)  # after the call: the usual answer\n"
        "        terse = any(t['function']['description'] == 'List a folder.' for t in body['tools'])\n"
        "        variant = 'terse-list' if terse else 'baseline'\n"
        "        with lock:\n"
        "            calls = draws[variant].random() < chance[variant]\n"
        "        if calls:\n"
        "            return wren(body)  # lists the folder\n"
        "        return reply.tool_calls(('respond', {'content': 'Nothing there, I think.'}))\n\n"
        "    return answer\n\n"
        "coin = agent.directory / 'coin-evals'\n"
        "coin.mkdir(exist_ok=True)\n"
        "(coin / 'files.toml').write_text((mine / 'files.toml').read_text())\n"
        "(coin / 'variants.toml').write_text(\n"
        "    '[baseline]\\n[terse-list]\\ndescriptions = { list-dir = \"List a folder.\" }\\n'\n"
        ")\n"
        "llm.default = coin_model({'baseline': 0.95, 'terse-list': 0.45})"
    ),
    md(
        "Three runs per variant, as people often afford. `terse-list` looks worse, and under the grid the\n"
        "comparison with the baseline says what three runs can tell — **not enough evidence**, and about how\n"
        "many more runs would decide:"
    ),
    code("%cireil eval coin-evals --repeat 3"),
    md(
        "`--until-decided` runs in rounds (5 runs per cell) and keeps running only the cells whose comparison\n"
        "with the baseline is still open, up to `--max-runs` (40) or a `--budget-tokens` spend. Looking at the\n"
        "data after every round would inflate the false alarms of a plain test, so the rule is a group-sequential\n"
        "design with Lan-DeMets alpha spending (O'Brien-Fleming type): its stated error rate (`--alpha`, 0.05)\n"
        "holds however many rounds it takes. The same two variants, decided:"
    ),
    code("llm.default = coin_model({'baseline': 0.95, 'terse-list': 0.45})\n%cireil eval coin-evals --until-decided"),
    md(
        "In CI, run the suite from a shell; `--junit` writes a report CI systems display (a test case per run,\n"
        "the failed checks as its failure, the cell's interval and pass^k as its properties):\n\n"
        "```\n"
        "cireil eval path/to/agent path/to/agent/evals --variant baseline --min-pass 0.9 --junit eval.xml\n"
        "cireil eval-compare main.json branch.json        # exit 1 only on a significant regression\n"
        "```\n\n"
        "`--min-pass` fails only when even the top of the pass rate's 95% interval is below it. Exit status: 0,\n"
        "1 on evidence of a failure, 2 for a bad scenario or variants file, 130 when interrupted (the runs that\n"
        "finished are still reported and written). Runs use a local process pool; with the `cireil[dask]`\n"
        "extra, `--dask ADDRESS` sends them to a Dask cluster. `--keep DIR` keeps each run's copy of the agent,\n"
        "its `sessions.db` holding the turn."
    ),
    code("llm.stop()"),
]


if __name__ == "__main__":
    write_notebook(OUT, CELLS)
