"""Build notebooks/07-conditions.ipynb (run: .venv/bin/python notebooks/make_07_conditions.py)."""

from __future__ import annotations

from pathlib import Path

from nbbuild import code, md, write_notebook

OUT = Path(__file__).resolve().parent / "07-conditions.ipynb"

CELLS = [
    md(
        "# Conditions: what the agent may see, depending on where it talks\n\n"
        "An agent of the original CireilClaw talks in many places: a Discord guild, a DM, the TUI, scheduled\n"
        "runs. `config/conditions.toml` decides, per session, which folders it may touch and which extra memory\n"
        "blocks it gets. cireil enforces the same rules in every file tool and inside exec's sandbox. This\n"
        "tutorial writes a rule file, then acts as different channels to test what the agent would see there."
    ),
    code("%load_ext cireil\n%cireil load --demo"),
    md(
        "## 1. A rule file\n\n"
        "The shared folder is open only in one Discord guild; the `nsfw` folder inside it additionally only in\n"
        "NSFW channels. In the TUI the agent gets an extra block, `blocks/conditional/after-hours.md`."
    ),
    # Cell sources as they will read in the notebook: the files' text in triple-quoted strings (no escaped
    # quotes or \n), and the cell ends with a print, not a write_text, whose character count would be its Out[].
    code(
        '''
import cireil

agent = cireil.current_agent()
d = agent.directory
(d / "config" / "conditions.toml").write_text("""
[blocks.after-hours]
action = "load"
when = "tui"

[workspace."/shared/"]
action = "allow"
when = "discord:guild:1174109840998400016"

[workspace."/shared/nsfw/"]
action = "deny"
when = "!discord:nsfw"
""")
(d / "workspace" / "shared" / "nsfw").mkdir(parents=True, exist_ok=True)
(d / "workspace" / "shared" / "plan.md").write_text("""# Guild plan

Meet on Friday.
""")
(d / "blocks" / "conditional").mkdir(exist_ok=True)
(d / "blocks" / "conditional" / "after-hours.md").write_text("""+++
description = "Late-night mode"
+++
Keep answers short and calm.
""")
print("written: config/conditions.toml, workspace/shared/plan.md, blocks/conditional/after-hours.md")
'''
    ),
    md(
        "## 2. In the notebook, nothing a rule names holds\n\n"
        "A notebook session is no Discord guild, so the shared folder is closed — the read fails as the agent\n"
        "would see it, and `list-dir` does not even show the folder. `%cireil session` lists each rule and what\n"
        "it decides here."
    ),
    code("%cireil session"),
    code("%cireil_read /workspace/shared/plan.md"),
    code("%cireil_list_dir /workspace"),
    md(
        "## 3. Act as a channel\n\n"
        "`%cireil session --channel discord --guild ID` makes the rules see this session as a channel of that\n"
        "guild (add `--nsfw`, `--channel-id ID` or `--parent ID` for the other conditions; `--as-is` goes back)."
    ),
    code("%cireil session --channel discord --guild 1174109840998400016"),
    code("%cireil_read /workspace/shared/plan.md"),
    md(
        "## 4. Conditional blocks\n\n"
        "Acting as the TUI, the `after-hours` block joins the system prompt; `%cireil prompt` shows the request\n"
        "(open *system prompt* to find `<conditional/after-hours>`) and, below it, the rule that added it."
    ),
    code("%cireil session --channel tui"),
    code("%cireil prompt"),
    md(
        "## 5. Jobs, and what is said rather than run\n\n"
        "An agent of the original may carry `config/cron.toml` and `config/heartbeat.toml`: cireil runs their\n"
        "jobs and pulses on the kernel's runtime loop while the kernel lives, with the original's schedule\n"
        "syntax (`every`, a cron expression, `at`). `%cireil jobs` lists them with their next run;\n"
        "`%cireil jobs run ID` runs one now. What has no effect here (`summarization.toml`) is a warning in\n"
        "`%cireil dry-run`, at its file and line."
    ),
    code(
        '''
(d / "config" / "cron.toml").write_text("""
[[jobs]]
id = "morning-brief"
prompt = "Read /workspace/notes.txt and plan the day."
schedule = { cron = "30 7 * * 1-5" }
target = "internal:plans"
""")
(d / "config" / "summarization.toml").write_text('model = "gpt-4o-mini"')
%cireil jobs
'''
    ),
    code("%cireil dry-run"),
    code("%cireil session --as-is"),
]


if __name__ == "__main__":
    write_notebook(OUT, CELLS)
