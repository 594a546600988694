"""Which rows of sessions.db were written since a content token (dbstate.py), read from the WAL's frames.

In WAL mode (the original's, upstream-formats §4) every commit appends one frame per page it wrote to the
-wal file (https://sqlite.org/fileformat2.html §4). A row written has its cell, which holds its rowid and its
record header (every column's length), on a table b-tree leaf page; so the rowids on the leaf pages of the
frames committed since the token are every row written since, and a few more (its neighbours on those pages,
rows of other tables). The caller then looks at those rows alone, whatever the size of the file. What this
cannot see, the header fingerprint cannot see either (headers.py): a row rewritten with every column of the
same length and the same first bytes (SQLite then rewrites its overflow pages in place, not its leaf page).
Rows deleted are not on any page: the caller compares the row ids it indexed with those there are now.

Frames are only ever overwritten after a WAL restart, and a restart gives the WAL new salts (its first salt
counts restarts) in the WAL-index before any frame is written; so frames read between two looks at the same
salts are the committed ones. Any doubt (a restart since the token, a file changed outside the WAL, a torn
or short read, a page that does not parse, more than MAX_BYTES to read) gives None: the caller scans every row.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from . import dbstate

MAX_BYTES = 256 << 20  # of frames read at one look: a WAL larger than that is rarer than a scan of every row
_CHUNK = 4 << 20
_WAL_HEADER = 32
_FRAME_HEADER = 24
_WAL_MAGIC = (0x377F0682, 0x377F0683)
_TABLE_LEAF = 0x0D


def _varint(page: bytes, at: int, end: int) -> tuple[int, int]:
    """SQLite's varint at `at` (at most 9 bytes, big-endian groups of 7 bits, the 9th of 8): (value, next)."""
    value = 0
    for n in range(9):
        if at >= end:
            raise ValueError("a varint runs off the page")
        byte = page[at]
        at += 1
        if n == 8:
            return (value << 8) | byte, at
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at
    raise AssertionError("unreachable")


def leaf_rowids(page: bytes, page_number: int) -> list[int]:
    """The rowids of a table leaf page's cells ([] for a page of another kind). Raises ValueError when the page
    says it is a table leaf but its cells do not lie within it."""
    start = 100 if page_number == 1 else 0  # page 1 begins with the database header
    size = len(page)
    if start + 8 > size or page[start] != _TABLE_LEAF:
        return []
    (cells,) = struct.unpack_from(">H", page, start + 3)
    pointers = start + 8
    if pointers + 2 * cells > size:
        raise ValueError("the cell pointers run off the page")
    out = []
    for (pointer,) in struct.iter_unpack(">H", page[pointers : pointers + 2 * cells]):
        if not pointers + 2 * cells <= pointer < size:
            raise ValueError("a cell lies outside its page")
        _, at = _varint(page, pointer, size)  # the payload's size
        rowid, _ = _varint(page, at, size)
        out.append(rowid - (1 << 64) if rowid >= 1 << 63 else rowid)
    return out


def _salts_now(db_path: Path) -> bytes | None:
    parsed = dbstate.parse(dbstate.content_token(db_path))
    return parsed.salts if parsed is not None and parsed.frames else None


def changed_rowids(db_path: Path, since: str | None, now: str | None) -> set[int] | None:
    """The rowids on the table leaf pages committed after `since` up to `now` (both content tokens, `now` read
    the latest), or None when that cannot be told from the WAL."""
    old, new = dbstate.parse(since), dbstate.parse(now)
    if old is None or new is None or old.file_id != new.file_id:
        return None
    if since == now:
        return set()
    if not new.frames:
        return None  # the file itself changed (a checkpoint by a last close, a copy over it): not in any frame
    if not old.frames:
        if old.file != new.file:
            return None  # frames may have been checkpointed into the file and dropped since
        first = 0
    elif old.salts != new.salts or new.frames < old.frames:
        return None  # the WAL restarted since: what it held before is gone
    else:
        first = old.frames
    frame = _FRAME_HEADER + new.page_size
    begin, end = _WAL_HEADER + first * frame, _WAL_HEADER + new.frames * frame
    if end - begin > MAX_BYTES:
        return None
    found: set[int] = set()
    try:
        with open(f"{db_path}-wal", "rb") as wal:
            header = wal.read(_WAL_HEADER)
            if len(header) < _WAL_HEADER or struct.unpack_from(">I", header)[0] not in _WAL_MAGIC:
                return None
            if struct.unpack_from(">I", header, 8)[0] != new.page_size or header[16:24] != new.salts:
                return None
            at = begin
            while at < end:
                want = min(max(_CHUNK // frame, 1) * frame, end - at)
                chunk = os.pread(wal.fileno(), want, at)
                if len(chunk) != want:
                    return None  # a WAL shorter than its index says: truncated meanwhile
                view = memoryview(chunk)
                for offset in range(0, len(chunk), frame):
                    if view[offset + 8 : offset + 16] != new.salts:
                        return None
                    (page_number,) = struct.unpack_from(">I", chunk, offset)
                    body = offset + _FRAME_HEADER
                    kind_at = body + (100 if page_number == 1 else 0)
                    if chunk[kind_at] == _TABLE_LEAF:
                        found.update(leaf_rowids(bytes(view[body : body + new.page_size]), page_number))
                at += len(chunk)
    except (OSError, ValueError):
        return None
    # the frames read are the committed ones only if no restart began meanwhile
    return found if _salts_now(db_path) == new.salts else None
