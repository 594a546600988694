"""Saved calls: the calls a person made to each tool of an agent (magic, form or Python), to look at and re-run.

Kept in memory for the life of the agent object (so: per kernel), newest first, a bounded number per
tool. Agent turns' calls are not kept here: they are in the session's history. The arguments are a
deep copy, so a caller mutating its dict later does not rewrite history.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .result import ToolResult

PER_TOOL = 50
SUMMARY_CHARS = 120
MAX_ARGUMENT_CHARS = 256 * 1024  # larger arguments are summarised, not kept (a whole file written, say)


@dataclass(frozen=True)
class SavedCall:
    tool: str
    arguments: dict[str, Any] | None  # None: too large to keep (see `kept`)
    at: float  # time.time() of the call's end
    success: bool
    summary: str  # one line: the first text of the result, or its error
    duration_s: float
    kept: bool = True

    @property
    def when(self) -> str:
        return datetime.fromtimestamp(self.at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")

    def label(self) -> str:
        """One line for a picker: time, outcome, arguments, summary."""
        local = datetime.fromtimestamp(self.at).strftime("%H:%M:%S")
        args = _compact(self.arguments) if self.kept else "(arguments too large to keep)"
        return f"{local} {'✓' if self.success else '✖'} {_cut(args, 60)} → {_cut(self.summary, 60)}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "arguments": self.arguments,
            "when": self.when,
            "success": self.success,
            "summary": self.summary,
            "duration_s": round(self.duration_s, 4),
        }


class CallHistory:
    def __init__(self, per_tool: int = PER_TOOL) -> None:
        self.per_tool = per_tool
        self._calls: dict[str, deque[SavedCall]] = {}
        self._lock = threading.Lock()  # calls end on the runtime thread; forms read on the kernel's

    def record(self, result: ToolResult) -> SavedCall:
        arguments: dict[str, Any] | None
        try:
            kept = len(json.dumps(result.args, default=str)) <= MAX_ARGUMENT_CHARS
        except (TypeError, ValueError, RecursionError):
            kept = False
        arguments = copy.deepcopy(result.args) if kept else None
        saved = SavedCall(
            result.tool, arguments, time.time(), result.success, summarize(result.data), result.duration_s, kept
        )
        with self._lock:
            ring = self._calls.setdefault(result.tool, deque(maxlen=self.per_tool))
            ring.appendleft(saved)
        return saved

    def calls(self, tool: str) -> list[SavedCall]:
        """Newest first."""
        with self._lock:
            return list(self._calls.get(tool, ()))


def summarize(data: dict[str, Any]) -> str:
    if data.get("success") is False:
        return "failed: " + _first_line(str(data.get("error", "")))
    content = data.get("content")
    if isinstance(content, list):  # MCP: the first text block (JSON text in one line)
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str) and block["text"].strip():
                return _one_line(block["text"])
    for key in ("text", "message", "output", "stdout", "content", "path"):
        if isinstance(data.get(key), str) and data[key].strip():
            return _first_line(data[key])
    return _cut(_compact(data), SUMMARY_CHARS)


def _one_line(text: str) -> str:
    if text.lstrip()[:1] in ("{", "[") and len(text) <= MAX_ARGUMENT_CHARS:
        try:
            return _cut(_compact(json.loads(text)), SUMMARY_CHARS)
        except ValueError:
            pass
    return _first_line(text)


def _first_line(text: str) -> str:
    return _cut(text.strip().splitlines()[0] if text.strip() else "", SUMMARY_CHARS)


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
