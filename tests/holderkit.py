"""A process that holds an agent's sessions.db open the way the original's better-sqlite3 does (WAL, one read
done, the connection kept), standing in for the original where only its holding the file matters."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HOLD = textwrap.dedent(
    """
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    side = open(sys.argv[2], "rb") if len(sys.argv) > 2 else None  # a cireil also has its side file open
    print("ready", flush=True)
    sys.stdin.readline()
    """
)


class Held:
    def __init__(self, db: Path, *extra: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(db), *map(str, extra)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout.readline().strip() == "ready"

    def stop(self) -> None:
        self.proc.communicate("\n", timeout=10)
