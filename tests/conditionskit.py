"""conditions.toml: the original's example file, the rule contexts the tests evaluate it in, and an agent that
has it (shared by the conditions and hostile runtime-root file tests)."""

from __future__ import annotations

from pathlib import Path

from cireil.runtime.sessions.conditions import RuleContext
from conftest import make_agent
from exec_agent import BINARIES

GUILD = "1174109840998400016"
# the original's example file, verbatim (upstream-formats §3.3)
EXAMPLE = f"""\
[blocks.after-hours]
action = "load"
when = ["discord:dm", "tui"]

[memories."/private/"]            # only in the TUI and in DMs
action = "allow"
when = ["tui", "discord:dm"]

[workspace."/shared/"]            # only in one guild
action = "allow"
when = "discord:guild:{GUILD}"

[workspace."/shared/nsfw/"]       # inside it, additionally only in NSFW channels
action = "deny"
when = "!discord:nsfw"
"""
TOOLS = """\
read = true
write = true
edit = true
list-dir = true
open-file = true
read-sections = true
respond = true
[exec]
enabled = true
"""
IN_GUILD = RuleContext("discord", guild=GUILD, channel_id="42")
IN_GUILD_NSFW = RuleContext("discord", guild=GUILD, channel_id="42", nsfw=True)
OTHER_GUILD = RuleContext("discord", guild="999", channel_id="43", nsfw=True)
TUI = RuleContext("tui")
DM = RuleContext("discord", channel_id="77")


def conditions_agent(root: Path, text: str = EXAMPLE) -> Path:
    agent = make_agent(root, TOOLS, name="cond")
    listed = ", ".join(f'"{b}"' for b in BINARIES)
    (agent / "config" / "sandbox.toml").write_text(f'backend = "bwrap"\n[bwrap]\nbinaries = [{listed}]\n')
    (agent / "config" / "conditions.toml").write_text(text)
    (agent / "workspace" / "shared" / "nsfw").mkdir(parents=True)
    (agent / "workspace" / "shared" / "plan.md").write_text("# Plan\n\nshared secret plan\n")
    (agent / "workspace" / "shared" / "nsfw" / "x.md").write_text("nsfw text\n")
    (agent / "memories" / "private").mkdir()
    (agent / "memories" / "private" / "diary.md").write_text("# Diary\n\ndear diary\n")
    (agent / "blocks" / "conditional").mkdir()
    (agent / "blocks" / "conditional" / "after-hours.md").write_text(
        '+++\ndescription = "Late at night"\n+++\nSpeak softly.\n'
    )
    return agent
