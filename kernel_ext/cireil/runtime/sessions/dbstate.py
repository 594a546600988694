"""A token of sessions.db's whole content as a reader sees it, read from the file system without SQLite.

The side index keeps the token of the content it was last complete for; a load that finds the same token has
no row to look at, so a warm load costs the same at 3 MB and at 1 GB (headers.py's scan of every row is the
only other way to tell, and it grows with the rows).

What the token holds:
  - the database file's device, inode, size, mtime and ctime (ns): a checkpoint moves them too, which only
    costs a load that looks at every row; any write to the file by something else (a copy over it, a restore)
    moves them;
  - in WAL mode (the original's: upstream-formats §4), the WAL-index header, the first 48 bytes of the -shm
    file (https://sqlite.org/walformat.html §2.1): every commit changes its frame count, change counter and
    checksums, and a WAL restart its salts; and the -wal file's size (walscan.py: whether it was cut since).
    Both copies SQLite keeps of the header must agree and say it is set up, or there is no token (a writer
    mid-update, or a file this does not know). A WAL with no committed frame adds nothing to the file's
    content, and is written as a missing one, so that the WAL SQLite makes empty when a connection opens the
    file matches the state the last connection left when it closed.
None means unknown: the caller looks at every row.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

_HEADER = 48  # one copy of the WAL-index header; SQLite keeps two, one after the other
_VERSION = 3007000  # the WAL-index format's iVersion
_NO_FRAMES = "-"


def _wal_part(db_path: Path) -> str | None:
    try:
        wal_size = os.stat(f"{db_path}-wal").st_size
    except FileNotFoundError:
        return _NO_FRAMES
    except OSError:
        return None
    try:
        with open(f"{db_path}-shm", "rb") as shm:
            head = shm.read(2 * _HEADER)
    except FileNotFoundError:
        return _NO_FRAMES if wal_size == 0 else None
    except OSError:
        return None
    if len(head) < 2 * _HEADER:
        return _NO_FRAMES if wal_size == 0 else None
    first = head[:_HEADER]
    # native byte order: the -shm file is shared memory, never moved between machines
    version, _, _, is_init, _, _, frames = struct.unpack_from("=IIIBBHI", first)
    if first != head[_HEADER:] or version != _VERSION or is_init != 1:
        return None
    if frames == 0:
        return _NO_FRAMES
    try:  # after the header: a commit writes its frames before it counts them there
        wal_size = os.stat(f"{db_path}-wal").st_size
    except OSError:
        return None
    return f"{first.hex()}@{wal_size}"


def content_token(db_path: Path) -> str | None:
    """The token of the database's content now, or None when it cannot be told."""
    try:
        st = os.stat(db_path)
    except OSError:
        return None
    wal = _wal_part(db_path)
    if wal is None:
        return None
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}|{wal}"


def has_frames(token: str | None) -> bool:
    """Whether a token names committed frames in a WAL (its file must then be there for it to hold)."""
    return token is not None and not token.endswith("|" + _NO_FRAMES)


@dataclass(frozen=True)
class Parsed:
    """What walscan.py needs of a token."""

    file_id: str  # device and inode
    file: str  # device, inode, size, mtime, ctime
    frames: int  # committed frames in the WAL (0: none)
    salts: bytes  # the WAL's salts as its header holds them (b"" when no frames)
    page_size: int
    wal_size: int  # the -wal file's size in bytes, read after the frames were counted


def parse(token: str | None) -> Parsed | None:
    if not token or "|" not in token:
        return None
    file, _, wal = token.partition("|")
    fields = file.split(":")
    if len(fields) != 5:
        return None
    file_id = ":".join(fields[:2])
    if wal == _NO_FRAMES:
        return Parsed(file_id, file, 0, b"", 0, 0)
    text, _, size = wal.partition("@")
    try:
        header = bytes.fromhex(text)
        wal_size = int(size)
    except ValueError:
        return None
    if len(header) != _HEADER:
        return None
    page, frames = struct.unpack_from("=HI", header, 14)
    salts = header[32:40]  # copied from the WAL file's header as they lie there (big-endian)
    return Parsed(file_id, file, frames, salts, 65536 if page == 1 else page, wal_size)
