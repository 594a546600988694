"""Agent directories: where one is, what its runtime root is, where its sandbox roots live."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ConfigError, ConfigIssue
from .paths import ROOTS

# the original's access rules and conditional blocks (runtime/sessions/conditions.py reads it, only when it exists)
CONDITIONS_FILE = "config/conditions.toml"
BLOCK_NAMES = ("soul", "identity", "person", "long-term", "style-notes")
# the schedulers' files (runtime/jobs/ reads them; the original-compatibility check only names them until they exist)
CRON_FILE = "config/cron.toml"
HEARTBEAT_FILE = "config/heartbeat.toml"
TASKS_FILE = "tasks/HEARTBEAT.md"


@dataclass(frozen=True)
class AgentLayout:
    directory: Path  # absolute
    slug: str
    runtime_root: Path | None  # <root> when the agent sits at <root>/agents/<slug>/

    @classmethod
    def find(cls, path: str | Path) -> AgentLayout:
        directory = Path(path).expanduser().absolute()
        if not directory.is_dir():
            what = "does not exist" if not directory.exists() else "is not a directory"
            raise ConfigError([ConfigIssue(str(path), None, f"agent directory {what}")])
        if not os.path.lexists(directory / "config" / "tools.toml"):  # a directory or FIFO: reported when read
            raise ConfigError(
                [
                    ConfigIssue(
                        "config/tools.toml",
                        None,
                        f"required file is missing: {directory} is not an agent directory "
                        f"(create one with `cireil init DIR`)",
                    )
                ]
            )
        root = directory.parent.parent if directory.parent.name == "agents" else None
        return cls(directory, directory.name, root)

    def root_dir(self, root: str) -> Path:
        assert root in ROOTS
        return self.directory / root
