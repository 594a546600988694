"""A fingerprint of each sessions.db row taken from its record header, without reading its history.

Which rows to look at after another process wrote comes first from the WAL (walscan.py names the rows on the
pages written since the last look); the scan of every row below is what a look falls back to when the WAL
cannot tell, and what a load does when the side index does not hold the content as it last saw it (dbstate.py).

What SQLite offers for telling which rows another process changed, measured on a 283 MB database of 649 rows
(SQLite 3.40, as Python's sqlite3 links it here: no `octet_length`):
  - `length(history)` counts characters, so it reads every history value: 0.3-0.4 s, and 4x that at 1.1 GB;
  - reading any column stored after `history` (opened_files, last_activity, history_cursor,
    active_file_sections) walks the history's overflow pages to reach it: ~90 ms, growing with the data;
  - `typeof(column)` and `Connection.blobopen(...)`'s length come from the record header (sqlite3_blob_open
    fills its type and offset cache without any I/O): ~2 us a row and column, at 3 MB as at 283 MB.
So a row's fingerprint is its rowid, the byte lengths of history, opened_files, last_activity and
active_file_sections (a blob handle each) and its meta's length and channel (both stored before the history:
on the row's first page). A load compares all of it (a hand edit of any one column is looked at again); after
another connection wrote (PRAGMA data_version), a quick scan reads the history's length alone and the other
columns' types: 2-4 ms for every row at 283 MB, 0.3 ms at 3 MB. Nothing cheaper tells which rows changed:
SQLite keeps no change marker that outlives a connection, and the original writes rows, nothing else.

The original rewrites the whole row at each save (upstream-formats §4.1, §6.1), and a save follows a change of
its history (a turn appended, /clear, reroll, a deleted or edited message): the history's byte length moves.
What this cannot see: a history edit that keeps the byte length exactly (a typo fixed by swapping two letters),
and a new last_activity of the same length with the history unchanged (a Discord turn that failed: the original
stores no failed turn, but its save writes the new time). The side index catches the second with a background
sweep of last_activity after each foreign write (sideindex.py); the first is seen at that session's next save,
which hashes the whole earlier text before indexing only what was appended. read-session pages read the current
text and check what they read (pages.py), and opening a session decodes its row: neither shows stale text.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

VERSION = "h1"  # fingerprints of another form (an earlier cireil's) never match: those rows are indexed again
_SIZED = ("history", "opened_files", "last_activity", "active_file_sections")


def _scan_sql(columns: Sequence[str], where: str = "") -> str:
    have = set(columns)
    # numbers and bytes, not text: the store's connection turns every text value into a str through a Python
    # function (sideindex.text_of_row), a third of the scan's time when every column went through it
    types = ", ".join(f"typeof({c}) IN ('text', 'blob')" if c in have else "0" for c in _SIZED)
    return f"SELECT rowid, id, {types}, length(meta), CAST(channel AS BLOB) FROM sessions{where}"


def _fingerprints(db: sqlite3.Connection, rows: list[tuple], quick: bool) -> dict[str, tuple[str, int]]:
    """{row id: (fingerprint, history bytes)}. A fingerprint is `quick part#lengths of the other columns`: a quick
    one is the part up to and with the `#`, so that it is the start of the whole one (headers.matches)."""
    out: dict[str, tuple[str, int]] = {}
    for rowid, row_id, *sized, meta_length, channel in rows:
        sizes = []
        for column, has_size in zip(_SIZED, sized, strict=True):
            if not has_size:
                sizes.append(-1)
            elif quick and column != "history":
                break
            else:
                try:
                    with db.blobopen("sessions", column, rowid, readonly=True) as blob:
                        sizes.append(len(blob))
                except sqlite3.Error:  # the row went meanwhile (outside a transaction): it is looked at again
                    sizes.append(-2)
        kinds = "".join("1" if has else "0" for has in sized)
        text = f"{VERSION}|{rowid}|{sizes[0]}|{meta_length}|{kinds}|{channel}#"
        if not quick:
            text += "|".join(map(str, sizes[1:]))
        out[row_id] = (text, sizes[0])
    return out


@contextmanager
def _snapshot(db: sqlite3.Connection) -> Iterator[None]:
    """One read transaction, unless the caller holds one already: every row from the same snapshot, and one WAL
    read lock for all the blob handles instead of one each."""
    began = not db.in_transaction
    if began:
        db.execute("BEGIN")
    try:
        yield
    finally:
        if began and db.in_transaction:
            db.execute("COMMIT")


def _read(db: sqlite3.Connection, sql: str, args: tuple, quick: bool = False) -> dict[str, tuple[str, int]]:
    with _snapshot(db):
        return _fingerprints(db, db.execute(sql, args).fetchall(), quick)


def fingerprints(db: sqlite3.Connection, columns: Sequence[str], *, quick: bool = False) -> dict[str, tuple[str, int]]:
    """Every row's (fingerprint, history bytes). quick: the length of the history only, the other columns' types
    (one blob handle a row instead of four): what tells the original's saves, which always rewrite the history;
    a load looks at every length, for what a hand edit of one column alone changed."""
    return _read(db, _scan_sql(columns), (), quick)


def fingerprint(db: sqlite3.Connection, columns: Sequence[str], row_id: str) -> tuple[str, int] | None:
    """One row's whole (fingerprint, history bytes), or None when there is no such row."""
    return _read(db, _scan_sql(columns, " WHERE id = ?"), (row_id,)).get(row_id)


def _of_rowids(db: sqlite3.Connection, columns: Sequence[str], rowids: list[int]) -> dict[str, tuple[str, int]]:
    found: dict[str, tuple[str, int]] = {}
    for start in range(0, len(rowids), 500):
        part = rowids[start : start + 500]
        found.update(_read(db, _scan_sql(columns, f" WHERE rowid IN ({','.join('?' * len(part))})"), tuple(part)))
    return found


def at_rowids(
    db: sqlite3.Connection, columns: Sequence[str], rowids: set[int]
) -> tuple[dict[str, tuple[str, int]], int]:
    """The whole (fingerprint, history bytes) of the rows with these rowids (walscan.py's), and how many rows
    there are, from one snapshot: the count tells whether a row went without reading every id (a third of a
    look after another process wrote, at 283 MB)."""
    with _snapshot(db):
        (count,) = db.execute("SELECT count(*) FROM sessions").fetchone()  # leaf pages only: ~0.1 ms at 283 MB
        return _of_rowids(db, columns, sorted(rowids)), count


def with_unknown(
    db: sqlite3.Connection, columns: Sequence[str], rowids: set[int], known: set[str]
) -> tuple[dict[str, tuple[str, int]], set[str]]:
    """The whole (fingerprint, history bytes) of the rows with these rowids and of the rows whose id is not in
    `known`, and the id of every row there is, all from one snapshot."""
    with _snapshot(db):
        present = dict(db.execute("SELECT id, rowid FROM sessions").fetchall())
        wanted = rowids.intersection(present.values()) | {r for i, r in present.items() if i not in known}
        return _of_rowids(db, columns, sorted(wanted)), set(present)


def matches(stored: str | None, scanned: str) -> bool:
    """Whether a fingerprint, taken quickly or whole, is the (whole) one stored."""
    return stored is not None and (stored == scanned or (scanned[-1:] == "#" and stored.startswith(scanned)))


def history_bytes(fingerprint: str | None) -> int | None:
    """The history's length in bytes that a fingerprint of this form holds, or None."""
    parts = (fingerprint or "").split("|", 3)
    if len(parts) < 4 or parts[0] != VERSION:
        return None
    try:
        size = int(parts[2])
    except ValueError:
        return None
    return size if size >= 0 else None
