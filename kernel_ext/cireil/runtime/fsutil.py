"""Writing files so that a failure never leaves half a file behind."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def _current_umask() -> int:
    # os.umask can only be read by setting it, which would briefly change it for every thread of
    # the kernel; Linux publishes it read-only in /proc.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(host: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write through a temporary file in the same folder, then rename over `host`.

    An existing file keeps its permission bits; a new one gets `mode`, or the usual 0666 masked by
    the umask. Parent folders are created.
    """
    host.parent.mkdir(parents=True, exist_ok=True)
    try:
        keep = stat.S_IMODE(os.stat(host).st_mode)
    except FileNotFoundError:
        keep = mode if mode is not None else 0o666 & ~_current_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{host.name}.", suffix=".tmp", dir=host.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, keep)
        os.replace(tmp, host)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
