"""An agent with the reading tools enabled, for the read / open-file / context tests."""

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


def reading_agent(root: Path) -> Path:
    agent = make_agent(root, READ_TOOLS)
    (agent / "workspace" / "long.md").write_text(LONG_DOC)
    return agent
