"""Session state: the conversation and what the tools read and change.

A Session is the in-memory form; runtime.sessions.store persists it (one sessions.db per agent).
Tools change `opened_files`, `active_sections` and `pending_media` in place; the engine appends
to `history`, replaces the output of superseded reads in place (`rewrite_output`), and commits through the store.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Protocol


class Grantable(Protocol):
    """What a session's grant reads of a tool (toolkit/tool.py's Tool): sessions sit below the tools."""

    @property
    def name(self) -> str: ...

    @property
    def always_granted(self) -> bool: ...


def platform_of(session_id: str) -> str:
    """Named internal and scheduled sessions are "internal"; notebook and CLI sessions are adapter-owned."""
    if session_id.startswith(("internal:", "cron:")):
        return "internal"
    for prefix in ("discord", "matrix"):
        if session_id.startswith(prefix + ":"):
            return prefix
    if session_id == "tui":
        return "tui"
    return "remote"


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
    history: list[dict] = field(default_factory=list)  # sessions/messages.py dicts, oldest first
    cursor: int = 0  # index into history before which messages were pruned away (reference §7.4)
    summaries: list[dict] = field(default_factory=list)  # prune-boundaries topic summaries
    last_activity: str | None = None  # ISO time of the last user message
    created: str | None = None
    provider: str | None = None  # the session's choice, overriding engine.toml's default
    model: str | None = None
    # (cursor, ...) positions the prune warning was already given at, so it is given once (§7.3)
    meta: dict[str, Any] = field(default_factory=dict)
    # what sessions.db held when this session was read or last written: the store compares before it writes
    store_state: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    # Remote sessions only: the tools this session may use, or None for every enabled tool (spec: "Remote-
    # session grants still filter and authorize enabled MCP tools as harness tools"). A grant narrows what
    # tools.toml enables, never widens it. Held in memory: the adapter (the notebook) grants it, as a channel
    # adapter does when a session connects; it is not written to sessions.db.
    grant: frozenset[str] | None = None

    # Stored messages a model call changed in place since the last checkpoint (a read superseded, which the
    # original saves): (message, its output before). restore() puts them back, as the original's turn snapshot
    # does; a checkpoint (state()) makes them final.
    rewritten: list[tuple[dict, Any]] = field(default_factory=list, repr=False, compare=False)

    # id() of stored messages changed in place since the session was last written: the store encodes only
    # these and the messages appended (sessions/rowtext.py). Change a stored message in place through
    # touch(), or replace it in `history` with a new dict (which the store notices by itself).
    touched: set[int] = field(default_factory=set, repr=False, compare=False)
    # the tool call ids of `history` as last read, for the next reply's (messages.unique_call_ids)
    call_ids: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def touch(self, message: dict) -> None:
        """Say that `message`, a message of `history`, was changed in place: the next write stores it."""
        self.touched.add(id(message))

    def rewrite_output(self, message: dict, output: Any) -> None:
        """Give a message of `history` another output in place: the message stays the one the store knows."""
        self.rewritten.append((message, message.get("output")))
        message["output"] = output
        self.touch(message)

    def allows(self, tool: Grantable) -> bool:
        """Whether the grant lets a turn use `tool`; a tool declared `always_granted` (a way to end the turn) is
        never withheld."""
        return self.grant is None or tool.name in self.grant or tool.always_granted

    def forget_sections(self, sandbox_path: str) -> None:
        """After a successful write the file renders whole again if it is still open (reference §3)."""
        self.active_sections.pop(sandbox_path, None)

    def state(self) -> dict[str, Any]:
        """Everything but the history, as a deep copy: what a turn restores when it is interrupted. A checkpoint:
        restore() goes back to the latest one."""
        self.rewritten.clear()
        return copy.deepcopy(
            {
                "opened_files": self.opened_files,
                "active_sections": self.active_sections,
                "pending_media": self.pending_media,
                "cursor": self.cursor,
                "summaries": self.summaries,
                "last_activity": self.last_activity,
                "meta": self.meta,
                "history_len": len(self.history),
            }
        )

    def restore(self, state: dict[str, Any]) -> None:
        while self.rewritten:  # newest first: a message changed twice gets its first output back
            message, output = self.rewritten.pop()
            message["output"] = output
            self.touch(message)
        state = copy.deepcopy(state)
        del self.history[state.pop("history_len") :]
        for key, value in state.items():
            setattr(self, key, value)


def not_granted(name: str, session: Session) -> dict:
    """The result of a call the session's grant does not allow (a failure, as for any refused call)."""
    granted = ", ".join(sorted(session.grant or ())) or "none"
    return {
        "error": f"Tool '{name}' is not granted to session '{session.id}' (granted: {granted}).",
        "hint": "Use a granted tool, or ask the person to widen this session's grant.",
        "success": False,
    }
