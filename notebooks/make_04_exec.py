"""Build notebooks/04-exec.ipynb (run: .venv/bin/python notebooks/make_04_exec.py)."""

from __future__ import annotations

from pathlib import Path

from nbbuild import write_notebook
from nbformat.v4 import new_code_cell, new_markdown_cell

OUT = Path(__file__).resolve().parent / "04-exec.ipynb"

md, code = new_markdown_cell, new_code_cell

CELLS = [
    md(
        "# Running commands with `exec`\n\n"
        "`exec` runs one command in the agent's sandbox, exactly as the agent would: a binary from the\n"
        "allowlist in `config/sandbox.toml`, arguments passed verbatim (no shell), working directory\n"
        "`/workspace`. The sandbox is [bubblewrap](https://github.com/containers/bubblewrap): the command sees\n"
        "the agent's folders at `/workspace`, `/memories`, `/skills` and `/tasks`, read-only system\n"
        "directories and a private `/tmp` — not your home directory, not this kernel's environment variables.\n\n"
        "In this tutorial you will run commands, watch output arrive live, hit a timeout, and look at a\n"
        "large output that was saved to a file with a preview."
    ),
    code("%load_ext cireil\n%cireil load --demo"),
    md(
        "The sandbox needs Linux user namespaces. Some machines forbid them (Binder and many containers do).\n"
        "The next cell checks; where bubblewrap cannot run it says so and switches this throwaway demo copy to\n"
        '`backend = "none"` — commands then run **without a sandbox**, and every result carries a warning.\n'
        "Never do that for an agent you do not trust. (Without a sandbox, paths like `/workspace` in arguments\n"
        "are host paths: commands run in the workspace folder, so use relative paths there.)"
    ),
    code(
        "import cireil\n\n"
        "if cireil.sandbox_available():\n"
        '    print("bubblewrap works here: commands run in the sandbox")\n'
        "else:\n"
        '    print("⚠ no sandbox on this machine:", cireil.sandbox_problem())\n'
        '    sandbox_toml = cireil.current_agent().directory / "config" / "sandbox.toml"\n'
        "    sandbox_toml.write_text(sandbox_toml.read_text().replace('backend = \"bwrap\"', 'backend = \"none\"'))\n"
        "    print('⚠ this demo copy now uses backend = \"none\": commands run WITHOUT a sandbox')"
    ),
    md(
        "## 1. Run a command\n\n"
        "The first word after the magic is the command; every further word is one argument, split like a\n"
        "shell would split it (quotes group words) but never expanded: `*` and `$HOME` reach the command as typed."
    ),
    code("%cireil_exec ls -la /workspace"),
    code("%cireil_exec grep -n 'def ' harvest_report.py"),
    md(
        "The panel shows the exit code, the duration and the byte counts; the data underneath is the dict\n"
        "the agent receives. Short output comes back inline (`inline: true`)."
    ),
    code(
        "import cireil\n\n"
        "agent = cireil.current_agent()\n"
        'r = agent.call("exec", command="wc", args=["-l", "harvest.csv", "notes.txt"])\n'
        "r.data"
    ),
    md(
        "The cell form sends the cell body to the command's standard input: `%%cireil_exec python3 -` runs\n"
        "the body with the sandbox's Python."
    ),
    code(
        "%%cireil_exec python3 -\n"
        "import csv, os\n"
        "rows = list(csv.DictReader(open('harvest.csv')))\n"
        "print(len(rows), 'harvest rows; HOME is', os.environ['HOME'])\n"
        "print(sorted(os.environ))"
    ),
    md(
        "A command that fails is still a result (with `success: false`), not an exception, and so is a\n"
        "command outside the allowlist: it never runs."
    ),
    code("%cireil_exec ls /workspace/no-such-folder"),
    code("%cireil_exec rm -rf /workspace"),
    md(
        "A command name with shell syntax in it is refused by exec's parameter check, before anything runs: the\n"
        "magic shows the problem and its usage and stops (this cell is meant to fail; the agent would get the\n"
        "same problem as its result)."
    ),
    code('%cireil_exec "ls -la"', metadata={"tags": ["raises-exception"]}),
    md(
        "## 2. Watch output live\n\n"
        "While a command runs, its latest output streams into the cell and updates in place a few times a\n"
        "second, with the time so far; when it ends, the live view is replaced by the final panel. Interrupting\n"
        "the kernel (the ■ button) stops the command and every process it started: the panel then says\n"
        '"interrupted after N s" and keeps the output seen so far.'
    ),
    code(
        "%%cireil_exec python3 -\n"
        "import time\n"
        "for i in range(1, 9):\n"
        "    print('watering bed', i, flush=True)\n"
        "    time.sleep(0.25)\n"
        "print('done')"
    ),
    md(
        "## 3. Hit a timeout\n\n"
        "The timeout comes from `config/tools.toml` (exec's `timeout`, in milliseconds, 60 s by default). Edits\n"
        "to that file apply at the next call. Here it goes down to 2 s, and a command sleeps for 30: it is\n"
        "killed at the deadline, and the result is a failure that keeps what the command printed before."
    ),
    code(
        'tools_toml = agent.directory / "config" / "tools.toml"\n'
        "text = tools_toml.read_text()\n"
        'tools_toml.write_text(text.replace("timeout = 60000", "timeout = 2000"))\n'
        "print(tools_toml.read_text())"
    ),
    code("%cireil_exec python3 -c \"import time; print('started', flush=True); time.sleep(30)\""),
    md(
        "## 4. Large output: a file and a preview\n\n"
        "Output beyond `inlineThresholdBytes` (16 KiB) is written, byte for byte, to a file under\n"
        "`/workspace/.exec-output`. The agent gets the file's path, the byte count, and a preview: the first and\n"
        "last 20 lines with a marker for what lies between. Where widgets run, the panel has a button that opens\n"
        "the file with `read`, in a fold below the panel (which stays)."
    ),
    code('big = agent.call("exec", command="python3", args=["-c", "for i in range(3000): print(\'row\', i)"])\nbig'),
    code('print(big["stdoutPath"], big["stdoutLength"], "bytes")\nprint(big["stdoutPreview"])'),
    code("%cireil_list_dir /workspace/.exec-output"),
    code(
        'saved = agent.directory / big["stdoutPath"].lstrip("/")\n'
        "lines = saved.read_text().splitlines()\n"
        "len(lines), lines[1500]"
    ),
    md(
        "A single enormous line (minified code, binary-ish output) still gets a preview: every preview line\n"
        "is cut at `maxPreviewLineLength` (1000) characters with a marker saying how much was left out."
    ),
    code("%cireil_exec python3 -c \"print('x' * 50000)\""),
    md(
        "Malformed magic lines are refused before anything runs — here an unclosed quote (this cell is meant\nto fail):"
    ),
    code("%cireil_exec python3 -c 'print(1)", metadata={"tags": ["raises-exception"]}),
    md(
        "That is exec: an allowlisted binary, verbatim arguments, a real sandbox, a deadline that always\n"
        "holds, and output that is either inline or saved in full with a bounded preview."
    ),
]


if __name__ == "__main__":
    write_notebook(OUT, CELLS)
