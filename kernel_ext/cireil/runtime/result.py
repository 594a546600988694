"""ToolResult: the dict the agent sees, plus what a person needs to look at it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Set by the kernel extension while it is loaded: turns a result into an interactive view (a
# widget with action buttons) when its tool offers actions. The runtime never imports the kernel.
INTERACTIVE_VIEW: Callable[[ToolResult], dict | None] | None = None


@dataclass
class ToolResult:
    tool: str
    args: dict[str, Any]
    data: dict[str, Any]
    duration_s: float = 0.0
    notices: list[str] = field(default_factory=list)  # about the runtime, never shown to the agent
    agent: Any = field(default=None, repr=False, compare=False)  # the Agent that ran it, for follow-up calls
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

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        # Imported here, not at module level: rendering sits above the runtime and is only needed
        # when something is displayed.
        from ..render import result_bundle

        bundle = result_bundle(self)
        if INTERACTIVE_VIEW is not None and self.agent is not None:
            interactive = INTERACTIVE_VIEW(self)
            if interactive:
                # The widget view is shown where widgets run; text/plain and text/html stay as fallbacks.
                bundle = {**bundle, **interactive}
        return bundle
