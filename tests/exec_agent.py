"""An agent directory with exec enabled and a sandbox.toml, for the exec tests; and the host processes still
running with a marker in their command line (what outlived a call)."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import make_agent

BINARIES = ["sh", "bash", "cat", "head", "ls", "env", "echo", "sleep", "true", "false", "python3", "printf"]

TOOLS = """\
list-dir = true
write = true
session-info = true
"""


def exec_agent(
    root: Path,
    *,
    exec_table: str = "",
    binaries: list[str] | None = None,
    backend: str = "bwrap",
    mounts: str = "",
    name: str = "execagent",
) -> Path:
    table = "[exec]\nenabled = true\n" + exec_table
    agent = make_agent(root, TOOLS + table, name=name)
    listed = ", ".join(f'"{b}"' for b in (BINARIES if binaries is None else binaries))
    (agent / "config" / "sandbox.toml").write_text(f'backend = "{backend}"\n[bwrap]\nbinaries = [{listed}]\n{mounts}')
    return agent


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found
