"""Session state the tools read and change. In memory for now; persistence comes with the turn loop."""

from __future__ import annotations

from dataclasses import dataclass, field

PLATFORMS = ("discord", "matrix", "tui", "internal", "remote")


@dataclass
class Session:
    """One conversation. Notebook and CLI sessions are adapter-owned, hence platform "remote" (spec)."""

    id: str
    platform: str = "remote"
    opened_files: list[str] = field(default_factory=list)
    active_sections: dict[str, set[str]] = field(default_factory=dict)

    def forget_sections(self, sandbox_path: str) -> None:
        """After a successful write the file renders whole again if it is still open (reference §3)."""
        self.active_sections.pop(sandbox_path, None)
