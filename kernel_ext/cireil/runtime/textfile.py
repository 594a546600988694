"""Reading sandbox files the way read, open-file, read-sections and the context view all do."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import ToolError
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


def stat_path(paths: SandboxPaths, path: str) -> StatedFile:
    """Resolve and stat; a missing file is an error that names the sandbox path, never the host one."""
    resolved = paths.resolve(path)
    try:
        info = os.stat(resolved.host)
    except FileNotFoundError:
        raise ToolError(
            f"ENOENT: no such file or directory, stat '{resolved.sandbox}'",
            hint="Check the path with list-dir.",
        ) from None
    return StatedFile(resolved, info.st_size, stat.S_ISREG(info.st_mode), stat.S_ISDIR(info.st_mode))


def decode(data: bytes) -> str:
    """UTF-8 with U+FFFD for bad bytes: a stray Latin-1 byte never makes a file unreadable."""
    return data.decode("utf-8", errors="replace")


def read_text(host: Path, *, path: str = "", tool: str = "open-file") -> str:
    """The file's text, at most READ_LIMIT bytes of it: a larger file is refused (`over_limit`), never loaded."""
    with open(host, "rb") as f:
        data = f.read(READ_LIMIT + 1)
    if len(data) > READ_LIMIT:  # grew since it was checked, or never was: still never pinned whole
        raise over_limit(path or host.name, os.stat(host).st_size, tool)
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
