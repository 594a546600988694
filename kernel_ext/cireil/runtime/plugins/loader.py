"""Loading the plugins plugins.toml lists (Python ones imported, the original's JS ones run by jsplugins.py) and
collecting their tools, with every refusal as a ConfigIssue."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from ..base.errors import ConfigIssue
from ..config.tomlsource import TomlSource, TomlSyntaxError, read_toml
from ..mcp.naming import reserved_clash
from ..outline import register_extractor, unregister_extractor
from ..toolkit import registry
from ..toolkit.tool import Tool
from . import jsplugins
from .config import PLUGINS_FILE, PluginEntry, parse_plugins_config
from .model import Plugin
from .services import DEFAULT_QUOTA

GROUP = "cireil.plugins"


@dataclass
class LoadedPlugins:
    tools: dict[str, Tool] = field(default_factory=dict)
    issues: list[ConfigIssue] = field(default_factory=list)
    quotas: dict[str, int] = field(default_factory=dict)  # plugin name -> stateQuotaBytes (services.state)


def load_plugins(
    agent_dir: Path, runtime_root: Path | None, taken: set[str], mcp_tools: Collection[str] = ()
) -> LoadedPlugins:
    """The tools of every listed plugin. `taken` are names already used by tools defined in Python,
    `mcp_tools` the local names of the MCP tools discovered (a plugin may never take one, nor the prefix)."""
    out = LoadedPlugins()
    if runtime_root is None:
        return out  # an agent outside <root>/agents/ has no runtime root, hence no plugins.toml
    try:
        source = read_toml(agent_dir, PLUGINS_FILE)
    except TomlSyntaxError as exc:
        out.issues.append(exc.issue)
        return out
    entries, out.issues = parse_plugins_config(source)
    owner: dict[str, str] = {}
    failed: list[tuple[jsplugins.JsPlugin, str]] = []
    for entry in entries:
        assert source is not None
        where = ("plugins", entry.index)
        if _is_js(entry, runtime_root):
            _load_js(entry, runtime_root, source, owner, taken, mcp_tools, out, failed)
            continue
        try:
            plugin = _import(entry, runtime_root)
        except Exception as exc:  # any failure of foreign code: name the plugin and what went wrong
            out.issues.append(source.issue(where, f"{entry.label} failed to import: {type(exc).__name__}: {exc}"))
            continue
        _collect(plugin, entry, source, owner, taken, mcp_tools, out)
        out.quotas[plugin.name] = entry.state_quota or DEFAULT_QUOTA
    known = {*registry.BUILTIN_NAMES, *taken, *mcp_tools, *out.tools}
    for name, tool in jsplugins.stand_ins(agent_dir, known, failed).items():
        if reserved_clash(name, mcp_tools) is None:
            out.tools[name] = tool
    return out


def _is_js(entry: PluginEntry, runtime_root: Path) -> bool:
    """The original's JS plugin: a package no Python entry point provides, or a folder with a package.json
    and no __init__.py (a Python plugin folder wins, as before)."""
    if entry.package is not None and entry_points(group=GROUP, name=entry.package):
        return False
    return jsplugins.is_js_entry(entry, runtime_root)


def _load_js(
    entry: PluginEntry,
    runtime_root: Path,
    source: TomlSource,
    owner: dict[str, str],
    taken: set[str],
    mcp_tools: Collection[str],
    out: LoadedPlugins,
    failed: list[tuple[jsplugins.JsPlugin, str]],
) -> None:
    where = ("plugins", entry.index)
    plugin = jsplugins.load_js_plugin(entry, runtime_root)
    if plugin.error is not None:
        # a warning: the rest of the agent works; the plugin's enabled tools answer with this reason
        out.issues.append(source.issue(where, jsplugins.describe_failure(plugin, entry.label), severity="warning"))
        failed.append((plugin, entry.label))
        return
    assert plugin.worker is not None and plugin.worker.manifest is not None
    name = plugin.worker.manifest.plugin_name
    _collect(
        Plugin(name, tuple(jsplugins.tools_of(plugin, entry.state_quota))), entry, source, owner, taken, mcp_tools, out
    )
    jsplugins.register_extractors(plugin)


def _collect(
    plugin: Plugin,
    entry: PluginEntry,
    source: TomlSource,
    owner: dict[str, str],
    taken: set[str],
    mcp_tools: Collection[str],
    out: LoadedPlugins,
) -> None:
    where = ("plugins", entry.index)
    for tool in plugin.tools:
        if not isinstance(tool, Tool):
            out.issues.append(
                source.issue(where, f"plugin '{plugin.name}' provides {tool!r}, which is not a cireil.Tool")
            )
            continue
        if tool.name in owner:
            out.issues.append(
                source.issue(where, f"plugins '{owner[tool.name]}' and '{plugin.name}' both provide tool '{tool.name}'")
            )
            continue
        if tool.name in taken:
            out.issues.append(
                source.issue(where, f"plugin '{plugin.name}': tool '{tool.name}' is also defined in Python")
            )
            continue
        clash = reserved_clash(tool.name, mcp_tools)
        if clash is not None:  # allowOverride is about built-ins; an MCP tool is never replaced
            out.issues.append(source.issue(where, f"plugin '{plugin.name}': tool '{tool.name}': {clash}"))
            continue
        if tool.name in registry.BUILTIN_NAMES and not entry.allow_override:
            out.issues.append(
                source.issue(
                    where,
                    f"plugin '{plugin.name}': tool '{tool.name}' has the name of a built-in tool; "
                    "set allowOverride = true in this entry to replace it",
                )
            )
            continue
        owner[tool.name] = plugin.name
        if tool.name in registry.BUILTIN_NAMES:
            tool = registry.overriding(tool)
        out.tools[tool.name] = replace(tool, origin=f"plugin:{plugin.name}")
    for extractor in plugin.extractors:
        unregister_extractor(extractor.name)  # loading again (restart, another agent) must not stack copies
        register_extractor(extractor)


def _import(entry: PluginEntry, runtime_root: Path) -> Plugin:
    if entry.package is not None:
        found = entry_points(group=GROUP, name=entry.package)
        if not found:
            raise LookupError(f"no installed package provides entry point '{entry.package}' in group '{GROUP}'")
        provided = next(iter(found)).load()
    else:
        assert entry.name is not None
        provided = _local_module(runtime_root / "plugins" / entry.name, entry.name)
    return _as_plugin(provided)


def _local_module(folder: Path, name: str) -> ModuleType:
    init = folder / "__init__.py"
    if not init.is_file():
        raise FileNotFoundError(f"{init} does not exist (a local plugin is a folder with an __init__.py)")
    # one module per folder: two runtime roots may each have a plugin of the same name
    digest = hashlib.blake2b(str(folder.resolve()).encode(), digest_size=6).hexdigest()
    module_name = f"cireil_local_plugins.{name.replace('.', '_')}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]  # imported once per process, like any Python package
    spec = importlib.util.spec_from_file_location(module_name, init, submodule_search_locations=[str(folder)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]  # a fixed plugin must be importable on the next load
        raise
    return module


def _as_plugin(provided: Any) -> Plugin:
    """A module exposing `plugin` (a Plugin or a function returning one), or the object itself."""
    if isinstance(provided, ModuleType):
        if not hasattr(provided, "plugin"):
            raise AttributeError(f"module {provided.__name__} has no 'plugin' (a cireil Plugin or a function)")
        provided = provided.plugin
    if callable(provided) and not isinstance(provided, Plugin):
        provided = provided()
    if not isinstance(provided, Plugin):
        raise TypeError(f"expected a cireil Plugin, got {type(provided).__name__}")
    return provided
