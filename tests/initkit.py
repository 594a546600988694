"""A runtime root as the original CireilClaw's own `cireilclaw init` leaves it (upstream-formats.md §1.2), built
without Node: `<home>/.cireilclaw/` with `config/` and `agents/<slug>/`, the agent's folders, block, core and
skill stubs (their wording is ours; only the shape matters here), and the three TOML files byte for byte as its
smol-toml `stringify` writes them (checked once against the original's own registry and smol-toml). No
`config/migrations.json`: its init does not write one. Every tools.toml preset names `str-replace`.

(tests/originalkit.py runs the real original; these tests must not need Node.)
"""

from __future__ import annotations

import os
from pathlib import Path

# Object.keys of the original's builtinToolRegistry (packages/runtime/src/engine/tools/index.ts), in its order
REGISTRY = (
    "close-file",
    "download-attachments",
    "edit",
    "exec",
    "list-dir",
    "list-sessions",
    "no-response",
    "open-file",
    "prune-boundaries",
    "query-sessions",
    "react",
    "read",
    "read-history",
    "read-sections",
    "read-session",
    "read-skill",
    "respond",
    "schedule",
    "session-info",
    "str-replace",
    "write",
)
CORE = {"respond", "no-response", "read", "open-file", "close-file", "list-dir", "read-skill", "session-info"}
BLOCKS = ("soul", "identity", "person", "long-term", "style-notes")


def tools_toml(preset: str) -> str:
    """tools.toml of the preset (minimal, standard, full): one line per registered tool; full's exec a table."""
    lines = []
    for tool in REGISTRY:
        if tool == "exec":
            if preset != "full":
                lines.append("exec = false")
        else:
            on = tool in CORE or preset != "minimal"
            lines.append(f"{tool} = {'true' if on else 'false'}")
    text = "\n".join(lines) + "\n"
    if preset == "full":  # smol-toml writes a nested table after every plain key
        text += "\n[exec]\nenabled = true\ntimeout = 60000\n"
    return text


def _private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o600)


def _folder(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)


def original_init(home: Path, slug: str = "wren", *, preset: str = "standard", discord: bool = True) -> Path:
    """`<home>/.cireilclaw/agents/<slug>` as the original's init writes it; returns the agent directory."""
    root = home / ".cireilclaw"
    for folder in (root, root / "config", root / "agents"):
        _folder(folder)
    agent = root / "agents" / slug
    _folder(agent)
    for sub in ("blocks", "config", "memories", "skills", "tasks", "workspace", "skills/create-skill"):
        _folder(agent / sub)
    _private(
        agent / "skills" / "create-skill" / "SKILL.md",
        "---\nname: create-skill\ndescription: How to add a skill.\n---\nWrite a SKILL.md in its own folder.\n",
    )
    for block in BLOCKS:
        _private(agent / "blocks" / f"{block}.md", f'+++\ndescription = "The {block} block."\n+++\n')
    _private(agent / "core.md", "You are an agent.\n")
    _private(
        agent / "config" / "engine.toml",
        '[default]\napiBase = "http://127.0.0.1:9/v1"\napiKey = "not-needed"\ndefaultModel = "m"\n'
        'isGlobalDefault = true\nkind = "openai"\n',
    )
    _private(agent / "config" / "tools.toml", tools_toml(preset))
    _private(agent / "config" / "sandbox.toml", 'backend = "bwrap"\nmounts = []\n\n[bwrap]\nbinaries = [ "ls" ]\n')
    if discord:
        _folder(agent / "config" / "channels")
        _private(agent / "config" / "channels" / "discord.toml", 'ownerId = "402981735266648064"\ntoken = "MTQy.x.y"\n')
    return agent


def tree(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every path under `root` with its mode and, for files, its bytes: what a command must leave as it was."""
    out: dict[str, tuple[int, bytes | None]] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(root))] = (st.st_mode, path.read_bytes() if path.is_file() else None)
    return out
