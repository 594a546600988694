"""The conversation tools through execute() on a real session store: a ToolContext with a Conversation, and
an assistant message that answers with the respond tool (shared by the conversation-tool and hostile search
tests)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cireil.runtime.config.sandbox_config import SandboxConfig
from cireil.runtime.config.tools_config import ExecConfig, ToolsConfig
from cireil.runtime.files.paths import SandboxPaths
from cireil.runtime.sessions import SessionStore
from cireil.runtime.sessions.messages import assistant_message
from cireil.runtime.toolkit.conversation import Conversation
from cireil.runtime.toolkit.registry import builtin
from cireil.runtime.toolkit.tool import ToolContext, execute


class Harness:
    def __init__(self, agent_dir: Path, store: SessionStore, session_id: str = "notebook:main", mounts=()) -> None:
        self.store = store
        self.session = store.open_session(session_id)
        self.events: list[dict] = []
        self.conversation = Conversation(store=store, events=self.events.append)
        self.ctx = ToolContext(
            agent_dir=agent_dir,
            slug=agent_dir.name,
            paths=SandboxPaths(agent_dir, list(mounts)),
            sandbox=SandboxConfig(mounts=list(mounts)),
            tools_config=ToolsConfig(exec=ExecConfig(enabled=False)),
            session=self.session,
            conversation=self.conversation,
        )

    def add(self, *messages: dict, commit: bool = True) -> None:
        self.session.history += messages
        if commit:
            self.store.commit(self.session, list(messages))

    def run(self, tool: str, args: dict) -> dict:
        return asyncio.run(execute(builtin(tool), args, self.ctx))


def respond(text: str) -> dict:
    return assistant_message([{"type": "toolCall", "id": "c", "name": "respond", "input": {"content": text}}])
