"""What a plugin's tools may use besides their arguments: their settings files and a private state folder.

As the original (upstream-formats §3.2): `config/plugins/<name>.toml` of the runtime root (`scope="global"`)
or of the agent (`scope="agent"`), free-form TOML returned as read, None when missing, never merged; and
per-agent private state under `agents/<slug>/state/<plugin>/`, within the entry's `stateQuotaBytes`
(16 MiB by default). State files are written atomically with mode 0600 in a 0700 folder, so a crash
never leaves half a value and other users of the machine cannot read it.

    from cireil.plugin import settings, state

    async def run(args, ctx):
        key = (settings(ctx, "weather", scope="global") or {}).get("apiKey")
        store = state(ctx, "weather")
        store.write("last.json", b"{...}")
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import ToolError
from ..files import safefs
from ..files.atomic import atomic_write

if TYPE_CHECKING:
    from ..toolkit.tool import ToolContext

DEFAULT_QUOTA = 16 * 1024 * 1024
QUOTAS_KEY = "plugin_quotas"  # ToolContext.extra: plugin name -> stateQuotaBytes
_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


class PluginStateError(ToolError):
    """A state key that is not a plain file name, or a write over the quota; a tool failure, not a crash."""


def _runtime_root(agent_dir: Path) -> Path | None:
    return agent_dir.parents[1] if agent_dir.parent.name == "agents" else None


def settings(ctx: ToolContext, name: str, *, scope: str = "agent") -> dict[str, Any] | None:
    """`config/plugins/<name>.toml` of the agent (scope "agent") or of the runtime root ("global")."""
    if scope not in ("agent", "global"):
        raise ValueError('scope must be "agent" or "global"')
    if not _KEY.match(name) or ".." in name:
        raise ValueError(f"plugin settings name {name!r} must be a plain file name")
    base = Path(ctx.agent_dir) if scope == "agent" else _runtime_root(Path(ctx.agent_dir))
    if base is None:
        return None  # an agent outside a runtime root has no global settings
    try:
        text = safefs.read_host_file(base / "config" / "plugins" / f"{name}.toml").decode("utf-8")
    except FileNotFoundError:
        return None
    return tomllib.loads(text)


class PluginState:
    """One plugin's private files for one agent; values are bytes, keys plain file names."""

    def __init__(self, folder: Path, quota: int) -> None:
        self.folder = folder
        self.quota = quota

    def _path(self, key: str) -> Path:
        if not isinstance(key, str) or not _KEY.match(key) or key.endswith(".tmp"):
            raise PluginStateError(f"state key {key!r} must be a plain file name (letters, digits, '_', '-', '.')")
        return self.folder / key

    def read(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def keys(self) -> list[str]:
        try:
            return sorted(p.name for p in self.folder.iterdir() if p.is_file() and _KEY.match(p.name))
        except FileNotFoundError:
            return []

    def used(self) -> int:
        try:
            return sum(p.stat().st_size for p in self.folder.iterdir() if p.is_file())
        except FileNotFoundError:
            return 0

    def write(self, key: str, data: bytes | str) -> None:
        """Replace the value atomically; refused, with nothing changed, when it would exceed the quota."""
        path = self._path(key)
        payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        try:
            current = path.stat().st_size
        except FileNotFoundError:
            current = 0
        after = self.used() - current + len(payload)
        if after > self.quota:
            raise PluginStateError(
                f"plugin state quota exceeded: {after:,} bytes would be stored, stateQuotaBytes is {self.quota:,}",
                hint="Delete old state, or raise stateQuotaBytes for this plugin in config/plugins.toml.",
            )
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(path, payload, mode=0o600)

    def delete(self, key: str) -> bool:
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            return False
        return True


def state(ctx: ToolContext, plugin: str) -> PluginState:
    """The private state of `plugin` for the agent the call runs for."""
    if not _KEY.match(plugin) or ".." in plugin:
        raise ValueError(f"plugin name {plugin!r} must be a plain folder name")
    quota = ctx.extra.get(QUOTAS_KEY, {}).get(plugin, DEFAULT_QUOTA)
    return PluginState(Path(ctx.agent_dir) / "state" / plugin, quota)
