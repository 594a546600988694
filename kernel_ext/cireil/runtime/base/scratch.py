"""Temporary folders that go with the process that made them, however it ends.

A kernel is not always let exit: a front end's shutdown kills one that does not stop within its grace, a test
harness kills it outright, and then atexit never runs and a copy stays in /tmp or /dev/shm for good.
`remove_when_gone` starts a small `sh` that waits on a pipe whose only writer is this process; the write end
is closed when the process ends, by whatever means, and the guard removes the folder. `scratch_dir` makes a
folder guarded so and removed at a normal exit too.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["remove_when_gone", "scratch_dir"]

# the write ends of the guards' pipes and the guards themselves, held for as long as this process lives
_GUARDS: list[tuple[int, subprocess.Popen]] = []


def remove_when_gone(scratch: Path | str) -> None:
    """Remove `scratch` once this process is gone, even when it ends without running atexit. The pipe's fd is
    not inheritable, so nothing exec'd keeps it open; the guard's own session keeps a kernel interrupt (SIGINT
    to the kernel's group) off it."""
    if not shutil.which("sh"):
        return  # atexit alone, as before
    read_end, write_end = os.pipe()
    try:
        guard = subprocess.Popen(
            ["sh", "-c", 'read _ignored; rm -rf -- "$1"', "cireil-scratch-guard", str(scratch)],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        os.close(write_end)
        return
    finally:
        os.close(read_end)
    _GUARDS.append((write_end, guard))


def _remove(folder: str, owner_pid: int) -> None:
    # a forked child inherits atexit handlers; only the process that made the folder removes it
    if os.getpid() == owner_pid:
        with contextlib.suppress(OSError):
            shutil.rmtree(folder)


def scratch_dir(prefix: str, parent: str | None = None) -> Path:
    """A new temporary folder, removed at this process's exit and, should it be killed, by its guard."""
    folder = tempfile.mkdtemp(prefix=prefix, dir=parent)
    atexit.register(_remove, folder, os.getpid())
    remove_when_gone(folder)
    return Path(folder)
