"""Reading sandbox files the way read, open-file, read-sections and the context view all do.

Every read goes through safefs: opened from the root's descriptor without following a symlink
planted after the path was checked, never blocking on a FIFO, regular files only.
"""

from __future__ import annotations

import errno
import stat
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ToolError
from . import safefs
from .paths import ResolvedPath, SandboxPaths

READ_LIMIT = 262144  # bytes; the spec's cap on text reads, also with raw; open-file and read-sections share it


@dataclass(frozen=True)
class StatedFile:
    resolved: ResolvedPath
    size: int
    is_file: bool
    is_dir: bool

    @property
    def host(self) -> Path:
        return self.resolved.host

    def read_bytes(self, limit: int | None = None) -> bytes:
        return read_bytes(self.resolved, limit)


def _missing(sandbox: str, op: str = "stat") -> ToolError:
    return ToolError(f"ENOENT: no such file or directory, {op} '{sandbox}'", hint="Check the path with list-dir.")


def stat_path(paths: SandboxPaths, path: str) -> StatedFile:
    """Resolve and stat; a missing file is an error that names the sandbox path, never the host one."""
    resolved = paths.resolve(path)
    try:
        info = safefs.stat_entry(resolved.target)
    except NotADirectoryError:
        info = None
    if info is None:
        raise _missing(resolved.sandbox)
    return StatedFile(resolved, info.st_size, stat.S_ISREG(info.st_mode), stat.S_ISDIR(info.st_mode))


def read_bytes(resolved: ResolvedPath, limit: int | None = None) -> bytes:
    """The file's bytes (at most limit + 1 of them), opened race-free; errors name the sandbox path."""
    try:
        return safefs.read_bytes(resolved.target, limit)
    except (FileNotFoundError, NotADirectoryError):
        raise _missing(resolved.sandbox, "open") from None
    except IsADirectoryError:
        raise ToolError(
            "EISDIR: illegal operation on a directory, read", hint="Use list-dir to look into a directory."
        ) from None
    except safefs.NotRegularFile:
        raise ToolError(
            f"'{resolved.sandbox}' is not a regular file (a FIFO, socket or device).",
            hint="Only regular files can be read.",
        ) from None
    except OSError as exc:
        if exc.errno == errno.EACCES:
            raise ToolError(f"EACCES: permission denied, open '{resolved.sandbox}'") from None
        raise


def decode(data: bytes) -> str:
    """UTF-8 with U+FFFD for bad bytes: a stray Latin-1 byte never makes a file unreadable."""
    return data.decode("utf-8", errors="replace")


def read_text(found: StatedFile | ResolvedPath, *, tool: str = "open-file") -> str:
    """The file's text, at most READ_LIMIT bytes of it: a larger file is refused (`over_limit`), never loaded whole."""
    resolved = found.resolved if isinstance(found, StatedFile) else found
    data = read_bytes(resolved, READ_LIMIT)
    if len(data) > READ_LIMIT:  # grew since it was checked, or never was: still never pinned whole
        try:
            size = safefs.stat_entry(resolved.target).st_size
        except OSError:
            size = len(data)
        raise over_limit(resolved.sandbox, size, tool)
    return decode(data)


def over_limit(path: str, size: int, tool: str = "open-file") -> ToolError:
    """A file too big to pin or to read sections of: the same limit as read."""
    return ToolError(
        f"File '{path}' is {size} bytes, over the {READ_LIMIT}-byte limit (256 KiB) that read, open-file and "
        f"read-sections share; {tool} does not pin or show it.",
        hint="Extract the part you need into a smaller file (for example with exec: head, sed -n or grep "
        "into /workspace/excerpt.txt, when exec is enabled) and open that file instead.",
    )


def too_big(path: str, size: int) -> ToolError:
    return ToolError(
        f"File '{path}' is {size} bytes, over the {READ_LIMIT}-byte read limit (256 KiB); "
        "read does not return content or an outline for it, also not with raw.",
        hint="Extract a smaller excerpt into a separate file (for example with exec: head, sed -n or grep "
        "into /workspace/excerpt.txt, when exec is enabled) and read that file instead.",
    )
