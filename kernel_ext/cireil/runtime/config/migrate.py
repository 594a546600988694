"""`cireil migrate`: bring an agent's tools.toml up to date, keeping the user's comments and layout.

CireilClaw 2.0 removed `str-replace` in favour of `edit` (spec, "Built-in tools"). A file that still
names it fails to load, so this rewrites it: `edit` ends up enabled when either tool was, the
`str-replace` line goes, and every other byte of the file stays as the user wrote it. tomlkit is
used because it round-trips comments and whitespace, which tomllib cannot write at all.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import tomlkit
import tomlkit.exceptions
from tomlkit.items import SingleKey

from ..errors import ConfigError, ConfigIssue
from ..fsutil import atomic_write
from ..layout import AgentLayout
from .tomlsource import TomlSource, TomlSyntaxError
from .tools_config import TOOLS_FILE

BACKUP_DIR = "config/backups"


@dataclass(frozen=True)
class MigrationResult:
    """What `migrate` did to one agent: the changes made, in words, and where the original went."""

    file: Path  # the tools.toml that was examined
    changes: tuple[str, ...] = ()
    backup: Path | None = None

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def __str__(self) -> str:
        if not self.changed:
            return f"{TOOLS_FILE}: nothing to migrate"
        lines = [f"{TOOLS_FILE}: {change}" for change in self.changes]
        lines.append(f"backup of the original: {self.backup}")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {
            "file": str(self.file),
            "changed": self.changed,
            "changes": list(self.changes),
            "backup": str(self.backup) if self.backup else None,
        }


def migrate(directory: str | os.PathLike[str]) -> MigrationResult:
    """Apply every pending migration to the agent at `directory`.

    Raises ConfigError (naming file and line) when the file cannot be migrated safely; in that
    case nothing is written.
    """
    layout = AgentLayout.find(directory)
    path = layout.directory / TOOLS_FILE
    original = path.read_bytes()
    text = _decode(original)
    try:
        source = TomlSource.parse(TOOLS_FILE, text)
    except TomlSyntaxError as exc:
        raise ConfigError([exc.issue]) from None
    try:
        document = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:  # tomllib accepted it; tomlkit is stricter in rare cases
        raise ConfigError([ConfigIssue(TOOLS_FILE, exc.line, f"cannot rewrite this file: {exc}")]) from None

    changes = _str_replace_to_edit(document, source)
    if not changes:
        return MigrationResult(path)
    new_text = tomlkit.dumps(document)
    tomllib.loads(new_text)  # a rewrite that no longer parses must never replace the user's file
    backup = _write_backup(layout.directory, original)
    _atomic_replace(path, new_text.encode("utf-8"))
    return MigrationResult(path, tuple(changes), backup)


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError([ConfigIssue(TOOLS_FILE, line, "file is not valid UTF-8")]) from None


def _str_replace_to_edit(document: tomlkit.TOMLDocument, source: TomlSource) -> list[str]:
    """str-replace -> edit, preserving whether editing was enabled (spec, 2.0.0)."""
    # Values come from tomllib (plain Python types); tomlkit is only used to rewrite the text.
    if "str-replace" not in source.data:
        return []
    old = source.data["str-replace"]
    if not isinstance(old, bool):
        raise ConfigError(
            [source.issue(("str-replace",), "'str-replace' must be true or false to be migrated to 'edit'")]
        )
    old_line = source.line_of("str-replace")
    if "edit" in source.data:
        current = source.data["edit"]
        if not isinstance(current, bool):
            raise ConfigError([source.issue(("edit",), "'edit' must be true or false")])
        enabled = current or old
        del document["str-replace"]
        changes = [f"removed 'str-replace = {_toml(old)}' (line {old_line})"]
        if enabled != current:
            document["edit"] = enabled  # tomlkit keeps the line's place and its comment
            changes.append(f"set 'edit = {_toml(enabled)}' (was {_toml(current)})")
        else:
            changes.append(f"kept 'edit = {_toml(current)}'")
        return changes
    # No edit line yet: the new one takes str-replace's place, separator and trailing comment.
    # Container._replace is tomlkit's own in-place replacement (its __setitem__ uses it); the public
    # API can only append, which would move the line to the end of the file.
    key = next(k for k, _ in document.body if k is not None and k.key == "str-replace")
    written = key.as_string()
    padding = written[len(written.rstrip()) :]  # tomlkit keeps the space before '=' with the key text
    document._replace(key, SingleKey("edit", sep=key.sep, original="edit" + padding), tomlkit.item(old))
    return [f"replaced 'str-replace = {_toml(old)}' with 'edit = {_toml(old)}' (line {old_line})"]


def _toml(value: bool) -> str:
    return "true" if value else "false"


def _write_backup(agent_dir: Path, original: bytes) -> Path:
    folder = agent_dir / BACKUP_DIR
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for attempt in range(1000):
        suffix = f"-{attempt}" if attempt else ""
        candidate = folder / f"tools.toml.{stamp}{suffix}.bak"
        try:
            # O_EXCL: two migrations in the same second must not overwrite each other's backup.
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as fh:
            fh.write(original)
            fh.flush()
            os.fsync(fh.fileno())
        return candidate
    raise ConfigError([ConfigIssue(BACKUP_DIR, None, "too many backups with the same timestamp")])


def _atomic_replace(path: Path, data: bytes) -> None:
    """Never a half-written tools.toml; a symlinked tools.toml stays a symlink (its target is replaced)."""
    atomic_write(Path(os.path.realpath(path)), data)
