"""`%cireil watch`: one production turn, drawn as a recorded turn is (each model call, its tool calls and results,
tokens, timings: render/recording.py's StepsView) under a line saying where it came from and how far it got.
The watch magic updates it in place as the turn goes on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...render.html import FG_DIM, esc
from ...render.recording import StepsView
from ...render.safe import safe_bundle

if TYPE_CHECKING:
    from ...runtime.recorder.model import RecordedTurn


@dataclass
class WatchedTurnView:
    turn: RecordedTurn
    line: str  # runtime/attach/watch.py's describe(turn)

    def _steps(self) -> StepsView:
        python = f"[t for t in agent.turns('*') if t.id == {self.turn.id}][0].steps[i]"
        return StepsView(self.turn, python=python)

    def text(self) -> str:
        return f"{self.line}\n{self._steps().text()}"

    def html(self) -> str:
        return f'<div style="color:{FG_DIM};margin-top:6px">{esc(self.line)}</div>{self._steps().html()}'

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return safe_bundle({"text/plain": self.text(), "text/html": self.html()})
