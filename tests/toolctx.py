"""A ToolContext for calling built-in tools directly through execute(), without loading an agent (shared by the
built-in tool, edit, path-race and temp-file tests)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cireil.runtime.config.sandbox_config import SandboxConfig
from cireil.runtime.config.tools_config import ExecConfig, ToolsConfig
from cireil.runtime.files.paths import SandboxPaths
from cireil.runtime.sessions.state import Session
from cireil.runtime.toolkit.registry import builtin
from cireil.runtime.toolkit.tool import Tool, ToolContext, execute


def make_ctx(agent: Path, *, mounts=(), exec_enabled=False, binaries=(), session: Session | None = None):
    return ToolContext(
        agent_dir=agent,
        slug=agent.name,
        paths=SandboxPaths(agent, list(mounts)),
        sandbox=SandboxConfig(binaries=tuple(binaries), mounts=list(mounts)),
        tools_config=ToolsConfig(exec=ExecConfig(enabled=exec_enabled)),
        session=session or Session(id="test:1"),
    )


def run(tool: str | Tool, args, ctx: ToolContext) -> dict:
    t = builtin(tool) if isinstance(tool, str) else tool
    return asyncio.run(execute(t, args, ctx))
