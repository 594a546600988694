"""The process umask, read without changing it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def current_umask() -> int:
    # os.umask can only be read by setting it, which would briefly change it for every thread of
    # the kernel; Linux publishes it read-only in /proc.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
