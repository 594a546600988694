"""Races on paths: a thread that swaps a directory for a symlink to the outside while tools run, and a snapshot
of the outside to prove nothing there changed (shared by the path-race and bwrap bind tests)."""

from __future__ import annotations

import os
import random
import shutil
import threading
import time
from pathlib import Path

SECRET = "OUTSIDE-SECRET-CONTENT"


def snapshot(directory: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(directory.rglob("*")):
        out[str(path.relative_to(directory))] = path.read_bytes() if path.is_file() else b"<dir>"
    return out


class Swapper(threading.Thread):
    """Flips `path` between the real directory and a symlink to `outside` as fast as it can; with `linger`,
    the real directory stays up to that many seconds between flips, so both states get seen.

    Something may take the real directory's place while it is away (a write making a new directory, bwrap
    making a directory or an empty file to mount on): settling removes it.
    """

    def __init__(self, path: Path, outside: Path, *, linger: float = 0.0) -> None:
        super().__init__(daemon=True)
        self.path, self.real, self.outside = path, path.with_name(path.name + ".real"), outside
        self.linger = linger
        self.stop = threading.Event()
        self.swaps = 0

    def _settle(self) -> None:
        """Put the real directory back at `path`."""
        if not self.real.exists():
            return
        if self.path.is_symlink() or self.path.is_file():
            self.path.unlink()
        elif self.path.is_dir():
            shutil.rmtree(self.path)
        os.rename(self.real, self.path)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self._settle()
                os.rename(self.path, self.real)
                os.symlink(self.outside, self.path)
                time.sleep(0)
                os.unlink(self.path)
                os.rename(self.real, self.path)
                self.swaps += 1
                if self.linger:
                    time.sleep(random.random() * self.linger)
            except OSError:
                continue

    def restore(self) -> None:
        self.stop.set()
        self.join(5)
        self._settle()
