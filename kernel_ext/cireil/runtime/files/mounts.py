"""A host folder shown inside the sandbox under /workspace.

The file model resolves paths through mounts and exec binds them; config/sandbox_config.py only reads
them from sandbox.toml, so the type lives here, below the config that fills it in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mount:
    source: Path  # host path, `~/` already expanded
    target: str  # relative; appears at /workspace/<target>
    mode: str  # "ro" | "rw"

    @property
    def read_only(self) -> bool:
        return self.mode == "ro"
