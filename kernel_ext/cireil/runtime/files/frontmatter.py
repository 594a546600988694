"""Frontmatter of block files (TOML between `+++`) and skill files (YAML between `---`), reference §5."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from ..base.errors import ConfigIssue


@dataclass(frozen=True)
class FrontmatterKind:
    name: str  # "block" | "skill"
    delimiter: str
    language: str  # "TOML" | "YAML"


BLOCK = FrontmatterKind("block", "+++", "TOML")
SKILL = FrontmatterKind("skill", "---", "YAML")


class FrontmatterError(ValueError):
    pass


def kind_for(sandbox_path: str) -> FrontmatterKind | None:
    """Which frontmatter a sandbox path requires, if any."""
    if sandbox_path == "/blocks" or sandbox_path.startswith("/blocks/"):
        return BLOCK
    if sandbox_path.startswith("/skills/") and sandbox_path.rsplit("/", 1)[-1] == "SKILL.md":
        return SKILL
    return None


def split(text: str, kind: FrontmatterKind) -> tuple[str, str] | None:
    """(frontmatter including delimiters and one trailing newline, body), or None when there is none."""
    d = kind.delimiter
    if not text.startswith(d):
        return None
    close = text.find(d, len(d))
    if close < 0:
        return None
    end = close + len(d)
    if text.startswith("\r\n", end):
        end += 2
    elif text.startswith("\n", end):
        end += 1
    return text[:end], text[end:]


def parse(text: str, kind: FrontmatterKind) -> dict:
    """Validate the frontmatter at the start of `text`; returns its fields or raises FrontmatterError."""
    d = kind.delimiter
    if not text.startswith(d):
        raise FrontmatterError(f"expected file to start with '{d}'")
    parts = split(text, kind)
    if parts is None:
        raise FrontmatterError(f"missing closing '{d}'")
    inner = parts[0][len(d) :].rstrip("\r\n")
    inner = inner[: -len(d)] if inner.endswith(d) else inner
    if kind is BLOCK:
        try:
            fields = tomllib.loads(inner)
        except tomllib.TOMLDecodeError as exc:
            raise FrontmatterError(f"TOML parse error: {exc}") from None
        except RecursionError:  # tomllib recurses per nesting level: a depth bomb is a parse error here
            raise FrontmatterError("TOML parse error: arrays or inline tables nested too deeply to read") from None
        if not isinstance(fields.get("description"), str):
            raise FrontmatterError(_missing("description", fields))
        return fields
    import yaml  # only skills need YAML; keep it off the import path of everything else

    try:
        fields = yaml.safe_load(inner)
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"YAML parse error: {exc}") from None
    except RecursionError:  # PyYAML composes nested flow collections recursively
        raise FrontmatterError("YAML parse error: collections nested too deeply to read") from None
    if not isinstance(fields, dict):
        raise FrontmatterError("frontmatter must be a mapping with name and description")
    for key in ("name", "description"):
        value = fields.get(key)
        if not isinstance(value, str) or not value.strip():
            raise FrontmatterError(_missing(key, fields))
    return fields


def block_parts(text: str, rel: str, issues: list[ConfigIssue]) -> tuple[str, str] | None:
    """A block file's (description, body); None, with the issue at `rel`'s line 1, when its frontmatter is bad."""
    try:
        fields = parse(text, BLOCK)
    except FrontmatterError as exc:
        issues.append(ConfigIssue(rel, 1, f"invalid frontmatter: {exc}"))
        return None
    parts = split(text, BLOCK)
    assert parts is not None  # parse succeeded, so the delimiters are there
    return fields["description"], parts[1]


def _missing(key: str, fields: dict) -> str:
    if key in fields:
        return f'Invalid type: Expected "{key}" to be a non-empty string'
    return f'Invalid key: Expected "{key}" but received undefined'
