"""What conversation tools reach beyond the session: the store, the turn's trigger, and the people watching.

Every call an Agent makes carries one (a magic call outside a turn too, with no trigger message), so
read-session or list-sessions work from a cell exactly as they do inside an agent turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..sessions.store import SessionStore

# Events for whoever shows the conversation (the notebook's turn view); called on the runtime loop:
#   {"type": "respond", "sessionId", "messageId", "content", "attachments": [sandbox paths], "final"}
#   {"type": "react", "sessionId", "messageId", "emoji"}
#   {"type": "announce", "sessionId", "content", "jobId"}   (a scheduled job's result)
EventSink = Callable[[dict], None]


def no_events(event: dict) -> None:
    """The default: nobody is watching."""


class ToolRequests(Protocol):
    """What a tool may ask of the agent running it, beyond its own session: deliver a message to another
    session, queue a turn there, schedule a job. The engine's TurnHost (engine/host.py) extends it, so the
    agent that runs turns is also what a tool reaches, without the tools knowing the engine."""

    def deliver(
        self, target: str, content: str, *, attachments: Iterable[str] = (), source: str | None = None
    ) -> None: ...

    def queue_turn(self, session_id: str, prompt: str, *, source: str | None = None) -> None: ...

    def schedule(self, job: dict) -> None:
        """Persist a one-shot job (the schedule tool's shape) and arm it."""


@dataclass
class Conversation:
    store: SessionStore
    trigger_message_id: str | None = None  # the user message that started this turn; react's default target
    events: EventSink = no_events
    host: ToolRequests | None = field(default=None, repr=False)  # the agent, for respond elsewhere, invoke, schedule
