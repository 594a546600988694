"""The sources of exec's binds, opened once and handed to bubblewrap as descriptors (`--bind-fd`).

A bind by host path is resolved by bwrap when it starts, some milliseconds after cireil checked the
path: a command running meanwhile (another exec call) could swap a directory on that path for a
symlink, and bwrap would follow it and mount a directory outside the agent. So each source is checked
as before (its realpath, inside its root or mount), then opened by walking that realpath from `/` one
component at a time with O_NOFOLLOW: the realpath has no symlink left in it, so a symlink met on the
walk was put there after the check and the bind is refused. bwrap gets the descriptor (passed with
`pass_fds`, nothing else reaches it), mounts what it names, checks the mount is that very inode and
closes it before the command starts. What the command sees is what cireil checked, or nothing.

The descriptors are O_PATH: only search permission on the way is needed, as for a bind by path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass

from ..base.errors import ToolError

_STEP = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LAST = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC


def changed(dest: str) -> ToolError:
    return ToolError(
        f"Access denied: '{dest}' changed while exec was being set up (a symlink appeared in its path); "
        "the command was not started.",
        hint="Try again once nothing is moving that folder around.",
    )


def _missing(dest: str) -> ToolError:
    return ToolError(
        f"exec cannot run: the folder to mount at '{dest}' is gone (removed or renamed just now).",
        hint="Check that it exists (for a mount: its source in config/sandbox.toml [[mounts]]), then try again.",
    )


def walk(top: int, relative: str | bytes, flags: int, last: int | None = None) -> int:
    """Open `relative` below the descriptor `top` one name at a time with `flags` (which carry O_NOFOLLOW),
    the final name with `last` (default: `flags`). The folders opened on the way are closed, `top` is not;
    OSError as os.open raises it (ELOOP or ENOTDIR where a symlink stands)."""
    parts = [p for p in relative.split(b"/" if isinstance(relative, bytes) else "/") if p]
    fd = top
    try:
        for index, name in enumerate(parts):
            nxt = os.open(name, flags if last is None or index < len(parts) - 1 else last, dir_fd=fd)
            if fd != top:
                os.close(fd)
            fd = nxt
    except BaseException:
        if fd != top:
            os.close(fd)
        raise
    return fd


def walk_from_root(path: str | bytes, flags: int, last: int | None = None) -> int:
    """`walk` from `/`: a descriptor of the absolute `path`, no symlink followed on the way."""
    root = os.open("/", flags)
    try:
        found = walk(root, path, flags, last)
    except BaseException:
        os.close(root)
        raise
    if found != root:
        os.close(root)
    return found


def open_checked(real: str, dest: str) -> int:
    """An O_PATH descriptor of `real` (a realpath), opened without following any symlink on the way.

    `dest` is where it will appear in the sandbox, for messages (never the host path). Raises
    ToolError when a component is now a symlink (or no longer a directory) or is gone.
    """
    if not real.startswith("/"):
        raise ValueError(f"not an absolute path: {real!r}")
    try:
        fd = walk_from_root(real, _STEP, _LAST)
    except FileNotFoundError:
        raise _missing(dest) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a symlink, or a file where a directory was
            raise changed(dest) from None
        raise
    if stat.S_ISLNK(os.fstat(fd).st_mode):  # O_PATH | O_NOFOLLOW opens a final symlink itself
        os.close(fd)
        raise changed(dest)
    return fd


@dataclass(frozen=True)
class Bound:
    """One bind of a launch: the descriptor bwrap is given, what it was opened as, where it goes."""

    fd: int
    real: str
    dest: str
    read_only: bool


class BindFds:
    """The descriptors of one launch: each bind adds one; `close` ends them all (idempotent)."""

    def __init__(self) -> None:
        self.fds: list[int] = []
        self.bound: list[Bound] = []

    def bind(self, real: str, dest: str, *, read_only: bool = False) -> list[str]:
        """bwrap arguments binding the checked host path `real` at `dest` through a descriptor."""
        fd = open_checked(real, dest)
        self.fds.append(fd)
        self.bound.append(Bound(fd, real, dest, read_only))
        return ["--ro-bind-fd" if read_only else "--bind-fd", str(fd), dest]

    def close(self) -> None:
        self.bound.clear()
        while self.fds:
            with contextlib.suppress(OSError):
                os.close(self.fds.pop())
