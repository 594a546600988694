"""The live `%%cireil_agent --step` turns, one per agent, and the ways to end them.

A step-mode turn outlives its cell, so the agent cell, `%cireil stop`, closing an agent and unloading the
extension all have to know whether one is live. They learn it here, without ipywidgets: stepmode.py, which
draws the turn, loads the widgets and is imported only once a step-mode turn starts.

Ending it early: the Stop button, `%cireil stop`, or a kernel interrupt (■) while no cell runs. Each cancels
the turn, storing nothing of it in the session, as any interrupted turn. Between cells the kernel ignores
SIGINT; ipykernel re-installs `kernel.saved_sigint_handler` after every message, so cireil puts its own
handler there: with no step-mode turn live it does nothing, as before.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...runtime.agent import Agent
    from ...runtime.base.loop import Submitted


class LiveTurn(Protocol):
    """What ending a live turn needs of it (stepmode.StepTurn is one)."""

    @property
    def submitted(self) -> Submitted | None: ...

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the turn has ended and its end is drawn; False on timeout."""
        ...


# id(agent) -> its live step-mode turn: one at a time, as the engine runs one turn at a time anyway
LIVE: dict[int, LiveTurn] = {}
BUSY = (
    "a step-mode turn of this agent is still live in an earlier cell: settle its pending call with the buttons,"
    " or end it with its Stop button or `%cireil stop`"
)
END_WAIT_S = 10.0


def live_step_turn(agent: Agent) -> LiveTurn | None:
    """The agent's live `--step` turn, or None."""
    return LIVE.get(id(agent))


def stop_step_turn(agent: Agent) -> None:
    """`%cireil stop`: end the agent's live step-mode turn, storing nothing of it."""
    turn = LIVE.get(id(agent))
    if turn is None or turn.submitted is None:  # said, not raised: "make sure nothing waits" is a fine thing to ask
        print("no step-mode turn is live: nothing to stop (%cireil stop ends one started with %%cireil_agent --step)")
        return
    turn.submitted.cancel_and_wait()
    turn.wait(END_WAIT_S)
    print(f"stopped the step-mode turn of session {agent.session.id}: nothing of this turn is stored in the session")


def stop_all(agent: Agent) -> None:
    """The agent is closing (another load, the extension unloaded): its live step-mode turn ends first,
    as it would otherwise wait on a closed agent."""
    turn = LIVE.get(id(agent))
    if turn is not None and turn.submitted is not None:
        turn.submitted.cancel_and_wait()
        turn.wait(END_WAIT_S)


def hear_interrupts() -> None:
    """Let a kernel interrupt between cells reach live step-mode turns (see the module's docstring)."""
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None or not hasattr(kernel, "saved_sigint_handler"):
        return  # not ipykernel, or one that no longer works this way: Stop and %cireil stop still do
    previous = kernel.saved_sigint_handler
    if getattr(previous, "cireil_step_mode", False):
        return

    def on_interrupt(signum: int, frame: Any) -> None:
        for turn in list(LIVE.values()):  # only the cancel here: the drawing thread shows how it ended
            if turn.submitted is not None:
                turn.submitted.cancel()
        if callable(previous) and previous is not signal.default_int_handler:
            previous(signum, frame)  # someone else's idle handler keeps working

    on_interrupt.cireil_step_mode = True  # type: ignore[attr-defined]
    on_interrupt.previous = previous  # type: ignore[attr-defined]
    kernel.saved_sigint_handler = on_interrupt


def forget_interrupts(ip: Any) -> None:
    """The extension is unloaded: the kernel gets back the idle SIGINT handler it had before step mode."""
    kernel = getattr(ip, "kernel", None)
    handler = getattr(kernel, "saved_sigint_handler", None)
    if getattr(handler, "cireil_step_mode", False):
        kernel.saved_sigint_handler = handler.previous
