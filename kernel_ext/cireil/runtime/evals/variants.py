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

from ..config.checker import suggestion as _hint
from ..config.checker import unknown_key
from ..config.tomlsource import TomlSource, TomlSyntaxError, read_config_bytes
from ..errors import ConfigError, ConfigIssue
from ..layout import BLOCK_NAMES

VARIANT_KEYS = ("description", "provider", "model", "core", "blocks", "tools", "descriptions")
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


def parse_variants(source: TomlSource, base: Path) -> tuple[list[Variant], list[ConfigIssue]]:
    issues: list[ConfigIssue] = []
    out: list[Variant] = []

    def fail(path: tuple, message: str) -> None:
        issues.append(source.issue(path, message))

    def file_ref(path: tuple, raw: Any) -> str | None:
        if not isinstance(raw, str) or not raw:
            fail(path, "must be a file path (relative to this file)")
            return None
        target = (base / raw).resolve()
        if not target.is_file():
            fail(path, f"no such file: {raw}")
            return None
        return str(target)

    for name, table in source.data.items():
        if not isinstance(table, dict):
            fail((name,), f"'{name}' must be a table [{name}]: each variant is one table")
            continue
        v = Variant(name)
        for key, value in table.items():
            where = (name, key)
            if key not in VARIANT_KEYS:
                fail(where, unknown_key(key, VARIANT_KEYS, (name,)))
            elif key in ("description", "provider", "model"):
                if not isinstance(value, str) or not value:
                    fail(where, f"'{key}' must be a non-empty string")
                else:
                    setattr(v, key, value)
            elif key == "core":
                v.core = file_ref(where, value)
            elif key in ("blocks", "tools", "descriptions") and not isinstance(value, dict):
                fail(where, f"'{key}' must be a table")
            elif key == "blocks":
                for block, ref in value.items():
                    if block not in BLOCK_NAMES:
                        fail((*where, block), f"no block '{block}'{_hint(block, BLOCK_NAMES)}")
                    elif (found := file_ref((*where, block), ref)) is not None:
                        v.blocks[block] = found
            elif key == "tools":
                v.tools = dict(value)
            else:
                for tool, text in value.items():
                    if not isinstance(text, str) or not text.strip():
                        fail((*where, tool), "a tool description must be a non-empty string")
                    else:
                        v.descriptions[tool] = text
        out.append(v)
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
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(*NOT_COPIED))
    return target


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
