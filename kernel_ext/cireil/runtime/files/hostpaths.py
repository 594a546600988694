"""Where an agent root or a mount source really is, without trusting a symlink a command could have made.

A root may be the person's symlink (`<agent>/workspace -> /data/ws`) and a mount source may go through
one (`~/data -> /mnt/big/data`): those are followed, as realpath follows them. But when the symlink lies
inside a folder the sandbox can write (the agent's workspace, memories, skills, tasks or a read-write
mount), a command may have put it there: a read-only mount of `~/proj/data` beside a read-write mount of
`~/proj` would otherwise become a mount of whatever `proj/data` was swapped for (`~/.ssh`), for exec and
for every file tool alike. Such a symlink is refused, whoever made it; the person can name the real folder.

This settles which path is meant; opening it without a race is the caller's part (safefs walks from
the boundary's descriptor, exec/bindfds.py opens binds with O_NOFOLLOW on every component), and either
refuses a symlink that appears after this check.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Callable, Iterable

MAX_LINKS = 40  # as the kernel's own path walk


class PlantedLink(OSError):
    """The path leads through a symlink inside a folder the sandbox can write."""


def _inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def trusted_realpath(path: str | os.PathLike, writable: Callable[[], Iterable[str]]) -> str:
    """os.path.realpath(path), except that a symlink lying in one of `writable()` (realpaths of the
    folders commands can write; asked for only when a symlink is met) raises PlantedLink.

    A missing component ends the walk: the rest is appended as written (normalized), as realpath does.
    """
    pending = [p for p in os.fspath(path).split("/") if p]
    if not os.fspath(path).startswith("/"):
        pending = [p for p in os.getcwd().split("/") if p] + pending
    real = "/"
    links = 0
    areas: list[str] | None = None
    while pending:
        name = pending.pop(0)
        if name == ".":
            continue
        if name == "..":
            real = posixpath.dirname(real)  # `real` holds no symlink: lexical `..` is the physical one
            continue
        candidate = posixpath.join(real, name)
        try:
            info = os.lstat(candidate)
        except (FileNotFoundError, NotADirectoryError):
            return posixpath.normpath(posixpath.join(candidate, *pending))
        if not stat.S_ISLNK(info.st_mode):
            real = candidate
            continue
        if areas is None:
            areas = [a for a in writable() if a and a != "/"]
        if any(_inside(real, area) for area in areas):
            raise PlantedLink(errno.EACCES, "leads through a symlink inside a folder the sandbox can write", candidate)
        links += 1
        if links > MAX_LINKS:
            raise OSError(errno.ELOOP, "Too many levels of symbolic links", os.fspath(path))
        try:
            target = os.readlink(candidate)
        except OSError:  # replaced since the lstat: look at it again (the link count bounds this)
            pending.insert(0, name)
            continue
        if target.startswith("/"):
            real = "/"
        pending = [p for p in target.split("/") if p] + pending
    return real
