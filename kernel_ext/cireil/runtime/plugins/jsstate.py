"""`ctx.pluginState` of the original's JS plugins, stored exactly where and how the original stores it.

`agents/<slug>/state/<plugin-slug>/<name>` (upstream-formats §1.3): the slug is the plugin id (its `name`
or `package` in plugins.toml) lower-cased, runs of other characters than [a-z0-9._-] made one '-', no
leading or trailing '-'. A `.id` file in the folder holds the id that owns it; another id is refused.
Names are relative paths (nesting allowed); absolute paths, '..', empty segments, symlinks and the top
name `.id` are refused. Text only. The quota counts every regular file but `.id`; a write that would go
over it is refused with nothing changed. Files are written to a temporary name, then renamed (0600,
folders 0700). So both runtimes read and write the same state.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from pathlib import Path

SENTINEL = ".id"
DEFAULT_QUOTA = 16 * 1024 * 1024


class StateRefused(Exception):
    """A name or folder the contract refuses, or a write over the quota."""


def folder_slug(plugin_id: str) -> str:
    slug = re.sub(r"[^a-z0-9._-]+", "-", plugin_id.lower())
    slug = re.sub(r"-{2,}", "-", slug).strip("-") or "plugin"
    if slug.startswith("."):
        slug = f"p-{slug}"
    return slug


def _segments(name: object) -> list[str]:
    if not isinstance(name, str) or not name:
        raise StateRefused("pluginState: 'name' must be a non-empty string")
    if name.startswith("/"):
        raise StateRefused(f"pluginState: 'name' must be relative, got '{name}'")
    parts = name.split("/")
    if any(not part for part in parts):
        raise StateRefused(f"pluginState: 'name' contains empty segments: '{name}'")
    if ".." in parts:
        raise StateRefused(f"pluginState: 'name' contains path traversal: '{name}'")
    if parts[0] == SENTINEL:
        raise StateRefused(f"pluginState: '{SENTINEL}' is reserved for the runtime")
    return [p for p in parts if p != "."] or [name]


class PluginStateStore:
    """One (agent, plugin) state folder."""

    def __init__(self, agent_dir: Path, plugin_id: str, quota: int = DEFAULT_QUOTA) -> None:
        self.plugin_id = plugin_id
        self.quota = quota
        self.state_dir = Path(agent_dir) / "state"
        self.root = self.state_dir / folder_slug(plugin_id)

    def _ensure_root(self) -> Path:
        self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.state_dir.is_symlink():
            raise StateRefused(f"pluginState: the state directory is a symlink: {self.state_dir}")
        os.chmod(self.state_dir, 0o700)
        if self.root.is_symlink():
            raise StateRefused(f"pluginState: the state folder is a symlink: {self.root}")
        self.root.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.root, 0o700)
        sentinel = self.root / SENTINEL
        try:
            fd = os.open(sentinel, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            owner = sentinel.read_text("utf-8", errors="replace")
            if owner != self.plugin_id:
                raise StateRefused(
                    f"pluginState: state folder {self.root} belongs to plugin id '{owner}', not '{self.plugin_id}'"
                ) from None
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self.plugin_id)
        return self.root

    def _path(self, name: object) -> Path:
        root = self._ensure_root()
        parts = _segments(name)
        target = root.joinpath(*parts)
        probe = root
        for part in parts:  # no symlink anywhere on the way: state must never lead out of its folder
            probe = probe / part
            if probe.is_symlink():
                raise StateRefused(f"pluginState: '{name}' goes through a symlink")
        return target

    def used(self) -> int:
        total = 0
        for folder, _dirs, files in os.walk(self.root):
            for file in files:
                if folder == str(self.root) and file == SENTINEL:
                    continue
                path = os.path.join(folder, file)
                with contextlib.suppress(FileNotFoundError):
                    if not os.path.islink(path):
                        total += os.stat(path).st_size
        return total

    def read_text(self, name: object) -> str | None:
        path = self._path(name)
        try:
            return path.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None

    def write_text(self, name: object, content: object) -> None:
        if not isinstance(content, str):
            raise StateRefused("pluginState: 'content' must be a string")
        path = self._path(name)
        data = content.encode("utf-8")
        if not path.parent.exists():
            path.parent.mkdir(mode=0o700, parents=True)
        current = path.stat().st_size if path.is_file() else 0
        after = self.used() - current + len(data)
        if after > self.quota:
            raise StateRefused(
                f"pluginState: writing '{name}' would exceed the plugin quota ({after} > {self.quota} bytes); "
                "raise stateQuotaBytes for this plugin in config/plugins.toml or delete old state"
            )
        temp = path.parent / f".tmp-{path.name}-{secrets.token_hex(8)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
            raise

    def remove(self, name: object) -> None:
        path = self._path(name)
        if path.is_dir():
            raise StateRefused(f"pluginState: refusing to remove a directory: '{name}'")
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
