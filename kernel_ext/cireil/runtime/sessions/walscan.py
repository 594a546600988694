"""Which rows of sessions.db were written since a content token (dbstate.py), read from the WAL's frames.

In WAL mode (the original's, upstream-formats §4) every commit appends one frame per page it wrote to the
-wal file (https://sqlite.org/fileformat2.html §4). A row written has its cell, which holds its rowid and its
record header (every column's length), on a table b-tree leaf page; so the rowids on the leaf pages of the
frames committed since the token are every row written since, and a few more (its neighbours on those pages,
rows of other tables). The caller then looks at those rows alone, whatever the size of the file. What this
cannot see, the header fingerprint cannot see either (headers.py): a row rewritten with every column of the
same length and the same first bytes (SQLite then rewrites its overflow pages in place, not its leaf page).
Rows deleted are not on any page: the caller counts the rows. Whether such a write happened is told too
(Changes.whole): in each commit, every page of no b-tree kind must be an overflow page of a cell on a leaf page
of that commit, or a freelist trunk page, or freed (zeros); the activity sweep then reads the rows named alone.

Frames are only ever overwritten after a WAL restart, and a restart gives the WAL new salts (its first salt
counts restarts) in the WAL-index before any frame is written; so frames read between two looks at the same
salts are the committed ones. After one restart, what the generation before wrote past the token still lies
past the new one's frames (_left_behind). Any doubt (more restarts, a new generation over those frames, a WAL
cut since, a file changed outside the WAL, a torn or short read, a page that does not parse, more than
MAX_BYTES to read) gives None: the caller scans every row.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
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
    return leaf_cells(page, page_number, None)[0]


def leaf_cells(page: bytes, page_number: int, usable: int | None) -> tuple[list[int], list[int]]:
    """leaf_rowids, and the first overflow page of each cell whose record overflows (with `usable`, the page's
    usable size; https://sqlite.org/fileformat2.html §1.6)."""
    start = 100 if page_number == 1 else 0  # page 1 begins with the database header
    size = len(page)
    if start + 8 > size or page[start] != _TABLE_LEAF:
        return [], []
    (cells,) = struct.unpack_from(">H", page, start + 3)
    pointers = start + 8
    if pointers + 2 * cells > size:
        raise ValueError("the cell pointers run off the page")
    rowids, overflows = [], []
    for (pointer,) in struct.iter_unpack(">H", page[pointers : pointers + 2 * cells]):
        if not pointers + 2 * cells <= pointer < size:
            raise ValueError("a cell lies outside its page")
        payload, at = _varint(page, pointer, size)
        rowid, at = _varint(page, at, size)
        rowids.append(rowid - (1 << 64) if rowid >= 1 << 63 else rowid)
        if usable is not None and payload > usable - 35:
            least = (usable - 12) * 32 // 255 - 23
            local = least + (payload - least) % (usable - 4)
            at += local if local <= usable - 35 else least
            if at + 4 > size:
                raise ValueError("a cell's overflow page number lies outside its page")
            overflows.append(struct.unpack_from(">I", page, at)[0])
    return rowids, overflows


def _salts_now(db_path: Path) -> bytes | None:
    parsed = dbstate.parse(dbstate.content_token(db_path))
    return parsed.salts if parsed is not None and parsed.frames else None


class _Doubt(Exception):
    """Something read does not hold: the caller scans every row."""


_BTREE = frozenset({0x02, 0x05, 0x0A, _TABLE_LEAF})


@dataclass
class Changes:
    """What the frames committed since a token wrote. rowids: those on their table leaf pages. whole: each commit
    wrote b-tree pages, pages of zeros (freed), and overflow and freelist trunk pages that a cell on a leaf page
    or the freelist of that very commit leads to, and nothing else; so no row was written in place with its
    leaf page left as it was (a record rewritten at its size, which rowids cannot name: headers.py), and a
    column stored after the history changed only in the rows named."""

    rowids: set[int] = field(default_factory=set)
    whole: bool = True


class _Commits:
    """Reads frames in order, commit by commit, into a Changes. usable: the pages' usable size (None: unknown,
    then `whole` is False)."""

    def __init__(self, usable: int | None, page_size: int) -> None:
        self.found = Changes(whole=usable is not None)
        self.usable = usable
        self.zeros = bytes(page_size)
        self.others: dict[int, int] = {}  # the commit's pages of no b-tree kind: their first four bytes
        self.starts: list[int] = []  # where the overflow chains of the cells on its leaf pages begin
        self.trunk = 0  # the first freelist trunk page, when the commit wrote page 1

    def frame(self, frame: memoryview, page_size: int) -> None:
        page_number, commit = struct.unpack_from(">II", frame)
        page = frame[_FRAME_HEADER : _FRAME_HEADER + page_size]
        kind = page[100 if page_number == 1 else 0]
        if kind == _TABLE_LEAF:
            rowids, starts = leaf_cells(bytes(page), page_number, self.usable)
            self.found.rowids.update(rowids)
            self.starts += starts
        if page_number == 1:
            (self.trunk,) = struct.unpack_from(">I", page, 32)
        elif kind not in _BTREE and self.found.whole and page != self.zeros:
            (self.others[page_number],) = struct.unpack_from(">I", page)
        if commit:
            self._commit()

    def leaf(self, frame: memoryview, page_size: int) -> None:
        """A frame read for its rowids alone (once `whole` is False: the rest no longer matters)."""
        (page_number,) = struct.unpack_from(">I", frame)
        page = frame[_FRAME_HEADER : _FRAME_HEADER + page_size]
        if page[100 if page_number == 1 else 0] == _TABLE_LEAF:
            self.found.rowids.update(leaf_rowids(bytes(page), page_number))

    def drop_uncommitted(self) -> None:
        """Forget frames after the last commit read (a transaction the generation before never committed)."""
        self.others, self.starts, self.trunk = {}, [], 0

    def _commit(self) -> None:
        if self.others:
            reached: set[int] = set()
            for first in (*self.starts, self.trunk):
                page = first
                while page in self.others and page not in reached:
                    reached.add(page)
                    page = self.others[page]
            if len(reached) != len(self.others):
                self.found.whole = False
        self.others, self.starts, self.trunk = {}, [], 0


def _frames(fd: int, first: int, last: int, salts: bytes, page_size: int, commits: _Commits) -> None:
    """Frames first..last (1-based), every one of which must bear `salts`, into `commits`. A commit's frames are
    mostly overflow pages: each byte checked is taken from every frame of a chunk at once (a slice with a
    step); once `whole` is decided False, only the leaf pages are looked into."""
    size = _FRAME_HEADER + page_size
    at, end = _WAL_HEADER + (first - 1) * size, _WAL_HEADER + last * size
    while at < end:
        want = min(max(_CHUNK // size, 1) * size, end - at)
        chunk = os.pread(fd, want, at)
        if len(chunk) != want:
            raise _Doubt("a WAL shorter than its index says: truncated meanwhile")
        frames = want // size
        if any(chunk[8 + n :: size] != bytes([salts[n]]) * frames for n in range(8)):
            raise _Doubt("a frame of another generation")
        kinds = chunk[_FRAME_HEADER::size]  # the first byte of each page (page 1's lies further: looked into)
        view = memoryview(chunk)
        for n in range(frames):
            frame = view[n * size : (n + 1) * size]
            if commits.found.whole:
                commits.frame(frame, page_size)
            elif kinds[n] == _TABLE_LEAF or struct.unpack_from(">I", chunk, n * size)[0] == 1:
                commits.leaf(frame, page_size)
        at += want


def _one_restart(before: bytes, after: bytes) -> bool:
    """Whether the WAL restarted exactly once between two salt pairs (the first salt counts restarts)."""
    return struct.unpack(">I", after[:4])[0] == (struct.unpack(">I", before[:4])[0] + 1) & 0xFFFFFFFF


def _left_behind(fd: int, old: dbstate.Parsed, new: dbstate.Parsed, commits: _Commits) -> None:
    """The rows on the leaf pages of the frames the generation before a restart committed after `old`: they still
    lie after old.frames, where the new generation (new.frames of them, fewer) has not written. They run up to
    the first frame of an older generation, or to the end of the file when it was not cut since `old` (a
    TRUNCATE checkpoint, or a journal_size_limit at the restart: the original uses neither): it is then no
    shorter than it was, ends on a whole frame, and a file cut and grown again past `old`'s frames would hold
    the new generation's frames there. Read again at the end, the first of them shows whether a writer reached
    them meanwhile."""
    size = _FRAME_HEADER + old.page_size
    first_at = _WAL_HEADER + old.frames * size
    head = os.pread(fd, _FRAME_HEADER, first_at)
    position = old.frames + 1
    read = 0
    while True:
        frame = memoryview(os.pread(fd, size, _WAL_HEADER + (position - 1) * size))
        if not frame:
            end = os.fstat(fd).st_size
            if end < old.wal_size or end != _WAL_HEADER + (position - 1) * size:
                raise _Doubt("the WAL was cut since: frames of the generation before may be gone")
            break
        if len(frame) != size:
            raise _Doubt("a frame cut short")
        salts = bytes(frame[8:16])
        if salts == new.salts:
            raise _Doubt("the new generation wrote over the frames of the one before")
        if salts != old.salts:
            break  # a frame of an older generation: the one before the restart ended here
        read += size
        if read > MAX_BYTES:
            raise _Doubt("too many frames")
        commits.frame(frame, old.page_size)
        position += 1
    if os.pread(fd, _FRAME_HEADER, first_at) != head:
        raise _Doubt("a writer reached the frames while they were read")


def changes(db_path: Path, since: str | None, now: str | None) -> Changes | None:
    """What was committed after `since` up to `now` (both content tokens, `now` read the latest), or None when
    the WAL cannot tell."""
    old, new = dbstate.parse(since), dbstate.parse(now)
    if old is None or new is None or old.file_id != new.file_id:
        return None
    if since == now:
        return Changes()
    if not new.frames:
        return None  # the file itself changed (a checkpoint by a last close, a copy over it): not in any frame
    restarted = False
    if not old.frames:
        if old.file != new.file:
            return None  # frames may have been checkpointed into the file and dropped since
        first = 1
    elif old.salts == new.salts and new.frames >= old.frames:
        first = old.frames + 1
    elif _one_restart(old.salts, new.salts) and new.frames < old.frames and old.page_size == new.page_size:
        restarted, first = True, 1
    else:
        return None  # restarted more than once, or over what the generation before held after `since`
    if (new.frames - first + 1) * (_FRAME_HEADER + new.page_size) > MAX_BYTES:
        return None
    commits = _Commits(_usable(db_path, new.page_size), new.page_size)
    try:
        with open(f"{db_path}-wal", "rb") as wal:
            header = wal.read(_WAL_HEADER)
            if len(header) < _WAL_HEADER or struct.unpack_from(">I", header)[0] not in _WAL_MAGIC:
                return None
            if struct.unpack_from(">I", header, 8)[0] != new.page_size or header[16:24] != new.salts:
                return None
            if restarted:
                _left_behind(wal.fileno(), old, new, commits)
                commits.drop_uncommitted()
            _frames(wal.fileno(), first, new.frames, new.salts, new.page_size, commits)
    except (OSError, ValueError, _Doubt):
        return None
    # the frames read are the committed ones only if no restart began meanwhile
    return commits.found if _salts_now(db_path) == new.salts else None


def _usable(db_path: Path, page_size: int) -> int | None:
    """The pages' usable size: the page size less the bytes the database header reserves at each page's end."""
    try:
        with open(db_path, "rb") as db:
            header = db.read(100)
    except OSError:
        return None
    return page_size - header[20] if len(header) == 100 and header[20] < page_size else None
