"""cireil: the CireilClaw agent runtime as a Jupyter kernel extension.

    %load_ext cireil            # in IPython / Jupyter
    agent = cireil.load(path)   # from Python

Importing the package stays cheap: IPython, widgets and the runtime load only when used.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

    from .runtime.agent import Agent, DryRunReport
    from .runtime.toolkit.tool import Tool
    from .testing.mcp_mock import McpMock

__all__ = [
    "Agent",
    "ConfigError",
    "Tool",
    "ToolContext",
    "ToolError",
    "__version__",
    "current_agent",
    "dry_run",
    "load",
    "load_demo",
    "mcp_mock",
    "mcp_mock_server",
    "sandbox_available",
    "sandbox_problem",
]


def load(path: Any, *, tools: Iterable[Tool] = ()) -> Agent:
    """Load the agent directory at `path`; raises cireil.ConfigError naming file:line on bad config.

    `tools` adds tools defined in Python (cireil.Tool); like plugin tools, each must be enabled in
    config/tools.toml by name.
    """
    from .kernel.display import register_running_shell
    from .runtime.agent import Agent

    agent = Agent.load(path, tools=tools)
    register_running_shell()  # its results render rich in a notebook even without %load_ext cireil
    return agent


def load_demo(*, tools: Iterable[Tool] = ()) -> Agent:
    """Load a fresh, throwaway copy of the bundled demo agent."""
    from .runtime.scaffold import copy_demo

    return load(copy_demo(), tools=tools)


def dry_run(path: Any, *, tools: Iterable[Tool] = ()) -> DryRunReport:
    """Validate an agent directory as loading would, without loading it; never raises for bad config."""
    from .runtime.agent import dry_run as _dry_run

    return _dry_run(path, tools=tools)


def sandbox_problem() -> str | None:
    """Why exec's bubblewrap sandbox cannot run on this machine (not installed, no user namespaces), or None.

    Checked once and cached, so notebooks can ask before choosing a backend.
    """
    from .runtime.exec.sandbox import bwrap_problem

    return bwrap_problem()


def sandbox_available() -> bool:
    """True when `backend = "bwrap"` can run commands here (Binder and many containers say False)."""
    return sandbox_problem() is None


def current_agent() -> Agent | None:
    """The agent `%cireil load` loaded in the running IPython shell, so magics and Python share it."""
    from .kernel.extension import current_agent as _current

    return _current()


def mcp_mock_server(
    source: Any, *, turn: int | None = None, server: str | None = None, host: str = "127.0.0.1", port: int = 0
) -> McpMock:
    """A mock MCP server (not started) answering recorded MCP traffic: `source` is an agent directory with
    `turn`, a wire log exported by `%cireil mcp log --export`, a cassette file or dict. ValueError if unusable."""
    from .testing.mcp_cassette import cassette_from
    from .testing.mcp_mock import McpMock

    return McpMock(cassette_from(source, turn=turn, server=server, recorded=_recorded_cassette), host, port)


@contextmanager
def mcp_mock(
    source: Any, *, turn: int | None = None, server: str | None = None, host: str = "127.0.0.1", port: int = 0
) -> Iterator[str | dict[str, str]]:
    """`with cireil.mcp_mock(AGENT_DIR, turn=3) as url:` a Streamable HTTP MCP server on loopback serving that
    turn's recorded MCP traffic: the URL (one server), else {server name: URL}. See mcp_mock_server."""
    with mcp_mock_server(source, turn=turn, server=server, host=host, port=port) as mock:
        urls = mock.urls
        yield next(iter(urls.values())) if len(urls) == 1 else urls


def _recorded_cassette(agent_dir: Path, turn: int) -> dict | None:
    """A recorded turn's cassette, read from the agent's recordings file (never created here)."""
    from .runtime.recorder.store import RECORDINGS_FILE, RecordingStore, RecordingStoreError

    path = agent_dir / RECORDINGS_FILE
    if not path.is_file():
        raise ValueError(f"{agent_dir}: no {RECORDINGS_FILE}; record a turn first")
    try:
        store = RecordingStore(path)
    except RecordingStoreError as exc:
        raise ValueError(str(exc)) from None
    try:
        if store.turn(turn) is None:
            raise ValueError(f"{path}: no turn {turn} (%cireil usage lists the recorded turns)")
        return store.cassette(turn)
    finally:
        store.close()


def __getattr__(name: str) -> Any:
    if name in ("ConfigError", "ToolError", "CireilError", "ConfigIssue"):
        from .runtime.base import errors

        return getattr(errors, name)
    if name == "Agent":
        from .runtime.agent import Agent

        return Agent
    if name in ("Tool", "ToolContext"):
        from .runtime.toolkit import tool

        return getattr(tool, name)
    raise AttributeError(f"module 'cireil' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    from .kernel.extension import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .kernel.extension import unload_ipython_extension as _unload

    _unload(ipython)
