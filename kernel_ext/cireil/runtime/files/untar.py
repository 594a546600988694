"""Unpacking a tar into a folder with what Python's "data" extraction filter refuses, on every Python 3.11.

The filters arrived in 3.11.4; Debian 12's own python3 is 3.11.2 and has none (`extractall(filter=...)` is a
TypeError there). Where they exist the "data" filter is used; before, its refusals are made by hand: absolute
names, names that climb out of the target, links that lead out of it, devices and FIFOs.
"""

from __future__ import annotations

import posixpath
import tarfile
from pathlib import Path


def extract_all(tar: tarfile.TarFile, target: Path) -> None:
    """Every member of `tar` into `target`; tarfile.TarError naming the first member refused (nothing of a
    refused archive is written when the checks run by hand: all members are checked first)."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(target, filter="data")
        return
    members = tar.getmembers()
    for member in members:
        check_member(member)
    tar.extractall(target, members=members)


def check_member(member: tarfile.TarInfo) -> None:
    """What the "data" filter refuses, as a tarfile.TarError naming the member."""
    name = member.name
    if _leaves(name):
        raise tarfile.TarError(f"{name!r} would be written outside the folder it is unpacked into")
    if member.issym() and _leaves(posixpath.join(posixpath.dirname(name), member.linkname)):
        raise tarfile.TarError(f"{name!r} is a link to {member.linkname!r}, outside the folder it is unpacked into")
    if member.islnk() and _leaves(member.linkname):
        raise tarfile.TarError(f"{name!r} is a hard link to {member.linkname!r}, outside the folder")
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise tarfile.TarError(f"{name!r} is a device or a FIFO; only files, folders and links are unpacked")


def _leaves(name: str) -> bool:
    return name.startswith(("/", "\\")) or posixpath.normpath(name).split("/")[0] == ".."
