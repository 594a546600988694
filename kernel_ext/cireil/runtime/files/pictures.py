"""Reading a picture a view shows or a stored history row names, without trusting the path.

An attachment path comes from a model's respond call and an image_ref from a sessions.db row (the
original runtime's, or a hand-edited one): either may point out of where it belongs, at a FIFO that
would block the kernel, or at a file of gigabytes. Both are read only through safefs: from a
descriptor of their folder (the sandbox root, or `<agent>/images`), no symlink followed, regular
files only, and no more than a limit. Anything else is a reason the caller shows instead of the picture.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import ToolError
from . import safefs
from .media import media_kind

if TYPE_CHECKING:
    from .paths import SandboxPaths

STORED_IMAGE_LIMIT = 32 * 1024 * 1024  # bytes: far over what any provider accepts as one picture


class Unreadable(Exception):
    """Why a picture is not shown (a short reason, with sandbox paths only)."""


def _read(target: safefs.Target, limit: int) -> bytes:
    try:
        fd, info = safefs.open_regular(target)
    except FileNotFoundError:
        raise Unreadable("no such file") from None
    except IsADirectoryError:
        raise Unreadable("a directory") from None
    except safefs.NotRegularFile:
        raise Unreadable("not a regular file") from None
    except ToolError:
        raise Unreadable("a symlink appeared in its path") from None
    except OSError as exc:
        raise Unreadable(exc.strerror or "cannot be read") from None
    try:
        if info.st_size > limit:
            raise Unreadable(f"{info.st_size:,} bytes, over the {limit:,}-byte limit for showing it")
        data = safefs.read_fd(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Unreadable(f"over the {limit:,}-byte limit for showing it")
    return data


def sandbox_picture(paths: SandboxPaths, path: str, limit: int) -> bytes:
    """The bytes of the picture at sandbox path `path`; Unreadable when it is not one that may be shown."""
    kind = media_kind(path)
    if kind is None or kind[0] != "image":
        raise Unreadable("not a picture")
    try:
        resolved = paths.resolve(path)
    except ToolError:
        raise Unreadable("outside the sandbox") from None
    return _read(resolved.target, limit)


def stored_image(images_dir: Path, name: str, limit: int = STORED_IMAGE_LIMIT) -> bytes:
    """The bytes of `<images_dir>/<name>`, a plain file name; Unreadable otherwise."""
    if not name or "/" in name or name in (".", "..") or "\0" in name:
        raise Unreadable("not a file name")
    try:
        boundary = os.path.realpath(images_dir, strict=True)
    except OSError:
        raise Unreadable("no images folder") from None
    return _read(safefs.Target(boundary, name, f"images/{name}"), limit)
