"""Which other processes have an agent's sessions.db open, asked afresh every time (never from a cache).

The original runtime keeps no lock or PID file (upstream-formats §6.3): the only sign that it runs an agent is
that its process has `sessions.db` open. Every SQLite connection in WAL mode holds a shared lock on the
"DMS" byte of the `-shm` file for as long as it is open, so asking the kernel which lock would block an
exclusive one there (F_GETLK, through the descriptor SQLite itself opened: opening and closing a second one
would drop this process's own locks on the file) answers "is anybody else here" in microseconds. Only when
somebody is, the `/proc/<pid>/fd` links say who: a process that also has cireil's side file open is another
cireil (it writes with the same compare-and-swap as this one, so nothing of ours is lost to it); any other is
taken for the original.
"""

from __future__ import annotations

import fcntl
import os
import struct
from dataclasses import dataclass
from pathlib import Path

_DMS_OFFSET = 128  # SQLite's unix VFS: the shm lock slots start at 120, eight of them, then the DMS byte
_FLOCK = "hhqqi"  # struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid


@dataclass(frozen=True)
class Holder:
    """Another process with sessions.db open."""

    pid: int
    started: int  # its start time in clock ticks since boot (/proc/<pid>/stat): a reused pid is another holder
    cireil: bool  # it has cireil's side file open too: another kernel or CLI of cireil's

    def __str__(self) -> str:
        return f"pid {self.pid}"


def _own_descriptor(target: str) -> int | None:
    """This process's open descriptor of `target` (SQLite's own), or None."""
    try:
        entries = os.scandir("/proc/self/fd")
    except OSError:
        return None
    with entries:
        for entry in entries:
            try:
                if os.readlink(entry.path) == target:
                    return int(entry.name)
            except (OSError, ValueError):
                continue
    return None


def _nobody_else(shm: str, descriptor: int | None) -> bool:
    """True when no other process holds a lock on the DMS byte of `shm`: nobody else has the database open in
    WAL mode. False when somebody might (or the question cannot be asked): the caller then looks at /proc."""
    if descriptor is None:
        return False
    try:
        if os.readlink(f"/proc/self/fd/{descriptor}") != shm:
            return False  # SQLite closed and reused the number: never ask a lock question of another file
        probe = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, _DMS_OFFSET, 1, 0)
        answer = fcntl.fcntl(descriptor, fcntl.F_GETLK, probe)
    except OSError:
        return False
    return struct.unpack(_FLOCK, answer)[0] == fcntl.F_UNLCK


class HolderProbe:
    """Asks, for one sessions.db, which other processes have it open (`holders()`), cheaply when none do."""

    def __init__(self, db_path: Path, side_path: Path) -> None:
        real = os.path.realpath(db_path)
        self._targets = {real, real + "-wal", real + "-shm"}
        self._shm = real + "-shm"
        self._side = os.path.realpath(side_path)
        self._descriptor: int | None = None

    def holders(self) -> list[Holder]:
        if self._descriptor is None or not _nobody_else(self._shm, self._descriptor):
            self._descriptor = _own_descriptor(self._shm)
            if _nobody_else(self._shm, self._descriptor):
                return []
        else:
            return []
        return scan(self._targets, self._side)

    def originals(self) -> list[Holder]:
        """The holders that are not cireil: the original runtime's `run`, `tui`, `clear` or `repair`."""
        return [h for h in self.holders() if not h.cireil]


def scan(targets: set[str], side: str) -> list[Holder]:
    """Every other process with one of `targets` open, from /proc (Linux); [] where there is no /proc."""
    me = os.getpid()
    found: list[Holder] = []
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        holds = cireil = False
        try:
            with os.scandir(f"/proc/{entry.name}/fd") as fds:
                for fd in fds:
                    try:
                        link = os.readlink(fd.path)
                    except OSError:
                        continue
                    holds = holds or link in targets
                    cireil = cireil or link == side
        except OSError:
            continue
        if holds:
            found.append(Holder(int(entry.name), _start_ticks(entry.name), cireil))
    return found


def _start_ticks(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # the command name may hold spaces and brackets
        return int(fields[19])  # field 22 of stat(5); 0-based 19 after the pid and the name
    except (OSError, IndexError, ValueError):
        return 0
