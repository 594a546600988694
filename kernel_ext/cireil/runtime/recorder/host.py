"""What a replay and a fork need of the agent whose recorded turn they run again.

The recorder sits below the Agent (agent.py hands its turns to it), so it never imports it: these
protocols name the little it uses, the way engine/host.py's TurnHost does for a turn. The Agent
satisfies both.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self

from ..engine.host import TurnHost

if TYPE_CHECKING:
    from ..engine.engine import Engine
    from ..toolkit.tool import Tool
    from .recording import Recording


class ForkHost(TurnHost, Protocol):
    """A fork runs a new turn on the agent itself, in a session of its own, recorded with its origin."""

    @property
    def engine(self) -> Engine: ...

    @property
    def recording(self) -> Recording: ...

    def has_session(self, session_id: str) -> bool:
        """Whether a session of that id is live or kept in sessions.db (a fork takes a fresh id)."""


class ReplayHost(TurnHost, Protocol):
    """A replay runs on the agent itself (in place) or on a throwaway copy loaded the same way, with the
    same Python tools: the copy comes from the host's own `load`, so that exported tests, which hand
    `replay` nothing but the agent, keep working."""

    extra_tools: dict[str, Tool]

    @property
    def engine(self) -> Engine: ...

    @classmethod
    def load(cls, path: str | Path, *, tools: Iterable[Tool] = ()) -> Self: ...

    def close(self) -> None: ...
