"""The original's JS plugins (npm packages and local folders) as cireil tools and outline extractors.

Resolution is the original loader's: `package = "@scope/name"` from the runtime root's package.json (its
node_modules), `name = "foo"` from `<root>/plugins/foo/` (package.json and node_modules required). Each plugin
runs in a worker process of its own (jsworker.py), kept across config reads: a snapshot re-reads config for
every call, and a plugin is loaded again only when its package files change. A plugin that does not load
(no Node, not installed, a syntax error, a factory that throws) is a warning naming it and what to do; the
tools of it that tools.toml enables stay listed and answer every call with that reason, so the rest of the
agent works. Its log (stdout and stderr, bounded) is shown with the warning and with each failed call.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import ConfigError, ToolError
from ..base.params import RawObject
from ..config.cireil_config import DEFAULT_LIMITS, load_limits
from ..outline import register_extractor, unregister_extractor
from ..outline.model import Heading
from ..outline.pipeline import Extractor
from ..toolkit.tool import Tool
from .config import PluginEntry
from .jsservices import JsServices
from .jsstate import DEFAULT_QUOTA
from .jsworker import Manifest, PluginCallError, PluginLoadError, PluginWorker, WorkerGone
from .node import GET_HELPERS, NodeMissing, find_node, module_folders

if TYPE_CHECKING:
    from ..toolkit.tool import ToolContext

EXTRACT_TIMEOUT_S = 10.0


@dataclass
class JsPlugin:
    """One JS plugin entry of one runtime root, with its worker (alive or to be restarted)."""

    plugin_id: str  # its name or package, as plugins.toml says: keys its state folder
    kind: str  # "folder" | "package"
    root: Path
    worker: PluginWorker | None = None
    fingerprint: tuple = ()
    error: PluginLoadError | None = None  # why it did not load, if it did not
    extractor_names: list[str] = field(default_factory=list)


_PLUGINS: dict[tuple[str, str, str], JsPlugin] = {}
_LOCK = threading.Lock()


def is_js_entry(entry: PluginEntry, runtime_root: Path) -> bool:
    """Whether an entry is the original's JS plugin: a package no Python entry point provides (callers check
    that), or a plugin folder with a package.json and no __init__.py."""
    if entry.package is not None:
        return True
    folder = runtime_root / "plugins" / str(entry.name)
    return (folder / "package.json").is_file() and not (folder / "__init__.py").is_file()


def _fingerprint(plugin: JsPlugin) -> tuple:
    """What changes when the plugin is installed again or edited: its package.json files and its folder."""
    if plugin.kind == "folder":
        folder = plugin.root / "plugins" / plugin.plugin_id
        paths = [folder / "package.json", folder / "node_modules", folder]
    else:
        paths = [plugin.root / "package.json", plugin.root / "node_modules" / plugin.plugin_id / "package.json"]
    out = []
    for path in paths:
        try:
            info = os.stat(path)
            out.append((str(path), info.st_mtime_ns, info.st_ino))
        except OSError:
            out.append((str(path), None, None))
    return tuple(out)


def _channel(session_id: str) -> str:
    """The original's channel of a session id (BasicSession.channel)."""
    head = session_id.split(":", 1)[0]
    return head if head in ("discord", "matrix", "tui") else "internal"


def _timeout(agent_dir: Path) -> float:
    try:
        return load_limits(agent_dir).plugin_timeout_s
    except ConfigError:
        return DEFAULT_LIMITS.plugin_timeout_s  # the turn itself reports the broken [limits]


def load_js_plugin(entry: PluginEntry, runtime_root: Path) -> JsPlugin:
    """The entry's plugin, loaded (or reused); `error` set when it did not load."""
    plugin_id = str(entry.package if entry.package is not None else entry.name)
    kind = "package" if entry.package is not None else "folder"
    key = (os.path.realpath(runtime_root), kind, plugin_id)
    with _LOCK:
        plugin = _PLUGINS.get(key)
        if plugin is None:
            plugin = _PLUGINS[key] = JsPlugin(plugin_id, kind, Path(key[0]))
    fingerprint = _fingerprint(plugin)
    if plugin.worker is not None and plugin.worker.manifest is not None and plugin.fingerprint == fingerprint:
        return plugin  # loaded before, unchanged (a dead worker restarts on its next call)
    if plugin.worker is not None:
        plugin.worker.kill("the plugin's files changed: loading it again")
    plugin.worker, plugin.error, plugin.fingerprint = None, None, fingerprint
    try:
        node = find_node()
    except NodeMissing as exc:
        plugin.error = PluginLoadError(str(exc), "")
        return plugin
    env = dict(os.environ)
    env["CIREIL_PLUGIN_MODULES"] = os.pathsep.join(module_folders())
    init = {"kind": kind, "root": str(plugin.root), "name": plugin_id, "id": plugin_id}
    worker = PluginWorker(node.path, init, env, cwd=str(plugin.root))
    try:
        worker.start()
    except PluginLoadError as exc:
        plugin.error = exc
        plugin.worker = worker  # kept for its log
        return plugin
    plugin.worker = worker
    return plugin


def describe_failure(plugin: JsPlugin, label: str) -> str:
    assert plugin.error is not None
    text = f"{label} did not load: {plugin.error.message}"
    if plugin.error.what:
        text += f"; to fix: {plugin.error.what}"
    if "@valibot/to-json-schema" in plugin.error.message or "tsx" in plugin.error.message:
        text += f" ({GET_HELPERS})"
    # the plugin's own output only: the host's "[cireil] ..." lines and blank ones say nothing about the failure
    said = [line for line in plugin.error.log.splitlines() if line.strip() and not line.startswith("[cireil]")]
    if said:
        text += "\n  its log:\n    " + "\n    ".join(said)
    return text


def tools_of(plugin: JsPlugin, quota: int | None) -> list[Tool]:
    assert plugin.worker is not None and plugin.worker.manifest is not None
    manifest: Manifest = plugin.worker.manifest
    return [_tool(plugin, spec, quota or DEFAULT_QUOTA) for spec in manifest.tools]


def unavailable_tool(name: str, plugin: JsPlugin, label: str) -> Tool:
    """Stands in for a tool of a plugin that did not load: every call fails with why, the rest still works."""
    reason = describe_failure(plugin, label).split("\n", 1)[0]

    async def run(args: dict, ctx: ToolContext) -> dict:
        raise ToolError(reason, hint="The operator must fix the plugin (see cireil dry-run); use another tool.")

    return Tool(
        name=name,
        description=f"(unavailable in cireil: {reason})",
        params=RawObject(raw={"type": "object", "properties": {}}),
        run=run,
        origin=f"plugin:{plugin.plugin_id} (not loaded)",
        offered=False,
    )


def _tool(plugin: JsPlugin, spec: dict, quota: int) -> Tool:
    name = str(spec.get("name"))
    schema = spec.get("jsonSchema") if isinstance(spec.get("jsonSchema"), dict) else {"type": "object"}

    async def run(args: dict, ctx: ToolContext) -> dict:
        worker = plugin.worker
        if worker is None:
            raise ToolError(f"plugin {plugin.plugin_id} is not loaded")
        services = JsServices(ctx, plugin.plugin_id, quota)
        call_ctx = {
            "agentSlug": ctx.slug,
            "session": {"channel": _channel(ctx.session.id), "id": ctx.session.id},
            "mounts": [{"mode": m.mode, "source": str(m.source), "target": m.target} for m in ctx.sandbox.mounts],
        }
        starts = worker.starts
        try:
            value: Any = await worker.call(name, args, call_ctx, services, _timeout(Path(ctx.agent_dir)))
        except PluginLoadError as exc:  # a restart after a crash failed
            raise ToolError(
                f"plugin {plugin.plugin_id} did not start again: {exc.message}", hint=exc.what or None
            ) from None
        except PluginCallError as exc:
            raise ToolError(exc.message, hint=exc.hint) from None
        except WorkerGone as exc:
            raise ToolError(f"plugin {plugin.plugin_id}: {exc}") from None
        finally:
            ctx.extra["inspect"] = {
                "plugin": {
                    "plugin": plugin.plugin_id,
                    "tool": name,
                    "restarted": worker.starts > starts or starts > 1,
                    "refused": services.refusals,
                    "log": worker.log.tail(),
                }
            }
        if not isinstance(value, dict):
            raise ToolError("Plugin tool must return an object with a boolean success field")
        return value

    return Tool(
        name=name,
        description=str(spec.get("description") or ""),
        params=RawObject(raw=schema),
        run=run,
        origin=f"plugin:{plugin.plugin_id}",
    )


def register_extractors(plugin: JsPlugin) -> None:
    """The plugin's outline extractors, each asking its worker (bounded by EXTRACT_TIMEOUT_S)."""
    for name in plugin.extractor_names:
        unregister_extractor(name)
    plugin.extractor_names = []
    worker = plugin.worker
    if worker is None or worker.manifest is None:
        return
    for index, spec in enumerate(worker.manifest.extractors):
        glob = str(spec.get("glob") or "")
        if not glob:
            continue
        name = f"plugin:{plugin.plugin_id}#{index}"
        sample = "file" + glob[1:] if glob.startswith("*.") else glob  # the worker matches by file name again

        def extract(lines: list[str], sample: str = sample) -> list[Heading]:
            sections = worker.extract(sample, "\n".join(lines), EXTRACT_TIMEOUT_S)
            out = []
            for section in sections:
                if not isinstance(section, dict) or not isinstance(section.get("line"), int):
                    continue
                span = section.get("lines")
                end = section["line"] + span - 1 if isinstance(span, int) and span > 0 else None
                label = str(section.get("label") or "")
                out.append(
                    Heading(
                        label, str(section.get("id") or label), section["line"], 1, str(section.get("type") or ""), end
                    )
                )
            return out

        register_extractor(Extractor(name, (glob,), extract, int(spec.get("priority") or 0)))
        plugin.extractor_names.append(name)


def enabled_names(agent_dir: Path) -> list[str]:
    """Tool names tools.toml enables (for stand-ins of a plugin that did not load)."""
    import tomllib

    try:
        data = tomllib.loads((agent_dir / "config" / "tools.toml").read_text("utf-8"))
    except (OSError, ValueError):
        return []
    return [name for name, value in data.items() if value is True]


def stand_ins(agent_dir: Path, known: Collection[str], failed: list[tuple[JsPlugin, str]]) -> dict[str, Tool]:
    """Stand-ins for enabled tools nothing else provides, when some plugin failed (the first one named)."""
    if not failed:
        return {}
    plugin, label = failed[0]
    return {name: unavailable_tool(name, plugin, label) for name in enabled_names(agent_dir) if name not in known}


def shutdown() -> None:
    """End every plugin worker (the interpreter exits, or the extension unloads)."""
    with _LOCK:
        plugins = list(_PLUGINS.values())
        _PLUGINS.clear()
    for plugin in plugins:
        for name in plugin.extractor_names:
            unregister_extractor(name)
        if plugin.worker is not None:
            plugin.worker.kill(None)


atexit.register(shutdown)
