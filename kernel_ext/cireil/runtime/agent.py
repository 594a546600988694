"""Agent: one loaded agent directory, its validated configuration, and calls to its tools.

Every call is a turn: at its start the configuration files are checked (a small read each) and
re-read when they changed, so an edit to tools.toml applies to the next call while a call in
progress keeps the tool set it started with. A broken edit makes calls fail with the ConfigError
until the file is fixed; nothing has to be restarted.
"""

from __future__ import annotations

import difflib
import hashlib
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import frontmatter, registry
from .config.mcp_config import MCP_FILE, McpServer, parse_mcp_config
from .config.sandbox_config import SANDBOX_FILE, SandboxConfig, parse_sandbox_config
from .config.tomlsource import TomlSyntaxError, read_toml
from .config.tools_config import TOOLS_FILE, ToolsConfig, parse_tools_config
from .errors import ConfigError, ConfigIssue, UnknownToolError
from .layout import BLOCK_NAMES, AgentLayout
from .loop import RUNTIME, Submitted
from .paths import SandboxPaths
from .result import ToolResult
from .session import Session
from .tool import Progress, Tool, ToolContext, execute

if TYPE_CHECKING:
    from .context import OpenedFilesContext
    from .mcp.discovery import Discovered

_WATCHED = (TOOLS_FILE, SANDBOX_FILE)


def _fingerprint(directory: Path, rel: str) -> bytes | None:
    """What the file holds, in short. Content, not mtime: timestamps are as coarse as a kernel tick,
    so two quick edits of the same size would otherwise look like no change at all."""
    try:
        data = (directory / rel).read_bytes()
    except FileNotFoundError:
        return None
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass
class Snapshot:
    """The validated configuration one turn runs with."""

    tools_config: ToolsConfig
    sandbox: SandboxConfig
    mcp_servers: list[McpServer]
    tools: dict[str, Tool]  # enabled tools, in tools.toml order
    fingerprints: dict[str, bytes | None]
    warnings: list[ConfigIssue] = field(default_factory=list)
    mcp: Discovered | None = None  # the connections and tools found at load; fixed until restart


@dataclass
class DryRunReport:
    directory: Path
    issues: list[ConfigIssue]
    tools: list[Tool]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def errors(self) -> list[ConfigIssue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[ConfigIssue]:
        return [i for i in self.issues if i.severity == "warning"]

    def as_dict(self) -> dict:
        return {
            "agent": str(self.directory),
            "ok": self.ok,
            "errors": [i.as_dict() for i in self.errors],
            "warnings": [i.as_dict() for i in self.warnings],
            "tools": [t.as_dict() for t in self.tools],
        }


def _read(layout: AgentLayout, rel: str, issues: list[ConfigIssue]):
    try:
        return read_toml(layout.directory, rel)
    except TomlSyntaxError as exc:
        issues.append(exc.issue)
        return None


def _content_warnings(layout: AgentLayout, *, skills: bool) -> list[ConfigIssue]:
    """Problems that would fail an agent turn or hide a skill, though the tools still work.

    Skill files are YAML; checking them costs a YAML import, so loading leaves them to dry-run.
    """
    out: list[ConfigIssue] = []
    d = layout.directory
    if not (d / "core.md").is_file():
        out.append(ConfigIssue("core.md", None, "missing: agent turns need the base instructions", severity="warning"))
    for name in BLOCK_NAMES:
        rel = f"blocks/{name}.md"
        try:
            text = (d / rel).read_text(encoding="utf-8")
        except FileNotFoundError:
            out.append(ConfigIssue(rel, None, "missing: agent turns need all five base blocks", severity="warning"))
            continue
        except (OSError, UnicodeDecodeError) as exc:  # a directory, unreadable, not UTF-8: warn, never crash
            out.append(ConfigIssue(rel, None, f"cannot be read: {exc}", severity="warning"))
            continue
        try:
            frontmatter.parse(text, frontmatter.BLOCK)
        except frontmatter.FrontmatterError as exc:
            out.append(ConfigIssue(rel, 1, f"invalid frontmatter: {exc}", severity="warning"))
    skills_dir = d / "skills"
    if skills and skills_dir.is_dir():
        for skill_file in sorted(skills_dir.glob("*/SKILL.md")):
            rel = skill_file.relative_to(d).as_posix()
            try:
                frontmatter.parse(skill_file.read_text(encoding="utf-8"), frontmatter.SKILL)
            except (frontmatter.FrontmatterError, UnicodeDecodeError, OSError) as exc:
                out.append(ConfigIssue(rel, 1, f"invalid frontmatter, skill omitted: {exc}", severity="warning"))
    return out


def _discover(servers: list[McpServer], source: Any) -> Discovered:
    """Connect to every server and list its tools, blocking (load is synchronous); httpx loads only here."""
    from .mcp.discovery import discover

    return RUNTIME.run(discover(servers, lambda server, message: source.issue(("servers", server.name), message)))


def read_config(
    layout: AgentLayout,
    *,
    with_content: bool = True,
    with_skills: bool = False,
    extra_tools: Mapping[str, Tool] | None = None,
    mcp_servers: list[McpServer] | None = None,
    mcp: Discovered | None = None,
) -> tuple[Snapshot | None, list[ConfigIssue]]:
    """Read and validate every configuration file; all problems are collected, none is raised.

    `extra_tools` are tools defined in Python by the caller (a notebook, a test); like plugin
    tools they are enabled only when tools.toml names them, and they never replace a built-in.
    `mcp_servers`, when given, are the servers discovered at load: mcp.toml is then not read again
    (a change to it needs a restart, spec "Reload") and `mcp` holds the tools discovered then.
    Otherwise every server is connected and its tools listed; the caller owns the connections of
    the snapshot returned (when none is returned, they are already closed).
    """
    issues: list[ConfigIssue] = []
    extra = dict(extra_tools or {})
    fingerprints = {rel: _fingerprint(layout.directory, rel) for rel in (*_WATCHED, MCP_FILE)}
    tools_src = _read(layout, TOOLS_FILE, issues)
    sandbox_cfg, sandbox_issues = parse_sandbox_config(_read(layout, SANDBOX_FILE, issues), layout.slug)
    issues += sandbox_issues
    fresh = mcp_servers is None  # connections opened here are closed here when the config is broken
    if mcp_servers is None:
        mcp_src = _read(layout, MCP_FILE, issues)
        mcp_servers, mcp_issues = parse_mcp_config(mcp_src)
        issues += mcp_issues
        if mcp_servers and not mcp_issues:
            mcp = _discover(mcp_servers, mcp_src)
            issues += mcp.issues
    mcp_tools = mcp.tools if mcp else {}
    if layout.runtime_root is not None:  # plugins.toml lives in the runtime root; imported only then
        from .plugins.loader import load_plugins

        plugins = load_plugins(layout.directory, layout.runtime_root, set(extra))
        issues += plugins.issues
        # a plugin may replace a built-in (allowOverride): it comes first, as Python-defined tools do
        extra = {**plugins.tools, **extra}
    tools_cfg = ToolsConfig()
    if tools_src is not None:
        tools_cfg, tool_issues = parse_tools_config(
            tools_src,
            known=(*registry.BUILTIN_NAMES, *extra, *mcp_tools),
            available=(*registry.implemented_names(), *extra, *mcp_tools),
            mcp_servers=[s.name for s in mcp_servers],
        )
        issues += tool_issues
    elif not any(i.file == TOOLS_FILE for i in issues):
        issues.append(ConfigIssue(TOOLS_FILE, None, "required file is missing"))
    if with_content:
        issues += _content_warnings(layout, skills=with_skills)
    if any(i.severity == "error" for i in issues):
        if fresh:
            _close_mcp(mcp)
        return None, issues
    tools = {name: _resolve(name, extra, mcp_tools) for name in tools_cfg.enabled_names}
    warnings = [i for i in issues if i.severity == "warning"]
    return Snapshot(tools_cfg, sandbox_cfg, mcp_servers, tools, fingerprints, warnings, mcp), issues


def _resolve(name: str, extra: Mapping[str, Tool], mcp_tools: Mapping[str, Tool]) -> Tool:
    if name in extra:
        return extra[name]
    if name in mcp_tools:
        return mcp_tools[name]
    return registry.builtin(name)


def _close_mcp(found: Discovered | None) -> None:
    if found is not None and found.clients:
        RUNTIME.run(found.close())


def _check_extra(tools: Iterable[Tool]) -> dict[str, Tool]:
    out: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in registry.BUILTIN_NAMES:
            raise ValueError(f"tool '{tool.name}' has the name of a built-in tool; give it another name")
        if tool.name in out:
            raise ValueError(f"two tools are named '{tool.name}'")
        out[tool.name] = replace(tool, origin="python") if tool.origin == "built-in" else tool
    return out


def dry_run(path: str | Path, *, tools: Iterable[Tool] = ()) -> DryRunReport:
    """Validate everything loading validates, without loading; never raises for bad config."""
    try:
        layout = AgentLayout.find(path)
    except ConfigError as exc:
        return DryRunReport(Path(path).absolute(), exc.issues, [])
    snapshot, issues = read_config(layout, with_skills=True, extra_tools=_check_extra(tools))
    if snapshot is not None:
        _close_mcp(snapshot.mcp)  # dry-run discovers, never calls
    return DryRunReport(layout.directory, issues, list(snapshot.tools.values()) if snapshot else [])


class Agent:
    """A loaded agent. Create with `cireil.load(path)`."""

    def __init__(self, layout: AgentLayout, snapshot: Snapshot, session: Session, extra_tools: dict[str, Tool]) -> None:
        self.layout = layout
        self.extra_tools = extra_tools
        self.session = session
        self._snapshot = snapshot
        self._lock = threading.Lock()
        self._pending_notices: list[str] = []
        self.generation = 0  # bumped whenever the enabled tool set changes
        self.tool_state: dict[str, Any] = {}  # what tools keep between calls (edit's dry-run previews)
        self.closed = False

    @classmethod
    def load(cls, path: str | Path, *, session: Session | None = None, tools: Iterable[Tool] = ()) -> Agent:
        extra = _check_extra(tools)
        layout = AgentLayout.find(path)
        snapshot, issues = read_config(layout, extra_tools=extra)
        if snapshot is None:
            raise ConfigError(issues)
        return cls(layout, snapshot, session or Session(id="notebook:main"), extra)

    # -- identity -------------------------------------------------------------------------------
    @property
    def directory(self) -> Path:
        return self.layout.directory

    @property
    def slug(self) -> str:
        return self.layout.slug

    @property
    def warnings(self) -> list[ConfigIssue]:
        return list(self._snapshot.warnings)

    def __repr__(self) -> str:
        return f"<cireil.Agent {self.slug!r} at {self.directory} tools={list(self._snapshot.tools)}>"

    # -- configuration --------------------------------------------------------------------------
    def refresh(self) -> list[str]:
        """Start-of-turn check: re-read changed config files. Returns notices; raises ConfigError."""
        with self._lock:
            old = self._snapshot
            current = {rel: _fingerprint(self.directory, rel) for rel in old.fingerprints}
            notices = self._pending_notices
            self._pending_notices = []
            if current[MCP_FILE] != old.fingerprints[MCP_FILE]:
                notices.append(
                    f"{MCP_FILE} changed: MCP servers are discovered at load; run "
                    "`%cireil restart` (or agent.restart()) to apply it"
                )
                old.fingerprints[MCP_FILE] = current[MCP_FILE]
            if all(current[rel] == old.fingerprints[rel] for rel in _WATCHED):
                return notices
            snapshot, issues = read_config(
                self.layout,
                with_content=False,
                extra_tools=self.extra_tools,
                mcp_servers=old.mcp_servers,  # MCP definitions stay fixed until restart
                mcp=old.mcp,
            )
            if snapshot is None:
                self._pending_notices = notices
                raise ConfigError(issues)
            snapshot.fingerprints[MCP_FILE] = old.fingerprints[MCP_FILE]
            snapshot.warnings = old.warnings + [w for w in snapshot.warnings if w not in old.warnings]
            if list(snapshot.tools) != list(old.tools):
                self.generation += 1
                notices.append(f"{TOOLS_FILE} changed: enabled tools are now {', '.join(snapshot.tools) or 'none'}")
            self._snapshot = snapshot
            return notices

    def restart(self) -> None:
        """Re-read everything, as a fresh load would (re-discovers MCP servers)."""
        snapshot, issues = read_config(self.layout, extra_tools=self.extra_tools)
        if snapshot is None:
            raise ConfigError(issues)
        with self._lock:
            if list(snapshot.tools) != list(self._snapshot.tools):
                self.generation += 1
            old, self._snapshot = self._snapshot, snapshot
        _close_mcp(old.mcp)

    def dry_run(self) -> DryRunReport:
        return dry_run(self.directory, tools=self.extra_tools.values())

    @property
    def tools(self) -> list[Tool]:
        """The enabled tools as of now (tools.toml is re-read if it changed)."""
        self.refresh_quietly()
        return list(self._snapshot.tools.values())

    def refresh_quietly(self) -> bool:
        """refresh() for places that only display; keeps notices for the next call. False if broken."""
        try:
            notices = self.refresh()
        except ConfigError:
            return False
        with self._lock:
            self._pending_notices = notices + self._pending_notices
        return True

    def tool(self, name: str) -> Tool:
        return self._lookup(self._snapshot, name)

    def _lookup(self, snapshot: Snapshot, name: str) -> Tool:
        tool = snapshot.tools.get(name) or snapshot.tools.get(name.replace("_", "-"))
        if tool is not None:
            return tool
        enabled = list(snapshot.tools)
        close = difflib.get_close_matches(name, enabled, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        mcp_tools = snapshot.mcp.tools if snapshot.mcp else {}
        known = name in registry.BUILTIN_NAMES or name in self.extra_tools or name in mcp_tools
        state = "not enabled in config/tools.toml" if known else "unknown"
        raise UnknownToolError(
            f"tool '{name}' is {state} for agent '{self.slug}'{hint}; enabled: {', '.join(enabled) or 'none'}"
        )

    # -- calls ----------------------------------------------------------------------------------
    def _begin(self, name: str, arguments: Mapping[str, Any] | None, kwargs: dict) -> tuple:
        if self.closed:
            raise RuntimeError("this agent has been closed; load it again")
        args = dict(arguments or {})
        args.update(kwargs)
        notices = self.refresh()
        snapshot = self._snapshot
        tool = self._lookup(snapshot, name)
        ctx = ToolContext(
            agent_dir=self.directory,
            slug=self.slug,
            paths=SandboxPaths(self.directory, snapshot.sandbox.mounts),
            sandbox=snapshot.sandbox,
            tools_config=snapshot.tools_config,
            session=self.session,
            extra={"tool_state": self.tool_state},
        )
        return tool, args, ctx, notices

    async def _run(self, tool: Tool, args: dict, ctx: ToolContext, notices: list[str]) -> ToolResult:
        started = time.perf_counter()
        data = await execute(tool, args, ctx)
        return ToolResult(tool.name, args, data, time.perf_counter() - started, notices, agent=self)

    def submit(self, tool: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Submitted:
        """Start a call on the runtime loop and return at once (what widget buttons use)."""
        return RUNTIME.submit(self._run(*self._begin(tool, arguments, kwargs)))

    def submit_watched(self, tool: str, arguments: Mapping[str, Any] | None, progress: Progress) -> Submitted:
        """submit() with a watcher of live output (exec's chunks), called on the runtime thread."""
        found, args, ctx, notices = self._begin(tool, arguments, {})
        ctx.progress = progress
        return RUNTIME.submit(self._run(found, args, ctx, notices))

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any) -> ToolResult:
        """Run one tool as the agent would and wait for its result. Safe inside a running kernel."""
        return RUNTIME.run(self._run(*self._begin(tool, arguments, kwargs)))

    async def acall(self, tool: str, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any) -> ToolResult:
        """Async form of call(); cancelling the awaiting task cancels the tool."""
        work = self._run(*self._begin(tool, arguments, kwargs))
        if RUNTIME.in_loop_thread():
            return await work
        return await RUNTIME.submit(work).wrapped()

    def context(self) -> OpenedFilesContext:
        """The opened files and pinned sections exactly as the next model call would show them (§7.2)."""
        from .context import opened_files_context

        return opened_files_context(self.session, SandboxPaths(self.directory, self._snapshot.sandbox.mounts))

    def close(self) -> None:
        """Stop using this agent; its MCP connections are closed (their sessions deleted)."""
        if not self.closed:
            self.closed = True
            _close_mcp(self._snapshot.mcp)
