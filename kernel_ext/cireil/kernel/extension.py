"""`%load_ext cireil` / `%unload_ext cireil`: register the `%cireil` magic and one hook, and take them back.

Loading stays cheap (no widgets, no HTTP client, no agent): everything heavier waits for the first
subcommand. Unloading removes every magic and hook registered here, closes the agent and stops the
runtime's event-loop thread, so `%reload_ext cireil` starts from a clean slate.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from . import display, tunables
from .magics import magictable
from .magics.liveturns import forget_interrupts
from .magics.subcommands import CireilMagics
from .magics.unknown import UnknownMagics

if TYPE_CHECKING:
    from ..runtime.agent import Agent

MAGIC = "cireil"
AGENT_MAGIC = "cireil_agent"

# id(shell) -> (controller, the %cireil function, the %%cireil_agent function or None, the %config Cireil object,
# the did-you-mean for mistyped cireil magics)
_LOADED: dict[int, tuple[CireilMagics, Any, Any, tunables.Cireil, UnknownMagics]] = {}


def load_ipython_extension(ip: Any) -> None:
    if id(ip) in _LOADED:
        return
    taken = magictable.clash(ip, MAGIC, ("line",))
    if taken is not None:
        print(f"cireil: not loaded: {taken} already exists and cireil never replaces a magic", file=sys.stderr)
        return
    controller = CireilMagics(ip)

    def cireil(line: str) -> None:
        return controller(line)

    cireil.__doc__ = controller.__call__.__doc__
    # `%cireil?` shows the help of every subcommand, built from commands.py when asked (IPython's inspector
    # calls an object's getdoc()), so %load_ext builds no parser
    cireil.getdoc = magic_doc  # type: ignore[attr-defined]
    magictable.add(ip, MAGIC, cireil, cell=False)
    agent_fn = None
    taken = magictable.clash(ip, AGENT_MAGIC, ("line", "cell"))
    if taken is None:

        def cireil_agent(line: str, cell: str | None = None) -> None:
            return controller.agent_cell(line, cell)

        cireil_agent.__doc__ = controller.agent_cell.__doc__
        cireil_agent.getdoc = agent_doc  # type: ignore[attr-defined]
        magictable.add(ip, AGENT_MAGIC, cireil_agent, cell=True)
        agent_fn = cireil_agent
    else:
        print(f"cireil: {taken} already exists and is left alone; use agent.turn() instead", file=sys.stderr)
    display.register(ip, widgets=True)
    ip.events.register("pre_run_cell", controller.pre_run_cell)
    unknown = UnknownMagics(ip, lambda: controller.agent)
    unknown.install()
    _LOADED[id(ip)] = (controller, cireil, agent_fn, tunables.register(ip), unknown)


def magic_doc() -> str:
    from .. import commands

    return commands.magic_doc()


def agent_doc() -> str:
    from .. import commands

    return commands.command_help(["%%cireil_agent"])


def unload_ipython_extension(ip: Any) -> None:
    from ..runtime.base.loop import RUNTIME

    entry = _LOADED.pop(id(ip), None)
    if entry is not None:
        controller, fn, agent_fn, settings, unknown = entry
        unknown.uninstall()
        tunables.unregister(ip, settings)
        ip.events.unregister("pre_run_cell", controller.pre_run_cell)
        magictable.remove(ip, MAGIC, fn)
        if agent_fn is not None:
            magictable.remove(ip, AGENT_MAGIC, agent_fn)
        controller.close()
    forget_interrupts(ip)  # step mode's interrupt handler, if it was used, goes too
    display.without_widgets(ip)  # the printers stay: the Python API's results render rich without the extension
    RUNTIME.stop()


def current_agent(ip: Any | None = None) -> Agent | None:
    """The agent `%cireil load` loaded in this shell (the running one by default), if any."""
    if ip is None:
        from IPython import get_ipython

        ip = get_ipython()
    entry = _LOADED.get(id(ip))
    return entry[0].agent if entry else None
