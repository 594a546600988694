"""`%cireil watch [--timeout S]`: the running original's turns, live in the cell, until interrupted.

Each production turn the proxy records gets one display, updated in place (its display handle) each time a
model call comes in and when it ends. Interrupting the kernel (■) ends the watch with one line; nothing runs
on after it (watching only reads the recordings file).
"""

from __future__ import annotations

from argparse import Namespace
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.display import display

from ..views.watched import WatchedTurnView

if TYPE_CHECKING:
    from ...runtime.agent import Agent


def watch(agent: Agent, o: Namespace) -> None:
    from ...runtime.attach.watch import describe

    try:
        turns = agent.watch(timeout=o.timeout)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    handles: dict[int, Any] = {}
    print(f"watching {agent.directory} for production turns (after `cireil attach`); interrupt (■) stops")
    try:
        for turn in turns:
            view = WatchedTurnView(turn, describe(turn))
            handle = handles.get(turn.id)
            if handle is None:
                handles[turn.id] = display(view, display_id=True)
            else:
                handle.update(view)
    except KeyboardInterrupt:
        print(f"watch stopped: {len(handles)} production turn(s) shown")
        return
    finally:
        turns.close()
    print(f"watch ended after {o.timeout:g} s: {len(handles)} production turn(s) shown")
