"""What a JS plugin's worker may touch: Node's permission model, set up from the plugin's own folders.

The original trusts its plugins with the whole machine (its docs say so); cireil runs them with less, so a
plugin, or a dependency of it, cannot read the agent's sessions.db or ~/.ssh, write anywhere, start processes
or threads, or grow without bound:

- reads: the plugin's own folder (a folder plugin) or the runtime root's node_modules (a package plugin), the
  helper folders in CIREIL_PLUGIN_MODULES, the host script's folder, and the real places their node_modules
  links lead to (pnpm keeps packages in a store, and Node reads a module at its real path);
- writes: none. State and files go through cireil's host services (ctx.pluginState, ctx.fs), which apply
  the agent's sandbox path model and conditions. The agent's folders are not granted either: the contract's
  ctx.paths.resolve still gives a host path, but opening it directly is refused (the agent's grants are
  per agent, the worker is per plugin and root, and Node fixes its grants when it starts);
- no child processes and no worker threads: the contract grants neither (so TypeScript is loaded by Node's own
  type stripper in the plugin's thread, not by tsx, whose hooks need a worker and its esbuild a process);
- native addons are allowed: the SDK itself imports sharp (its image helpers), so refusing addons would
  refuse every plugin built on the SDK. An addon's native code is outside Node's checks;
- the network is the contract's (`ctx.net.fetch` is a plain fetch), so it stays open;
- the V8 heap is capped at HEAP_MB: a plugin that allocates without bound dies alone, and restarts.

Node's own limit: a symbolic link inside an allowed folder is followed wherever it points, so a plugin that
ships such a link can read through it. This stops accidents and casual reaches, not a determined author.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

HEAP_MB = 512  # --max-old-space-size of every plugin worker
# how a worker that ran out of heap says so on stderr (V8's fatal message)
OUT_OF_HEAP = re.compile(r"Reached heap limit|JavaScript heap out of memory|Allocation failed")

_flags: dict[tuple[str, float], frozenset[str]] = {}  # (node path, mtime) -> the flags its --help lists
_WANTED = (
    "--permission",
    "--experimental-permission",
    "--allow-addons",
    "--allow-net",
    "--disable-warning",
)


def _known_flags(node: str) -> frozenset[str]:
    try:
        key = (node, os.stat(node).st_mtime)
    except OSError:
        return frozenset()
    if key not in _flags:
        try:
            done = subprocess.run([node, "--help"], capture_output=True, text=True, timeout=10, check=False)
            text = done.stdout
        except (OSError, subprocess.SubprocessError):
            text = ""
        _flags[key] = frozenset(f for f in _WANTED if re.search(rf"(^|[\s,]){re.escape(f)}\b(?!-)", text, re.M))
    return _flags[key]


def _node_modules_home(real: Path) -> Path:
    """The folder to allow for a package found at `real`: its outermost node_modules (a pnpm store's
    packages link to each other inside it), or the package itself (a workspace package, e.g. the SDK)."""
    for parent in reversed(real.parents):  # outermost first
        if parent.name == "node_modules":
            return parent
    return real


def _links_of(node_modules: Path) -> Iterable[Path]:
    """The packages of a node_modules folder that are links (top level and one @scope deep)."""
    try:
        entries = list(os.scandir(node_modules))
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith("@") and entry.is_dir(follow_symlinks=False):
            try:
                entries_in = list(os.scandir(entry.path))
            except OSError:
                continue
            yield from (Path(e.path) for e in entries_in if e.is_symlink())
        elif entry.is_symlink():
            yield Path(entry.path)


def read_folders(init: dict, modules: Iterable[str], host: Path) -> list[str]:
    """Every folder (or file) the worker may read, real paths, the plugin's own first."""
    root = Path(str(init.get("root")))
    if init.get("kind") == "folder":
        start = [root / "plugins" / str(init.get("name"))]
    else:
        start = [root / "node_modules", root / "package.json"]
    start += [Path(m) for m in modules if m]
    # Node checks the path a call names, not where it leads: the host names the plugin by its path under the
    # root (a link, for a cloned plugin or a pnpm-linked package), the loader by its real path; both are allowed
    allowed: list[Path] = [host.resolve(), *(Path(os.path.abspath(p)) for p in start if os.path.exists(p))]
    todo = [Path(os.path.realpath(p)) for p in start]
    seen: set[Path] = set()
    while todo:  # follow node_modules links to the folders they lead to, and theirs in turn
        place = todo.pop(0)
        if place in seen or not place.exists():
            continue
        seen.add(place)
        if not any(place == a or a in place.parents for a in allowed):
            allowed = [a for a in allowed if place not in a.parents] + [place]
        if not place.is_dir():
            continue
        for link in _links_of(place if place.name == "node_modules" else place / "node_modules"):
            target = Path(os.path.realpath(link))
            if target.exists():
                todo.append(_node_modules_home(target))
    return [str(a) for a in allowed]


def node_flags(node: str, init: dict, modules: Iterable[str], host: Path) -> list[str]:
    """The flags a worker's node starts with: the permission model as the module docstring says, and the heap cap.
    No permission flags when this Node has no permission model (it is then run as before, and says so in its log)."""
    known = _known_flags(node)
    flags = [f"--max-old-space-size={HEAP_MB}"]
    switch = "--permission" if "--permission" in known else "--experimental-permission"
    if switch not in known:
        return flags
    flags.append(switch)
    flags += [f"--allow-fs-read={folder}" for folder in read_folders(init, modules, host)]
    if "--allow-addons" in known:
        flags.append("--allow-addons")
    if "--disable-warning" in known:  # Node's caution about --allow-addons, said in every plugin's log otherwise
        flags.append("--disable-warning=SecurityWarning")
    if "--allow-net" in known:  # Node 25+ closes the network under the model; the contract's fetch needs it
        flags.append("--allow-net")
    return flags
