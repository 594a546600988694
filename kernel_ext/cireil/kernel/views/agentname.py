"""What the chat bubbles call the agent: the turn view and the background notices both name it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...runtime.scaffold import is_demo_copy

if TYPE_CHECKING:
    from ...runtime.agent import Agent

DEMO_NAME = "Wren"  # what the demo's identity block and the tutorials call the bundled demo agent


def display_name(agent: Agent) -> str:
    """The name chat bubbles give the agent: "Wren" for a demo copy, the slug for any other agent."""
    return DEMO_NAME if is_demo_copy(agent.directory) else agent.slug
