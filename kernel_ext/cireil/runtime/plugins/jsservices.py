"""The host services of @cireilclaw/sdk that cireil answers for a JS plugin's call (the rest run in its worker).

Each is implemented or refused by name (REFUSED), with a message at call time:
- cfg.globalPlugin / cfg.agentPlugin: `config/plugins/<name>.toml` of the runtime root / the agent, free-form
  TOML as read, undefined when missing, never merged (the original's rule; each plugin picks).
- fs.readTextFile / writeTextFile / stat / listDir, paths.resolve / checkWriteAccess / checkConditionalAccess,
  crypto.loadNormalizedKey({path}): through the agent's sandbox path model, its mounts and the session's
  conditions, as a tool of the agent would.
- pluginState.readText / writeText / remove: jsstate.py (where the original keeps it, with the quota).
- reply.send, reply.react, channel.resolveChannel, addImage, addVideo, addToolMessage: refused. cireil's
  sessions have no channel to send to (the original refuses reply.send on its internal and tui channels too),
  and a tool call's result is the only thing it returns to the turn.
"""

from __future__ import annotations

import datetime as dt
import re
import stat as statmod
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import ToolError
from ..files import safefs
from .jsstate import PluginStateStore, StateRefused

if TYPE_CHECKING:
    from ..toolkit.tool import ToolContext

READ_LIMIT = 64 * 1024 * 1024  # one fs.readTextFile; the original has none, a kernel needs one
_CONFIG_NAME = re.compile(r"^[A-Za-z0-9_@][A-Za-z0-9_.@-]*$")

REFUSED = {
    "reply.send": "a plugin cannot send messages from cireil: its sessions have no channel to send to "
    "(return the text in the tool's result instead)",
    "reply.react": "a plugin cannot react to messages from cireil: its sessions have no channel",
    "channel.resolveChannel": "cireil has no channels to resolve (the original's Discord/Matrix adapters do)",
    "addImage": "a plugin cannot add images to the turn in cireil (return them in the result instead)",
    "addVideo": "a plugin cannot add videos to the turn in cireil",
    "addToolMessage": "a plugin cannot add messages to the turn in cireil (put the text in the result instead)",
}


class PluginServiceRefused(ToolError):
    """A host service cireil does not provide, named, with why."""


def _plain(value: Any) -> Any:
    """TOML values as JSON: dates and times become ISO strings."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return value


def _runtime_root(agent_dir: Path) -> Path | None:
    return agent_dir.parents[1] if agent_dir.parent.name == "agents" else None


class JsServices:
    """Answers one call's service requests for plugin `plugin_id` (its state is keyed by that id)."""

    def __init__(self, ctx: ToolContext, plugin_id: str, quota: int) -> None:
        self.ctx = ctx
        self.plugin_id = plugin_id
        self.state = PluginStateStore(Path(ctx.agent_dir), plugin_id, quota)
        self.refusals: list[str] = []

    async def __call__(self, method: str, args: list) -> Any:
        if method in REFUSED:
            self.refusals.append(method)
            raise PluginServiceRefused(f"{method} is not available in cireil: {REFUSED[method]}")
        handler = _HANDLERS.get(method)
        if handler is None:
            raise PluginServiceRefused(f"{method} is not a host service cireil knows")
        try:
            return handler(self, *args)
        except StateRefused as exc:
            raise ToolError(str(exc)) from None
        except TypeError as exc:
            raise ToolError(f"{method}: {exc}") from None

    # -- config --------------------------------------------------------------------------------------------
    def _config(self, base: Path | None, name: object) -> dict | None:
        if not isinstance(name, str) or not _CONFIG_NAME.match(name) or ".." in name:
            raise ToolError(f"cfg: plugin config name {name!r} must be a plain file name")
        if base is None:
            return None
        path = base / "config" / "plugins" / f"{name}.toml"
        try:
            text = safefs.read_host_file(path).decode("utf-8")
        except FileNotFoundError:
            return None
        try:
            return _plain(tomllib.loads(text))
        except tomllib.TOMLDecodeError as exc:
            raise ToolError(f"{path}: {exc}", hint="Fix the TOML syntax of the plugin's config file.") from None

    def global_plugin(self, name: object) -> dict | None:
        return self._config(_runtime_root(Path(self.ctx.agent_dir)), name)

    def agent_plugin(self, name: object) -> dict | None:
        return self._config(Path(self.ctx.agent_dir), name)

    # -- files, through the sandbox ------------------------------------------------------------------------
    def _text(self, path: object) -> str:
        resolved = self.ctx.paths.resolve(_path_arg(path))
        return safefs.read_bytes(resolved.target, READ_LIMIT).decode("utf-8", errors="replace")

    def read_text_file(self, path: object) -> str:
        return self._text(path)

    def write_text_file(self, path: object, content: object) -> None:
        if not isinstance(content, str):
            raise ToolError("fs.writeTextFile: content must be a string")
        resolved = self.ctx.paths.resolve_for_write(_path_arg(path))
        safefs.write_atomic(resolved.target, content.encode("utf-8"))

    def stat(self, path: object) -> dict:
        resolved = self.ctx.paths.resolve(_path_arg(path))
        info = safefs.stat_entry(resolved.target)
        if info is None:
            raise ToolError(f"ENOENT: no such file or directory, stat '{path}'")
        return {
            "ctimeMs": info.st_ctime * 1000,
            "isDirectory": statmod.S_ISDIR(info.st_mode),
            "isFile": statmod.S_ISREG(info.st_mode),
            "mtimeMs": info.st_mtime * 1000,
            "size": info.st_size,
        }

    def list_dir(self, path: object) -> list[dict]:
        resolved = self.ctx.paths.resolve(_path_arg(path))
        entries = safefs.list_entries(resolved.target)
        return [
            {"isDirectory": e.type == "directory", "isFile": e.type == "file", "name": e.name}
            for e in sorted(entries, key=lambda e: e.name)
        ]

    def resolve(self, path: object) -> str:
        return str(self.ctx.paths.resolve(_path_arg(path)).host)

    def check_write(self, path: object) -> None:
        self.ctx.paths.resolve_for_write(_path_arg(path))

    def check_conditions(self, path: object) -> None:
        self.ctx.paths.resolve(_path_arg(path))  # resolving applies the session's conditions

    def key_file(self, path: object, kind: object = None) -> str:
        if kind == "host":
            raise PluginServiceRefused(
                "crypto.loadNormalizedKey with kind 'host' is not available in cireil: a plugin reads keys "
                "through the sandbox path model only (give a sandbox path, or the key's data)"
            )
        return self._text(path)

    # -- state -----------------------------------------------------------------------------------------------
    def state_read(self, name: object) -> str | None:
        return self.state.read_text(name)

    def state_write(self, name: object, content: object) -> None:
        self.state.write_text(name, content)

    def state_remove(self, name: object) -> None:
        self.state.remove(name)


def _path_arg(path: object) -> str:
    if not isinstance(path, str):
        raise ToolError(f"sandboxPath must be a string, not {type(path).__name__}")
    return path


_HANDLERS = {
    "cfg.globalPlugin": JsServices.global_plugin,
    "cfg.agentPlugin": JsServices.agent_plugin,
    "fs.readTextFile": JsServices.read_text_file,
    "fs.writeTextFile": JsServices.write_text_file,
    "fs.stat": JsServices.stat,
    "fs.listDir": JsServices.list_dir,
    "paths.resolve": JsServices.resolve,
    "paths.checkWriteAccess": JsServices.check_write,
    "paths.checkConditionalAccess": JsServices.check_conditions,
    "crypto.loadNormalizedKey.path": JsServices.key_file,
    "pluginState.readText": JsServices.state_read,
    "pluginState.writeText": JsServices.state_write,
    "pluginState.remove": JsServices.state_remove,
}

# Implemented in the plugin's own worker (js/host.mjs), as Node provides them.
IN_WORKER = (
    "crypto.randomBytes",
    "crypto.xchacha20poly1305",
    "crypto.hkdf",
    "crypto.ed25519",
    "crypto.x25519",
    "crypto.loadNormalizedKey({data})",
    "ids.ulid",
    "net.fetch",
    "createKeyPool",
    "session",
    "agentSlug",
    "mounts",
)
