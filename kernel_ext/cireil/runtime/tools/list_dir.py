"""list-dir: list one sandbox directory (reference §4.8)."""

from __future__ import annotations

import os
from pathlib import Path

from ..base.errors import ToolError
from ..base.params import Params, String
from ..files import safefs
from ..files.paths import ROOTS, ResolvedPath
from ..toolkit.tool import Tool, ToolContext


def _entry_type(entry: os.DirEntry) -> str:
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "directory"
    return "file"


def _sorted(entries: list[dict]) -> list[dict]:
    entries.sort(key=lambda e: e["name"].encode("utf-8", "surrogateescape"))
    return entries


def _list_sandbox(resolved: ResolvedPath, display: str) -> list[dict]:
    """Read through the directory's descriptor (no symlink planted since resolve is followed)."""
    try:
        found = safefs.list_entries(resolved.target)
    except FileNotFoundError:
        return []  # so that pure mount parents still list (reference §4.8)
    except NotADirectoryError:
        raise ToolError(f"{display} is not a directory.", hint="Use read to look at a file.") from None
    return _sorted([{"name": e.name, "type": e.type} for e in found])


def _list(host: Path, display: str) -> list[dict]:
    try:
        with os.scandir(host) as it:
            entries = [{"name": e.name, "type": _entry_type(e)} for e in it]
    except NotADirectoryError:
        raise ToolError(f"{display} is not a directory.", hint="Use read to look at a file.") from None
    return _sorted(entries)


async def run(args: dict, ctx: ToolContext) -> dict:
    path: str = args["path"]
    if path.rstrip("/") == "/bin" or path == "/bin":
        if not ctx.tools_config.exec.enabled:
            return {"entries": [], "path": path, "success": True}
        return {
            "entries": [{"name": b, "type": "symlink"} for b in ctx.sandbox.binaries],
            "path": path,
            "success": True,
        }
    first = path.lstrip("/").split("/", 1)[0]
    if path.startswith("/") and first in ROOTS:
        resolved = ctx.paths.resolve(path)
        entries = _list_sandbox(resolved, f"'{path}'")
        synthetic = ctx.paths.mount_children(resolved.sandbox) if resolved.mount is None else []
        if synthetic:
            entries = [e for e in entries if e["name"] not in synthetic]
            entries += [{"name": name, "type": "directory"} for name in synthetic]
        if ctx.paths.access is not None:  # conditions.toml: a denied entry is not shown either
            base = resolved.sandbox.rstrip("/")
            entries = [e for e in entries if ctx.paths.visible(f"{base}/{e['name']}")]
        return {"entries": entries, "path": path, "success": True}
    host = ctx.paths.resolve_system(path)
    return {"entries": _list(host, f"'{path}'"), "path": path, "success": True}


TOOL = Tool(
    name="list-dir",
    description=(
        "List the files and subdirectories at the given path. Returns each entry's name and type (file, "
        "directory, or symlink).\n\n"
        "Allowed path roots: /workspace/, /memories/, /blocks/, /skills/, /usr/, /lib/, /lib64/, /nix/.\n"
        "Note that paths used here *must* be absolute.\n\n"
        "With Bubblewrap, use /bin to list configured sandbox binaries. Incus containers use their installed "
        "image binaries; use exec with ls /bin to inspect them.\n\n"
        "Use this to explore directory structure before reading or writing specific files."
    ),
    params=Params(
        path=String(
            min_length=1,
            description=(
                "Directory path to list. Sandbox paths (e.g. /workspace/) or exec-visible system paths (e.g. /usr, "
                "/nix). With Bubblewrap, use /bin to list configured binaries."
            ),
        )
    ),
    run=run,
    main_arg="path",
)
