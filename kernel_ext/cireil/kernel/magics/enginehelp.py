"""What to do when a turn could not reach a model; both the agent cell and step mode start turns."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ...runtime.scaffold import is_demo_copy

if TYPE_CHECKING:
    from ...runtime.agent import Agent


def engine_help(agent: Agent, exc: Exception) -> str:
    """For a turn that could not reach a model: where engine.toml is, and the exact next step."""
    from ...runtime.config.engine_config import ENGINE_FILE, MissingApiKey

    if not isinstance(exc, MissingApiKey) and ENGINE_FILE not in str(exc):
        return ""
    path = agent.directory / ENGINE_FILE
    where = f"\nThe file is {path}"
    if is_demo_copy(agent.directory):
        where += " — the throwaway copy `%cireil load --demo` made, deleted when the kernel stops."
    named = re.search(r"environment variable (\S+), which", str(exc))
    key = (
        f"set the key in a cell (import os; os.environ[{named.group(1)!r}] = '...') and run this cell again"
        if named
        else f"fix {path} and run this cell again"
    )
    return (
        f"{where}\nNext step: {key} — or, with no key or network, run the offline stand-in model the way tutorial 06"
        " (notebooks/06-agent-turns.ipynb, section 1) does:\n"
        "    from cireil.testing.scripted_llm import ScriptedLLM\n"
        "    from cireil.testing.demo_model import wren\n"
        "    llm = ScriptedLLM(default=wren).start()\n"
        f"  then write a [local] provider table (apiBase = llm.base_url, defaultModel, isGlobalDefault = true)"
        f" into {path} in place of [default]."
    )
