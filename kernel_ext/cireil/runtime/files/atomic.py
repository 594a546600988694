"""Writing files so that a failure never leaves half a file behind."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import ToolError
from . import safefs
from .umask import current_umask

if TYPE_CHECKING:
    from .paths import ResolvedPath


def atomic_write(host: Path, data: bytes, *, mode: int | None = None, keep_mode: bool = True) -> None:
    """Write through a temporary file in the same folder, then rename over `host`.

    An existing file keeps its permission bits (with keep_mode=False it gets `mode` too: a file restored as it
    was, or one that must stay private); a new one gets `mode`, or the usual 0666 masked by the umask. Parent
    folders are created.
    """
    host.parent.mkdir(parents=True, exist_ok=True)
    if mode is not None and not keep_mode:
        keep = mode
    else:
        try:
            keep = stat.S_IMODE(os.stat(host).st_mode)
        except FileNotFoundError:
            keep = mode if mode is not None else 0o666 & ~current_umask()
    tmp = str(host.parent / safefs.temp_name())  # a reserved name: swept at the next load if we die here
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, keep)
        os.replace(tmp, host)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_sandbox_file(resolved: ResolvedPath, data: bytes, shown: str, *, exclusive: bool = False) -> None:
    """safefs.write_atomic for a tool: failures become ToolErrors that name the sandbox path only."""
    try:
        safefs.write_atomic(resolved.target, data, exclusive=exclusive)
    except IsADirectoryError:
        raise ToolError(f"'{shown}' is a directory.", hint="Give the path of a file inside it.") from None
    except NotADirectoryError:
        raise ToolError(
            f"ENOTDIR: a parent of '{shown}' is not a directory.", hint="Check the path with list-dir."
        ) from None
    except FileExistsError:
        raise ToolError(f"File already exists at {resolved.sandbox}", hint="Choose another path.") from None
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise ToolError(f"{errno.errorcode[exc.errno]}: cannot write '{shown}': {exc.strerror}") from None
        raise
