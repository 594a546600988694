"""An agent with the reading tools enabled, for the read / open-file / context tests; and a 1x1 PNG."""

from __future__ import annotations

from pathlib import Path

from conftest import make_agent

READ_TOOLS = """\
list-dir = true
write = true
read = true
open-file = true
read-sections = true
close-file = true
read-skill = true
"""

FILLER = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. " * 2 + "\n") * 50

LONG_DOC = (
    "# Guide\n\nIntro.\n\n## Setup\n\nSetup text.\n\n### Install\n\nInstall text.\n\n"
    "## Usage\n\n" + FILLER + "\n## Setup\n\nSecond setup.\n"
)

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    + "1f15c4890000000d49444154789c63f8ffff3f0005fe02fea7d6a0e80000000049454e44ae426082"
)


def reading_agent(root: Path) -> Path:
    agent = make_agent(root, READ_TOOLS)
    (agent / "workspace" / "long.md").write_text(LONG_DOC)
    return agent
