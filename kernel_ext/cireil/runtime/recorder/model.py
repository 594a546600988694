"""Recorded turns as Python objects: `agent.turns(session)`, `turn.steps[i].request`, `.reply`, `.diff(prev)`."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .diff import StepDiff, diff_requests

if TYPE_CHECKING:
    from .store import RecordingStore, StepRow


@dataclass
class ToolCallRecord:
    step: int
    position: int
    id: str | None
    name: str
    arguments: dict
    result: dict
    duration: float  # seconds
    # step mode: what the person did ({"action": "approved" | "edited" | "skipped" | "mocked" | "refused"},
    # an edit also "asked": the arguments the model sent; `arguments` are what ran); None outside step mode
    review: dict | None = None

    @property
    def success(self) -> bool:
        return self.result.get("success") is not False

    def to_dict(self) -> dict:
        out = {"id": self.id, "name": self.name, "arguments": self.arguments, "result": self.result}
        if self.review is not None:  # only a step-mode call carries one
            out["review"] = self.review
        return out

    @property
    def action(self) -> str | None:
        """approved | edited | skipped | mocked | refused, or None when no one reviewed the call."""
        return (self.review or {}).get("action")


@dataclass
class RecordedStep:
    """One model call: the exact body sent, the reply as the model sent it, its timings and tool calls."""

    turn_id: int
    n: int
    reply: dict  # content, reasoning, tool_calls, finish_reason, usage (or error, for a retried call)
    estimate: int | None  # the engine's own token estimate of the request
    ttft: float | None  # seconds to the first streamed piece
    latency: float | None  # seconds for the whole model call
    calls: list[ToolCallRecord] = field(default_factory=list)
    _row: StepRow | None = field(default=None, repr=False)
    _store: RecordingStore | None = field(default=None, repr=False)
    _request: dict | None = field(default=None, repr=False)

    @property
    def request(self) -> dict:
        """The request body exactly as it was POSTed (rebuilt from the stored messages and tools)."""
        if self._request is None:
            assert self._row is not None and self._store is not None
            from .store import LISTS

            skeleton = self._row.request
            blobs = self._store.blobs([h for key in LISTS for h in skeleton.get(key, ())])
            body = dict(skeleton)
            for key in LISTS:
                if key in skeleton:
                    body[key] = [_item(blobs, h) for h in skeleton[key]]
            self._request = body
        return self._request

    @property
    def message_hashes(self) -> list[str]:
        request = self._row.request if self._row else {}
        return list(request.get("messages") or request.get("input") or [])

    @property
    def tokens_in(self) -> int | None:
        return (self.reply.get("usage") or {}).get("prompt_tokens")

    @property
    def tokens_out(self) -> int | None:
        return (self.reply.get("usage") or {}).get("completion_tokens")

    @property
    def tool_calls(self) -> list[dict]:
        return list(self.reply.get("tool_calls") or ())

    @property
    def retried(self) -> bool:
        return "error" in self.reply

    def diff(self, prev: RecordedStep | None) -> StepDiff:
        """What changed in the request since `prev` (None: everything is new)."""
        return diff_requests(prev.request if prev is not None else None, self.request)


def _item(blobs: dict[str, Any], digest: str) -> dict:
    """A stored message or tool; a note in its place when its blob is gone or is not an object (hand-edited)."""
    found = blobs.get(digest)
    if isinstance(found, dict):
        return found
    what = "is missing from the blobs table" if found is None else "is not a JSON object"
    return {"not loaded": f"blob {digest} {what}"}


@dataclass
class RecordedTurn:
    id: int
    session_id: str
    started: float  # unix time
    model: str
    provider: str
    user: dict | None
    ended: str  # respond | no-response | interrupted | error | running
    error: str | None
    usage: dict
    seconds: float | None
    step_count: int
    _store: RecordingStore | None = field(default=None, repr=False)
    _steps: list[RecordedStep] | None = field(default=None, repr=False)
    origin: dict | None = None  # a fork's origin: {"turn", "step", "session"}
    problems: list[str] = field(default_factory=list)  # steps or calls left out: their rows could not be read
    _cassette: dict | bool | None = field(default=False, repr=False)  # False: not loaded yet

    @property
    def reconstructed(self) -> bool:
        """Rebuilt afterwards from sessions.db (attach/reconstruct.py): each request is what cireil builds for that
        history today, not the bytes that were sent; the marker is a key of `origin` (no column, any format)."""
        return isinstance(self.origin, dict) and isinstance(self.origin.get("reconstructed"), dict)

    @property
    def cassette(self) -> dict | None:
        """The turn's MCP traffic (each server's tools/list and every tools/call with its answer, in the shape
        of cireil.testing.mcp_cassette), or None for a turn recorded before cireil kept it (format 2)."""
        if self._cassette is False:
            self._cassette = self._store.cassette(self.id) if self._store is not None else None
        return self._cassette  # type: ignore[return-value]

    @property
    def steps(self) -> list[RecordedStep]:
        """The recorded steps that read well; `problems` names each left out (a damaged row)."""
        if self._steps is None:
            assert self._store is not None
            calls: dict[int, list[ToolCallRecord]] = {}
            found, bad_calls = self._store.calls(self.id)
            for c in found:
                calls.setdefault(c["step"], []).append(ToolCallRecord(**c))
            rows, bad_steps = self._store.steps(self.id)
            self.problems = [self._store.row_problem(self.id, p) for p in bad_steps + bad_calls]
            self._steps = [
                RecordedStep(r.turn_id, r.n, r.reply, r.estimate, r.ttft, r.latency, calls.get(r.n, []), r, self._store)
                for r in rows
            ]
        return self._steps

    def check_whole(self) -> None:
        """ValueError (one line) when a step or call of this turn could not be read: replaying, forking or
        exporting the rest would not be the recorded turn."""
        if self._steps is None:
            self.steps  # noqa: B018 (loading them finds the problems)
        if self.problems:
            raise ValueError(self.problems[0])

    @property
    def calls(self) -> list[ToolCallRecord]:
        return [c for s in self.steps for c in s.calls]

    @property
    def text(self) -> str:
        """The user's message of this turn, as text."""
        content = self.user.get("content") if isinstance(self.user, dict) else None
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            return ""
        return "".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and not p.get("note") and isinstance(p.get("text"), str)
        )

    @property
    def when(self) -> str:
        try:
            return datetime.fromtimestamp(self.started, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        except (OverflowError, OSError, ValueError, TypeError):  # a turn from a file edited by hand
            return "an unknown time"

    def to_dict(self) -> dict:
        """What replaying the turn needs, as JSON-ready data (an exported test carries it)."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "started": self.started,
            "model": self.model,
            "provider": self.provider,
            "user": self.user,
            "ended": self.ended,
            "usage": self.usage,
            "steps": [
                {
                    "n": s.n,
                    "reply": s.reply,
                    "calls": [c.to_dict() for c in s.calls],
                }
                for s in self.steps
            ],
        } | ({"cassette": self.cassette} if self.cassette is not None else {})

    @classmethod
    def from_dict(cls, data: dict) -> RecordedTurn:
        """A turn from `to_dict`'s data, without a store: enough to replay it (requests are not kept)."""
        steps = [
            RecordedStep(
                data["id"],
                s["n"],
                s["reply"],
                None,
                None,
                None,
                [
                    ToolCallRecord(
                        s["n"], i, c.get("id"), c["name"], c.get("arguments") or {}, c["result"], 0.0, c.get("review")
                    )
                    for i, c in enumerate(s.get("calls") or ())
                ],
                _request={},
            )
            for s in data["steps"]
        ]
        return cls.from_data(data, steps)

    @classmethod
    def from_data(cls, data: dict, steps: list[RecordedStep]) -> RecordedTurn:
        """A turn without a store, from its JSON data (`to_dict`'s, or a portable file's) and its steps."""
        return cls(
            data["id"],
            data["session_id"],
            data.get("started", 0.0),
            data.get("model", ""),
            data.get("provider", ""),
            data.get("user"),
            data.get("ended", ""),
            data.get("error"),
            data.get("usage") or {},
            data.get("seconds"),
            data.get("step_count", len(steps)),
            None,
            _steps=steps,
            _cassette=data.get("cassette") if isinstance(data.get("cassette"), dict) else None,
        )

    def __repr__(self) -> str:
        return f"<RecordedTurn {self.id} {self.session_id} {self.step_count} steps, {self.ended}: {self.text[:40]!r}>"


def load_turns(store: RecordingStore, session_id: str | None = None) -> list[RecordedTurn]:
    """The turns whose rows read well; each one left out is named once, in one line on stderr."""
    turns = [_turn(store, row) for row in store.turns(session_id)]
    for turn_id, line in list(store.skipped.items()):
        if turn_id not in store.told:
            store.told.add(turn_id)
            print(f"cireil: {line}", file=sys.stderr)
    return turns


def load_turn(store: RecordingStore, turn_id: int) -> RecordedTurn | None:
    row = store.turn(turn_id)
    return _turn(store, row) if row else None


def _turn(store: RecordingStore, row: dict[str, Any]) -> RecordedTurn:
    return RecordedTurn(
        row["id"],
        row["session_id"],
        row["started"],
        row["model"],
        row["provider"],
        row["user"],
        row["ended"],
        row["error"],
        row["usage"],
        row["seconds"],
        row["steps"],
        store,
        origin=row.get("origin"),
    )
