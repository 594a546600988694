"""Finding a Node >= 22 for the original's JS plugins, or saying exactly why there is none and how to get one.

Looked for, in order: `$CIREIL_NODE` (a path to the binary), `node` on PATH, then cireil's cache
`~/.cache/cireil/node` (or `$CIREIL_NODE_CACHE`: what the project's setup, `./dev`, installs there with
`npm install --prefix ... node@22 @valibot/to-json-schema`), then the Node the peer tests install
(`~/.cache/cireil/original-*/node`). The first one that is new enough wins. The same cache's
`node_modules` is where the plugin host looks for its helper (@valibot/to-json-schema) when a plugin's
own folder lacks it; `$CIREIL_PLUGIN_MODULES` names more such folders (the plugin's worker may read them:
jssandbox.py). tsx is no longer used by the host: TypeScript is loaded by Node's own type stripper.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MIN_MAJOR = 22
# `./dev` (its plugin_node) installs into the same folder, honouring the same variable; the peer tests'
# installs are looked for beside it (CACHE.parent), so one variable moves every place looked at
CACHE = Path(os.environ.get("CIREIL_NODE_CACHE") or Path.home() / ".cache" / "cireil" / "node").expanduser()
GET_NODE = f"npm install --prefix {CACHE} node@{MIN_MAJOR} (or set CIREIL_NODE to a Node >= {MIN_MAJOR} binary)"
GET_HELPERS = f"npm install --prefix {CACHE} @valibot/to-json-schema@^1.7"

_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)")
_checked: dict[tuple[str, float], str | None] = {}  # (path, mtime) -> version, None when it does not run


@dataclass(frozen=True)
class Node:
    path: str
    version: str  # "v22.23.3"


class NodeMissing(Exception):
    """No usable Node: the message says what was tried and how to get one."""


def _version(path: str) -> str | None:
    try:
        key = (path, os.stat(path).st_mtime)
    except OSError:
        return None
    if key not in _checked:
        try:
            done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10, check=False)
            _checked[key] = done.stdout.strip() if done.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            _checked[key] = None
    return _checked[key]


def _candidates() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    configured = os.environ.get("CIREIL_NODE")
    if configured:
        out.append((os.path.expanduser(configured), "CIREIL_NODE"))
    on_path = shutil.which("node")
    if on_path:
        out.append((on_path, "PATH"))
    for home in [CACHE, *sorted(CACHE.parent.glob("original-*/node"), reverse=True)]:
        out.append((str(home / "node_modules" / ".bin" / "node"), "cache"))
    return out


def find_node() -> Node:
    """The Node to run plugins with; NodeMissing naming each one tried (a too old one with its version)."""
    tried: list[str] = []
    for path, where in _candidates():
        if not os.path.exists(path):
            if where == "CIREIL_NODE":
                tried.append(f"CIREIL_NODE={path} does not exist")
            continue
        version = _version(path)
        match = _VERSION.match(version or "")
        if match is None:
            tried.append(f"{path} does not run (`{path} --version` failed)")
            continue
        if int(match.group(1)) < MIN_MAJOR:
            tried.append(f"{path} is Node {version}, too old (the original's plugins need Node >= {MIN_MAJOR})")
            continue
        return Node(os.path.realpath(path), version or "")
    found = "; ".join(tried) if tried else "no node on PATH nor in " + str(CACHE)
    raise NodeMissing(f"no Node >= {MIN_MAJOR} found ({found}); get one: {GET_NODE}")


def module_folders() -> list[str]:
    """node_modules folders the plugin host may take @valibot/to-json-schema from."""
    extra = [p for p in os.environ.get("CIREIL_PLUGIN_MODULES", "").split(os.pathsep) if p]
    return [*extra, str(CACHE / "node_modules")]
