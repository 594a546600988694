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
    # path -> pinned section ids, in the order they were activated (the context renders them so)
    active_sections: dict[str, list[str]] = field(default_factory=dict)
    # media read by the agent, queued for its next model call: {type, mediaType, path, data}
    pending_media: list[dict] = field(default_factory=list)

    def forget_sections(self, sandbox_path: str) -> None:
        """After a successful write the file renders whole again if it is still open (reference §3)."""
        self.active_sections.pop(sandbox_path, None)
