"""Spill files: where captured output goes when it is not returned inline (reference §4.12).

The output directory lies inside the sandbox, so the command itself could plant a symlink there
while it runs (or swap one of its parents for one). The directory is therefore opened (and
created) once through safefs, walking from the root's descriptor without following any symlink,
and the files are created relative to that descriptor with O_EXCL | O_NOFOLLOW: a planted link
can neither redirect the directory, nor a parent of it, nor a file.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import threading
from datetime import UTC, datetime

from ..files import safefs
from ..files.paths import SandboxPaths

_SEQ = itertools.count(1)
_SEQ_LOCK = threading.Lock()


def _stem(command: str, started: datetime) -> str:
    ts = started.strftime("%Y-%m-%dT%H-%M-%S-") + f"{started.microsecond // 1000:03d}Z"
    name = re.sub(r"[^A-Za-z0-9_-]", "_", command)[:32] or "cmd"
    with _SEQ_LOCK:
        seq = next(_SEQ) % 1000  # bounded, unlike the reference's never-cleared counter
    return f"{ts}-{seq:03d}-{name}"


class SpillDir:
    """The opened output directory of one call, and the files created in it."""

    def __init__(self, paths: SandboxPaths, output_dir: str, command: str) -> None:
        """Raises ToolError (access: outside the sandbox, read-only mount) or OSError (I/O)."""
        resolved = paths.resolve_for_write(output_dir)
        self.sandbox_dir = resolved.sandbox.rstrip("/")
        self.fd = safefs.open_dir(resolved.target, create=True)
        try:
            if not _writable(self.fd):
                raise PermissionError(13, "Permission denied", output_dir)
        except BaseException:
            os.close(self.fd)
            raise
        self.command = command
        self.stem = _stem(command, datetime.now(UTC))

    def create(self, suffix: str) -> tuple[int, str]:
        """A new file `<stem><suffix>`: (fd, sandbox path)."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(3):
            name = self.stem + suffix
            try:
                fd = os.open(name, flags, 0o644, dir_fd=self.fd)
            except FileExistsError:  # the counter wrapped, or the command planted the name: take another
                self.stem = _stem(self.command, datetime.now(UTC))
                continue
            return fd, f"{self.sandbox_dir}/{name}"
        raise FileExistsError(17, "File exists", f"{self.sandbox_dir}/{name}")

    def remove(self, sandbox_path: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(sandbox_path.rsplit("/", 1)[1], dir_fd=self.fd)

    def close(self) -> None:
        os.close(self.fd)


def _writable(fd: int) -> bool:
    # os.access cannot take a descriptor; the /proc path names exactly the opened directory
    return os.access(f"/proc/self/fd/{fd}", os.W_OK)
