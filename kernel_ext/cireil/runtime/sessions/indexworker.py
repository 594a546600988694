"""An index build's JSON work, in a process of its own: the kernel's GIL stays free for the writer's FTS
inserts and for the user's cells, and the parse runs on another core. The kernel's side, and the frames both
sides speak, are in workerpipe.py.

The worker reads sessions.db read-only, answers the rows it is asked for in order, and ends at the end of its
stdin.
"""

from __future__ import annotations

import dataclasses
import signal
import sqlite3
import sys
from typing import Any

from .indexbuild import gc_paused, read_entry
from .sideindex import BadText, text_of_row
from .store import decode_row, row_problem, select_of
from .workerpipe import read_frame, write_frame


def _answer(db: sqlite3.Connection, columns: list[str], select: str, row_id: str, reading: Any) -> Any:
    found = read_entry(db, columns, select, row_id, *reading)
    if found is None:
        return None
    entry, size = found
    if isinstance(entry.last_activity, str):
        entry.last_activity = str(entry.last_activity)  # a BadText is stored as the text it shows
    fields = tuple(getattr(entry, f.name) for f in dataclasses.fields(entry)[1:])  # all but row_id, in order
    return ("entry", size, fields)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the kernel stops this process by closing its stdin
    source, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not land inside a frame
    try:
        uri, columns = read_frame(source)
    except EOFError:
        return
    failed = None
    try:
        db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=5.0)
        db.text_factory = text_of_row
        select, reading = select_of(columns), (decode_row, row_problem)
    except Exception as exc:  # the answer to every row asked
        failed = ("failed", f"{type(exc).__name__}: {exc}")
    with gc_paused():  # nothing here makes cyclic garbage; see gc_paused
        while True:
            try:
                ids = read_frame(source)
            except EOFError:
                return
            for row_id, bad in ids:
                try:
                    answer = failed or _answer(db, columns, select, BadText(row_id) if bad else row_id, reading)
                except Exception as exc:  # said to the kernel, which fails the build with it
                    answer = ("failed", f"{type(exc).__name__}: {exc}")
                try:
                    write_frame(out, answer)
                    out.flush()  # each row as soon as it is read: the writer stores it beside the next
                except BrokenPipeError:
                    return


if __name__ == "__main__":
    main()
