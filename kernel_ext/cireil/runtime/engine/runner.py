"""What the schedulers need of the engine that runs their turns: engine/scheduler.py's one-shot jobs and
jobs/job_runner.py's cron.toml jobs and heartbeat.

Engine implements it. The schedulers see the engine only through this protocol, so engine.py makes its
scheduler (and the Agent its job runner) without either of them importing engine.py back.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..sessions.state import Session
    from .host import EventSink, TurnHost
    from .turn import TurnOutcome


class TurnRunner(Protocol):
    @property
    def host(self) -> TurnHost:
        """The agent the turns run for."""

    @property
    def busy(self) -> bool:
        """A turn is running (a job that must not wait for it is skipped)."""

    async def run_turn(
        self,
        session: Session,
        user: dict | None,
        *,
        on_event: EventSink,
        provider: str | None = None,
        model: str | None = None,
        persist: bool = True,
    ) -> TurnOutcome:
        """One turn of `session`, after the running one ends; `persist=False` keeps it out of sessions.db."""

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run `coro` in the background on the runtime loop (from any thread)."""

    def deliver(self, target: str, content: str, *, attachments: Sequence[str] = (), source: str | None = None) -> None:
        """Put a message into `target`'s history, from another session or a job."""

    def background_event(self, event: dict) -> None:
        """Report an event of a turn nobody watches (kept for a while, shown by whoever listens)."""
