"""The one exception hierarchy of the runtime.

Tool failures are results, not exceptions: `ToolError` is raised inside a tool and turned into
`{"error", "hint", "success": false}` by the registry. `ConfigError` is what loading an agent raises
when its configuration is wrong; it carries every problem found, each with file and line.
"""

from __future__ import annotations

from dataclasses import dataclass

from .secrets import mask


class CireilError(Exception):
    """Base of every error cireil raises on purpose."""


class ToolError(CireilError):
    """A failure the agent should see as a result, with an optional hint on what to do instead."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in one configuration file. `file` is relative to the agent directory."""

    file: str
    line: int | None
    message: str
    key: str | None = None
    severity: str = "error"  # "error" stops loading; "warning" is reported and loading goes on

    def __str__(self) -> str:
        from .controls import visible  # a message quotes what the file says: show its controls, never run them

        where = f"{self.file}:{self.line}" if self.line else self.file
        prefix = "warning: " if self.severity == "warning" else ""
        # a message may quote a URL with its password, or a server's echo of a key
        return visible(mask(f"{where}: {prefix}{self.message}"))

    def as_dict(self) -> dict:
        return {
            "file": self.file,
            "line": self.line,
            "key": self.key,
            "message": mask(self.message),
            "severity": self.severity,
        }


class ConfigError(CireilError):
    """The agent's configuration is invalid; `issues` lists every problem, not only the first."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = [i for i in issues if i.severity == "error"] or list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))


class UnknownToolError(CireilError):
    """A call named a tool that is not enabled for this turn."""
