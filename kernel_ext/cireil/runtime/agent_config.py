"""An agent's configuration read as a whole: every file checked, every problem collected, nothing raised.

`read_config` gives the Snapshot one turn (or call) runs with: the enabled tools, the sandbox, the
MCP servers and their tools, conditions.toml's rules. `dry_run` checks everything loading checks,
and engine.toml and what the original would refuse, without loading. The Agent re-reads through
`fingerprint` when a watched file changed; this module never holds an agent.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base.errors import ConfigError, ConfigIssue
from .base.loop import RUNTIME
from .config.mcp_config import MCP_FILE, McpServer, exposure_warning, parse_mcp_config
from .config.sandbox_config import SANDBOX_FILE, SandboxConfig, parse_sandbox_config
from .config.tomlsource import TomlSyntaxError, read_config_bytes, read_toml
from .config.tools_config import TOOLS_FILE, ToolsConfig, parse_tools_config
from .files import frontmatter, safefs
from .files.layout import BLOCK_NAMES, CONDITIONS_FILE, CRON_FILE, HEARTBEAT_FILE, AgentLayout
from .toolkit import registry
from .toolkit.tool import Tool

if TYPE_CHECKING:
    from .engine.toollint import Finding
    from .mcp.discovery import Discovered
    from .sessions.conditions import Conditions

WATCHED = (TOOLS_FILE, SANDBOX_FILE, CONDITIONS_FILE)


def fingerprint(directory: Path, rel: str) -> bytes | None:
    """What the file holds, in short. Content, not mtime: timestamps are as coarse as a kernel tick,
    so two quick edits of the same size would otherwise look like no change at all."""
    try:
        data = read_config_bytes(directory, rel)
    except TomlSyntaxError as exc:  # a directory or FIFO: fingerprinted by the problem, reported on re-read
        data = str(exc).encode()
    if data is None:
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
    # config/conditions.toml, re-read on change; None without the file (the rules module then never loads)
    conditions: Conditions | None = None
    plugin_quotas: dict[str, int] = field(default_factory=dict)  # stateQuotaBytes per plugin (plugins.services)


@dataclass
class DryRunReport:
    directory: Path
    issues: list[ConfigIssue]
    tools: list[Tool]
    lint: list[Finding] = field(default_factory=list)  # definition lint of the enabled tools: never an error

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
            "lint": [f.as_dict() for f in self.lint],
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
            text = safefs.read_host_file(d / rel).decode("utf-8")
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
        from .files.paths import read_agent_file

        for skill_file in sorted(skills_dir.glob("*/SKILL.md")):
            rel = skill_file.relative_to(d).as_posix()
            try:
                # writable from exec: a symlink planted there must not lead out
                frontmatter.parse(read_agent_file(d, rel).decode("utf-8"), frontmatter.SKILL)
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
    fingerprints = {rel: fingerprint(layout.directory, rel) for rel in (*WATCHED, MCP_FILE)}
    tools_src = _read(layout, TOOLS_FILE, issues)
    sandbox_cfg, sandbox_issues = parse_sandbox_config(_read(layout, SANDBOX_FILE, issues), layout.slug)
    issues += sandbox_issues
    conditions_src = _read(layout, CONDITIONS_FILE, issues)
    conditions = None
    if conditions_src is not None:
        from .sessions.conditions import block_file_warnings, parse_conditions

        conditions, condition_issues = parse_conditions(conditions_src)
        issues += condition_issues
        if with_content:
            issues += block_file_warnings(layout.directory, conditions)
    if with_content:
        from .original.unhonoured import unhonoured_warnings

        issues += unhonoured_warnings(layout.directory, in_root=layout.runtime_root is not None)
        if any(os.path.lexists(layout.directory / rel) for rel in (CRON_FILE, HEARTBEAT_FILE)):
            # jobs/ loads only for an agent with a schedule: %load_ext of the others stays light
            from .jobs.config import schedule_issues
            from .jobs.heartbeat import interval_issues

            issues += schedule_issues(layout.directory) + interval_issues(layout.directory)
    fresh = mcp_servers is None  # connections opened here are closed here when the config is broken
    if mcp_servers is None:
        mcp_src = _read(layout, MCP_FILE, issues)
        mcp_servers, mcp_issues = parse_mcp_config(mcp_src)
        issues += mcp_issues
        exposed = exposure_warning(layout.directory, mcp_servers)
        if exposed is not None:
            issues.append(exposed)
        if mcp_servers and not mcp_issues:
            mcp = _discover(mcp_servers, mcp_src)
            issues += mcp.issues
    mcp_tools = mcp.tools if mcp else {}
    quotas: dict[str, int] = {}
    if layout.runtime_root is not None:  # plugins.toml lives in the runtime root; imported only then
        from .plugins.loader import load_plugins

        plugins = load_plugins(layout.directory, layout.runtime_root, set(extra), mcp_tools)
        issues += plugins.issues
        quotas = plugins.quotas
        # a plugin may replace a built-in (allowOverride): it comes first, as Python-defined tools do
        extra = {**plugins.tools, **extra}
    tools_cfg = ToolsConfig()
    if tools_src is not None:
        tools_cfg, tool_issues = parse_tools_config(
            tools_src,
            known=(*registry.BUILTIN_NAMES, *extra, *mcp_tools),
            mcp_servers=[s.name for s in mcp_servers],
            shared_root=layout.runtime_root is not None,  # str-replace read as edit there, the file left alone
        )
        issues += tool_issues
    elif not any(i.file == TOOLS_FILE for i in issues):
        issues.append(ConfigIssue(TOOLS_FILE, None, "required file is missing"))
    if with_content:
        issues += _content_warnings(layout, skills=with_skills)
        issues += system_issues(layout, "warning")
        issues += _engine_file_warning(layout)
    if any(i.severity == "error" for i in issues):
        if fresh:
            close_mcp(mcp)
        return None, issues
    tools = {name: _resolve(name, extra, mcp_tools) for name in tools_cfg.enabled_names}
    warnings = [i for i in issues if i.severity == "warning"]
    snapshot = Snapshot(tools_cfg, sandbox_cfg, mcp_servers, tools, fingerprints, warnings, mcp, conditions, quotas)
    return snapshot, issues


def _resolve(name: str, extra: Mapping[str, Tool], mcp_tools: Mapping[str, Tool]) -> Tool:
    if name in extra:
        return extra[name]
    if name in mcp_tools:
        return mcp_tools[name]
    return registry.builtin(name)


def close_mcp(found: Discovered | None) -> None:
    if found is not None and found.clients:
        RUNTIME.run(found.close())


def check_extra(tools: Iterable[Tool]) -> dict[str, Tool]:
    from .mcp.naming import reserved_clash

    out: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in registry.BUILTIN_NAMES:
            raise ValueError(f"tool '{tool.name}' has the name of a built-in tool; give it another name")
        clash = reserved_clash(tool.name)
        if clash is not None:  # checked before discovery: no Python tool can ever shadow an MCP tool
            raise ValueError(f"tool '{tool.name}' defined in Python: {clash}; give it another name")
        if tool.name in out:
            raise ValueError(f"two tools are named '{tool.name}'")
        out[tool.name] = replace(tool, origin="python") if tool.origin == "built-in" else tool
    return out


def _engine_issues(layout: AgentLayout) -> list[ConfigIssue]:
    """engine.toml only matters for agent turns: checked by dry-run and at each turn, not at load."""
    from .config.engine_config import ENGINE_FILE, parse_engine_config

    issues: list[ConfigIssue] = []
    source = _read(layout, ENGINE_FILE, issues)
    if issues:
        return issues
    if source is None:
        return [ConfigIssue(ENGINE_FILE, None, "missing: agent turns need a model provider", severity="warning")]
    return parse_engine_config(source)[1]


_NOT_A_FILE = ": agent turns fail until it is a regular TOML file"
_ENGINE_FILE = "config/engine.toml"  # engine_config.ENGINE_FILE, named without loading its parser at load


def _engine_file_warning(layout: AgentLayout) -> list[ConfigIssue]:
    """engine.toml is checked in full at dry-run and at each turn; load only says when it is not a file
    that can be read at all (a directory, FIFO or device), which no edit of its keys would fix."""
    try:
        read_config_bytes(layout.directory, _ENGINE_FILE)
    except TomlSyntaxError as exc:
        message = f"{exc.issue.message}{_NOT_A_FILE}"
        return [replace(exc.issue, message=message, severity="warning")]
    return []


def system_issues(layout: AgentLayout, severity: str = "error") -> list[ConfigIssue]:
    """The runtime root's config/system.toml (its `timezone` dates every turn): a bad one fails every turn,
    so load warns and dry-run refuses, at its line."""
    if layout.runtime_root is None:
        return []
    from .engine.timefmt import load_timezone

    try:
        load_timezone(layout.runtime_root)
    except ConfigError as exc:
        return [replace(i, severity=severity) for i in exc.issues]
    return []


def dry_run(path: str | Path, *, tools: Iterable[Tool] = ()) -> DryRunReport:
    """Validate everything loading validates, without loading; never raises for bad config."""
    try:
        layout = AgentLayout.find(path)
    except ConfigError as exc:
        return DryRunReport(Path(path).absolute(), exc.issues, [])
    snapshot, issues = read_config(layout, with_skills=True, extra_tools=check_extra(tools))
    if snapshot is not None:
        close_mcp(snapshot.mcp)  # dry-run discovers, never calls
    system = system_issues(layout, "warning")
    issues = [replace(i, severity="error") if i in system else i for i in issues]  # every turn would fail
    issues = [i for i in issues if not i.message.endswith(_NOT_A_FILE)]  # _engine_issues checks it in full
    issues += _engine_issues(layout)
    from .config.cireil_config import dry_run_issues

    issues += dry_run_issues(layout.directory)  # config/cireil.toml: [limits] bound every turn
    from .original.runtime_root import compatibility_warnings

    issues += compatibility_warnings(layout)  # what the original runtime would refuse, when it shares the root
    if snapshot is not None and any(i.severity == "error" for i in issues):
        snapshot = None
    enabled = list(snapshot.tools.values()) if snapshot else []
    from .engine.toollint import lint_priced

    return DryRunReport(layout.directory, issues, enabled, lint_priced(enabled))
