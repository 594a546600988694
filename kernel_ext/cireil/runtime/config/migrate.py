"""`cireil migrate`: bring an agent's configuration up to date, keeping the user's comments and layout.

Two migrations, each applied only when needed:
- tools.toml: CireilClaw 2.0 removed `str-replace` in favour of `edit` (spec, "Built-in tools"). `edit`
  ends up enabled when either tool was, the `str-replace` line goes, every other byte stays.
- engine.toml: cireil used to wrap providers in `[providers.<name>]`, which the original CireilClaw does
  not read; its shape has each provider as a top-level table (upstream-formats.md §2.1). The tables move
  up one level with their comments; a lone provider, the implicit default before, gets
  `isGlobalDefault = true`, which the original requires.
tomlkit is used because it round-trips comments and whitespace, which tomllib cannot write at all.
Every new text is checked before anything is written; then each changed file is backed up, then replaced
(temp file + rename); when a replacement fails, the files already replaced get their old bytes back.

Backups go where the original CireilClaw keeps its own (upstream-formats.md §3.8): `config/backups/<id>/<name>`
of the runtime root, folder 0700, file 0600, never overwritten, `<name>` as its runner names an agent's file
(`agents_<slug>_config_tools.toml_tools.toml`). `<id>` has the form of the original's migration ids,
`<UTC time>_cireil_<what>`, so that each run keeps its own backup. An agent outside a runtime root is its own
root: `<agent>/config/backups/<id>/tools.toml`. On a root the original shares, the report also says what the
original loses: it still registers `str-replace`, which the rewritten file no longer enables.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import tomlkit
import tomlkit.exceptions
from tomlkit.items import SingleKey

from ..base.errors import ConfigError, ConfigIssue
from ..files.atomic import atomic_write
from ..files.layout import AgentLayout
from .engine_config import ENGINE_FILE, is_old_layout
from .tomlsource import TomlSource, TomlSyntaxError
from .tools_config import TOOLS_FILE

BACKUP_DIR = "config/backups"
# the migration part of each backup folder's id (`<UTC time>_<this>`); "cireil" keeps them apart from the original's
MIGRATION_NAMES = {TOOLS_FILE: "cireil_str_replace_to_edit", ENGINE_FILE: "cireil_engine_providers_top_level"}


@dataclass(frozen=True)
class MigrationResult:
    """What `migrate` did to one file: the changes made, in words, and where the original went."""

    file: Path  # the file that was examined
    changes: tuple[str, ...] = ()
    backup: Path | None = None
    rel: str = TOOLS_FILE
    notes: tuple[str, ...] = ()  # what the change means beyond the file: what the original CireilClaw loses

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def __str__(self) -> str:
        if not self.changed:
            return f"{self.rel}: nothing to migrate"
        lines = [f"{self.rel}: {change}" for change in self.changes]
        lines += [f"{self.rel}: note: {note}" for note in self.notes]
        lines.append(f"backup of the original: {self.backup}")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {
            "file": str(self.file),
            "changed": self.changed,
            "changes": list(self.changes),
            "notes": list(self.notes),
            "backup": str(self.backup) if self.backup else None,
        }


@dataclass(frozen=True)
class MigrationReport:
    """`migrate` for one agent: tools.toml's result, then engine.toml's."""

    tools: MigrationResult
    engine: MigrationResult

    @property
    def results(self) -> tuple[MigrationResult, ...]:
        return (self.tools, self.engine)

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.results)

    def __str__(self) -> str:
        return "\n".join(str(r) for r in self.results)

    def as_dict(self) -> dict:
        return {"changed": self.changed, "files": [r.as_dict() for r in self.results]}


@dataclass
class _Pending:
    rel: str
    path: Path
    original: bytes
    new_text: str
    changes: list[str]
    notes: tuple[str, ...] = ()


def migrate(directory: str | os.PathLike[str]) -> MigrationReport:
    """Apply every pending migration to the agent at `directory`.

    Raises ConfigError (naming file and line) when a file cannot be migrated safely; in that case
    nothing is written, to any file. An OSError while writing leaves every file as it was (the backups of
    that run are removed again, except that of a file whose old bytes could not be put back).
    """
    layout = AgentLayout.find(directory)
    pending = [p for p in (_plan_tools(layout), _plan_engine(layout.directory)) if p is not None and p.changes]
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    backups: dict[str, Path] = {}
    replaced: list[_Pending] = []
    try:
        for p in pending:
            backups[p.rel] = _write_backup(layout, p, stamp)
        for p in pending:
            _atomic_replace(p.path, p.new_text.encode("utf-8"))
            replaced.append(p)
    except BaseException:
        _undo(pending, replaced, backups)
        raise
    results = {p.rel: MigrationResult(p.path, tuple(p.changes), backups[p.rel], p.rel, p.notes) for p in pending}
    return MigrationReport(
        results.get(TOOLS_FILE) or MigrationResult(layout.directory / TOOLS_FILE),
        results.get(ENGINE_FILE) or MigrationResult(layout.directory / ENGINE_FILE, rel=ENGINE_FILE),
    )


def _parse(rel: str, original: bytes) -> tuple[str, TomlSource, tomlkit.TOMLDocument]:
    text = _decode(original, rel)
    try:
        source = TomlSource.parse(rel, text)
    except TomlSyntaxError as exc:
        raise ConfigError([exc.issue]) from None
    try:
        document = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:  # tomllib accepted it; tomlkit is stricter in rare cases
        raise ConfigError([ConfigIssue(rel, exc.line, f"cannot rewrite this file: {exc}")]) from None
    return text, source, document


def _undo(pending: list[_Pending], replaced: list[_Pending], backups: dict[str, Path]) -> None:
    """After a failed write: the replaced files get their old bytes back, and the backups of this run go (a file
    left as it was needs none); a backup whose file could not be restored stays, the only copy of the old bytes."""
    restored = {p.rel for p in pending} - {p.rel for p in replaced}
    for p in reversed(replaced):
        try:
            _atomic_replace(p.path, p.original)
        except OSError:
            continue
        restored.add(p.rel)
    for rel in restored:
        backup = backups.get(rel)
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()
                backup.parent.rmdir()  # the run's own folder, when nothing else is in it


def _plan_tools(layout: AgentLayout) -> _Pending | None:
    path = layout.directory / TOOLS_FILE
    original = path.read_bytes()
    _, source, document = _parse(TOOLS_FILE, original)
    changes = _str_replace_to_edit(document, source)
    if not changes:
        return None
    new_text = tomlkit.dumps(document)
    tomllib.loads(new_text)  # a rewrite that no longer parses must never replace the user's file
    notes: tuple[str, ...] = ()
    if layout.runtime_root is not None and source.data["str-replace"] is True:
        notes = (
            "the original CireilClaw still registers 'str-replace': from now on its agent "
            f"'{layout.slug}' has no str-replace tool (it has edit); instructions or skills that name "
            "str-replace need updating",
        )
    return _Pending(TOOLS_FILE, path, original, new_text, changes, notes)


def _plan_engine(agent_dir: Path) -> _Pending | None:
    path = agent_dir / ENGINE_FILE
    try:
        original = path.read_bytes()
    except FileNotFoundError:
        return None
    _, source, document = _parse(ENGINE_FILE, original)
    if not is_old_layout(source.data):
        return None
    first = min(line for key, line in source.lines.items() if key[:1] == ("providers",))
    by_hand = "move each [providers.<name>] table to [<name>] by hand"
    try:
        document, changes = _providers_to_top_level(document, source)
        new_text = tomlkit.dumps(document)
    except (AttributeError, TypeError, KeyError, tomlkit.exceptions.TOMLKitError):
        # a layout tomlkit keeps in another shape (dotted keys such as providers.local.apiBase = ...)
        raise ConfigError(
            [ConfigIssue(ENGINE_FILE, first, f"cireil cannot rewrite this layout automatically; {by_hand}")]
        ) from None
    # The rewrite must mean exactly the old file, one level up: anything else is refused, not written.
    expected = {k: v for k, v in source.data.items() if k != "providers"}
    expected.update(source.data["providers"])
    if not any(entry.get("isGlobalDefault") is True for entry in source.data["providers"].values()):
        only = next(iter(source.data["providers"]))
        expected[only] = {**expected[only], "isGlobalDefault": True}
    try:
        rewritten = TomlSource.parse(ENGINE_FILE, new_text).data
    except TomlSyntaxError as exc:
        rewritten = {"": str(exc)}
    if rewritten != expected:
        raise ConfigError(
            [ConfigIssue(ENGINE_FILE, first, f"cireil cannot rewrite this layout automatically; {by_hand}")]
        )
    return _Pending(ENGINE_FILE, path, original, new_text, changes)


def _providers_to_top_level(
    document: tomlkit.TOMLDocument, source: TomlSource
) -> tuple[tomlkit.TOMLDocument, list[str]]:
    """[providers.<name>] -> [<name>], comments and order kept; a lone provider becomes the global default."""
    table = source.data["providers"]
    clash = [name for name in table if name in source.data]
    if clash:
        raise ConfigError(
            [
                source.issue(
                    (clash[0],),
                    f"'{clash[0]}' is both a top-level key and a provider in [providers.{clash[0]}]; "
                    "rename one, then run `cireil migrate` again",
                )
            ]
        )
    defaults = [name for name, entry in table.items() if entry.get("isGlobalDefault") is True]
    if not defaults and len(table) > 1:
        first = min(line for key, line in source.lines.items() if key[:1] == ("providers",))
        raise ConfigError(
            [
                ConfigIssue(
                    ENGINE_FILE,
                    first,
                    f"{len(table)} providers and none has isGlobalDefault = true; mark the one turns should use "
                    "by default, then run `cireil migrate` again",
                )
            ]
        )
    old, document = document, tomlkit.document()
    moved: list[str] = []
    for key, item in old.body:
        if key is not None and key.key == "providers":
            for inner_key, inner in item.value.body:
                if inner_key is None:
                    document.add(inner)
                else:
                    document.append(inner_key, inner)
                    moved.append(inner_key.key)
        elif key is None:
            document.add(item)
        else:
            document.append(key, item)
    changes = [f"moved [providers.{name}] to [{name}] (line {source.line_of('providers', name)})" for name in moved]
    if not defaults:
        only = moved[0]
        if isinstance(document[only], tomlkit.items.InlineTable):
            document[only] = _with_inline_key(document[only], "isGlobalDefault", True)
        else:
            _add_after_last_value(document[only], "isGlobalDefault", True)
        changes.append(f"added 'isGlobalDefault = true' to [{only}]: the original needs one default provider")
    env_keys = [name for name, entry in table.items() if _names_a_variable(entry.get("apiKey"))]
    for name in env_keys:
        changes.append(
            f"kept [{name}] apiKey = {{ env = ... }}: cireil reads it, the original CireilClaw does not "
            "(it needs the key itself, or a list of keys)"
        )
    return document, changes


def _names_a_variable(api_key: object) -> bool:
    return any(isinstance(k, dict) for k in (api_key if isinstance(api_key, list) else [api_key]))


def _add_after_last_value(table: tomlkit.items.Table, key: str, value: object) -> None:
    """Write `key = value` on the line after the table's last plain key, so it stays above trailing comments and
    subtables (tomlkit's public add() puts it after them)."""
    last = None
    for k, item in table.value.body:
        if k is not None and not isinstance(item, tomlkit.items.Table | tomlkit.items.AoT):
            last = item
    if last is None:
        table.add(key, value)
        return
    # The text rides on the last value's line ending; the caller re-parses the result and refuses any rewrite
    # that does not mean the old file plus this key, so this stays correct across tomlkit versions.
    trail = last.trivia.trail
    newline = "\r\n" if trail.endswith("\r\n") else "\n"
    if not trail.endswith("\n"):
        trail += newline
    last.trivia.trail = f"{trail}{last.trivia.indent}{key} = {tomlkit.item(value).as_string()}{newline}"


def _with_inline_key(table: tomlkit.items.InlineTable, key: str, value: object) -> tomlkit.items.InlineTable:
    """The inline table with `key = value` written before its closing brace, in the user's own spacing."""
    text = table.as_string()
    body = text[: text.rindex("}")]
    inner = body.rstrip()
    pad = body[len(inner) :]
    entry = f"{key} = {tomlkit.item(value).as_string()}"
    new = f"{inner} {entry} }}" if inner.endswith("{") else f"{inner}, {entry}{pad}}}"
    rebuilt = tomlkit.parse(f"x = {new}\n")["x"]
    rebuilt.trivia.comment_ws, rebuilt.trivia.comment = table.trivia.comment_ws, table.trivia.comment
    rebuilt.trivia.trail = table.trivia.trail
    return rebuilt


def _decode(raw: bytes, rel: str = TOOLS_FILE) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError([ConfigIssue(rel, line, "file is not valid UTF-8")]) from None


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


def backup_folder(layout: AgentLayout) -> Path:
    """`config/backups` of the runtime root the original CireilClaw uses; the agent's own for one outside a root."""
    return (layout.runtime_root or layout.directory) / BACKUP_DIR


def backup_name(layout: AgentLayout, rel: str) -> str:
    """The file name the original's migration runner gives a backup of this agent file (upstream-formats.md §3.8):
    `agents_<slug>_<path in the agent dir, / as _>_<file name>`; outside a root, the file name alone."""
    name = rel.rsplit("/", 1)[-1]
    if layout.runtime_root is None:
        return name
    return f"agents_{layout.slug}_{rel.replace('/', '_')}_{name}"


def _write_backup(layout: AgentLayout, pending: _Pending, stamp: str) -> Path:
    """The old bytes in `<backups>/<stamp>_<migration>/<name>`, complete or not at all (temp file, then a hard
    link, which never replaces an existing backup); a second run in the same second gets `_2`, `_3`..."""
    base = backup_folder(layout)
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = backup_name(layout, pending.rel)
    for attempt in range(1, 1000):
        folder = base / f"{stamp}_{MIGRATION_NAMES[pending.rel]}{f'_{attempt}' if attempt > 1 else ''}"
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
        os.chmod(folder, 0o700)  # as the original does: mkdir's mode passes through the umask
        target = folder / name
        if os.path.lexists(target):
            continue
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(pending.original)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o600)
            try:
                os.link(tmp, target)  # unlike rename, refuses to replace a backup made meanwhile
            except FileExistsError:
                continue
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                    raise
                if os.path.lexists(target):  # a filesystem without hard links: checked, then renamed
                    continue
                os.rename(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return target
    raise ConfigError([ConfigIssue(str(base), None, "too many backups made in the same second; try again")])


def _atomic_replace(path: Path, data: bytes) -> None:
    """Never a half-written file; a symlinked one stays a symlink (its target is replaced)."""
    atomic_write(Path(os.path.realpath(path)), data)
