"""Reading sandbox files the way read, open-file, read-sections and the context view all do."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import ToolError
from .paths import ResolvedPath, SandboxPaths

READ_LIMIT = 262144  # bytes; the spec's cap on text reads, also with raw


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


def read_text(host: Path) -> str:
    return decode(host.read_bytes())


def too_big(path: str, size: int) -> ToolError:
    return ToolError(
        f"File '{path}' is {size} bytes, over the {READ_LIMIT}-byte read limit (256 KiB); "
        "read does not return content or an outline for it, also not with raw.",
        hint="Extract a smaller excerpt into a separate file (for example with exec: head, sed -n or grep "
        "into /workspace/excerpt.txt, when exec is enabled) and read that file instead.",
    )
