"""Variants: the agent as it is, or changed (another model, a tools.toml overlay, other tool descriptions,
another core.md or block), each applied to a throwaway copy so the user's agent never changes.

variants.toml has one table per variant:

    [baseline]                                  # an empty table: the agent as it is

    [terse-read]
    description = "shorter read description"
    provider = "openrouter"                     # a provider table of config/engine.toml
    model = "gpt-4o-mini"
    core = "core-terse.md"                      # replaces core.md (paths relative to variants.toml)
    blocks = { soul = "soul-alt.md" }           # replaces blocks/soul.md
    tools = { exec = false }                    # merged over config/tools.toml
    descriptions = { read = "Read one file." }  # what the model is told about a tool
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import params
from ..base.didyoumean import suggestion as _hint
from ..base.errors import ConfigError, ConfigIssue
from ..config.checker import Checker, toml_repr
from ..config.tomlsource import TomlSource, TomlSyntaxError, read_config_bytes
from ..files.agentcopy import copy_agent_tree
from ..files.layout import BLOCK_NAMES

# The user's own conversations (and cireil's files beside them, in any version, their recorded turns
# too): a run starts with none, and the turns recorded in its copy are its own.
NOT_COPIED = (
    "sessions.db",
    "sessions.db-*",
    "sessions.cireil-old*",
    "cireil-side.db",
    "cireil-side.db-*",
    "cireil-recordings.db",
    "cireil-recordings.db-*",
)


@dataclass
class Variant:
    name: str
    description: str = ""
    provider: str | None = None
    model: str | None = None
    core: str | None = None  # absolute path of the replacement core.md
    blocks: dict[str, str] = field(default_factory=dict)  # block name -> absolute path
    tools: dict[str, Any] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "provider": self.provider,
            "model": self.model,
            "core": self.core,
            "blocks": self.blocks,
            "tools": self.tools,
            "descriptions": self.descriptions,
        }


BASE = Variant("base", "the agent as it is")


def _text(description: str = "a non-empty string") -> params.String:
    return params.String(pattern=r"\S", description=description, required=False)


_FILE = "a file path (relative to this file)"
VARIANT = {
    "description": _text(),
    "provider": _text("the name of a provider table of config/engine.toml"),
    "model": _text(),
    "core": _text(_FILE),
    "blocks": params.RawObject(default={}),  # block name -> file, checked below
    "tools": params.RawObject(default={}),  # merged over config/tools.toml, which checks it when the copy loads
    "descriptions": params.RawObject(default={}),  # tool name -> what the model is told about it
}
_DESCRIPTION = _text("a non-empty string (what the model is told about the tool)")


def parse_variants(source: TomlSource, base: Path) -> tuple[list[Variant], list[ConfigIssue]]:
    check = Checker(source)

    def existing(raw: str) -> str | None:
        found = (base / raw).resolve().is_file()
        return None if found else f"must be an existing file (relative to this file), not {toml_repr(raw)}"

    a_file = params.String(pattern=r"\S", description=_FILE, check=existing)
    out: list[Variant] = []
    for name, table in source.data.items():
        fields = check.table((name,), table, VARIANT)
        if fields is None:
            continue
        v = Variant(name, fields.get("description", ""), fields.get("provider"), fields.get("model"))
        if "core" in fields and check.value((name, "core"), fields["core"], a_file)[0]:
            v.core = str((base / fields["core"]).resolve())
        blocks = fields.get("blocks", {})
        check.unknown(blocks, BLOCK_NAMES, (name, "blocks"))
        for block, ref in blocks.items():
            if block in BLOCK_NAMES and check.value((name, "blocks", block), ref, a_file)[0]:
                v.blocks[block] = str((base / ref).resolve())
        v.tools = dict(fields.get("tools", {}))
        for tool, text in fields.get("descriptions", {}).items():
            if check.value((name, "descriptions", tool), text, _DESCRIPTION)[0]:
                v.descriptions[tool] = text
        out.append(v)
    issues = check.issues
    issues.sort(key=lambda i: i.line or 0)
    return out, issues


def read_variants(path: str | Path) -> list[Variant]:
    p = Path(path)
    try:
        raw = read_config_bytes(Path.cwd(), str(p.absolute()))
        if raw is None:
            raise ConfigError([ConfigIssue(str(path), None, "no such variants file")])
        source = TomlSource.parse(str(path), raw.decode("utf-8", errors="replace"))
    except TomlSyntaxError as exc:
        raise ConfigError([ConfigIssue(str(path), exc.issue.line, exc.issue.message)]) from None
    variants, issues = parse_variants(source, p.absolute().parent)
    if issues:
        raise ConfigError(issues)
    if not variants:
        raise ConfigError([ConfigIssue(str(path), None, "no variants: add a table such as [baseline]")])
    return variants


def select(variants: list[Variant], names: list[str], where: str) -> list[Variant]:
    """The variants named (all when none is), in the order asked for."""
    if not names:
        return variants
    by_name = {v.name: v for v in variants}
    chosen = []
    for name in names:
        if name not in by_name:
            raise ConfigError([ConfigIssue(where, None, f"no variant '{name}'{_hint(name, by_name)}")])
        chosen.append(by_name[name])
    return chosen


def copy_agent(source: Path, target: Path) -> Path:
    """A copy of the agent to run on; symlinks stay links (the sandbox resolves them, as in the original)."""
    return copy_agent_tree(source, target, NOT_COPIED)


def apply_files(variant: Variant, agent_dir: Path) -> None:
    """The file changes of a variant, made in a copy of the agent."""
    if variant.core:
        shutil.copyfile(variant.core, agent_dir / "core.md")
    for block, ref in variant.blocks.items():
        shutil.copyfile(ref, agent_dir / "blocks" / f"{block}.md")
    if variant.tools:
        import tomlkit

        path = agent_dir / "config" / "tools.toml"
        doc = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
        for key, value in variant.tools.items():
            doc[key] = value
        path.write_text(tomlkit.dumps(doc), encoding="utf-8")


def pin_engine(agent_dir: Path, base_url: str) -> None:
    """Point every provider of the copy's engine.toml at the scripted server playing a scenario's pinned
    replies, keeping provider and model names, so a variant's provider/model still resolve."""
    import tomlkit

    path = agent_dir / "config" / "engine.toml"
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    for value in doc.values():
        if isinstance(value, dict):
            value["kind"] = "openai"
            value["apiBase"] = base_url
            value["apiKey"] = "scripted"
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")
