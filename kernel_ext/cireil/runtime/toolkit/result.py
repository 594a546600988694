"""ToolResult: the dict the agent sees, plus what a person needs to look at it.

It does not show itself: in IPython the kernel layer registers its view with the shell's formatters
(kernel/display.py); render/ turns it into a MIME bundle for everyone else (the CLI, forms, tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolResult:
    tool: str
    args: dict[str, Any]
    data: dict[str, Any]
    duration_s: float = 0.0
    notices: list[str] = field(default_factory=list)  # about the runtime, never shown to the agent
    agent: Any = field(default=None, repr=False, compare=False)  # the agent (a turn: its host) that ran it
    # what only the person's view shows, never the agent (an MCP call's wire exchanges and output schema)
    inspect: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def success(self) -> bool:
        """False exactly when the result counts as a failure (reference §3)."""
        return self.data.get("success") is not False

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def __repr__(self) -> str:
        return f"<ToolResult {self.tool} success={self.success} keys={sorted(self.data)}>"
