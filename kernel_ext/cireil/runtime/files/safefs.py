"""Opening sandbox files without a window between checking a path and using it.

`SandboxPaths.resolve` checks a path by its realpath; a command running in exec at the same time
could swap a directory of that path for a symlink to the outside just after the check. So nothing
here opens a host path by name: each operation starts from a descriptor of the root (or mount
source) and walks the already-resolved relative path one component at a time with
`O_NOFOLLOW | O_DIRECTORY`. The resolved path has no symlinks left in it, so any symlink met on the
walk was planted after the check, and the walk refuses it instead of following it. Files are opened
`O_NONBLOCK | O_NOFOLLOW` and checked with fstat: a FIFO or device never blocks a tool, only regular
files are read.

Writes never show a half-written file under a name the agent lists (list-dir, or `ls` in exec): the
data goes to a temporary file in cireil's private folder `<agent>/.cireil/tmp` (outside every sandbox
mount), which is then renamed into the opened directory (renameat between the two descriptors). Only
when the target is on another filesystem (a mount) is the file made in the target directory itself:
unnamed (O_TMPFILE) while it is written, given a temporary name only for the instant between linking
it and renaming it over the target; a filesystem without O_TMPFILE gets a named temporary file.

Temporary files carry a reserved name (TEMP_PREFIX): list-dir does not show them, the path model
refuses them, and `sweep_stale` removes the ones an interrupted write left behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
from dataclasses import dataclass

from ..base.errors import ToolError
from .umask import current_umask

TEMP_PREFIX = ".cireil-tmp-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


class NotRegularFile(OSError):
    """The name is there but is not a regular file (a FIFO, socket or device)."""


def is_temp_name(name: str) -> bool:
    return name.startswith(TEMP_PREFIX)


def temp_name() -> str:
    # the pid lets the sweep tell a write still in progress in a live process from a leftover
    return f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"


def _changed(sandbox: str) -> ToolError:
    return ToolError(
        f"Access denied: path '{sandbox}' changed while it was being opened (a symlink appeared in it).",
        hint="Try again once nothing is moving files around in that folder.",
    )


@dataclass(frozen=True)
class Target:
    """Where to walk from and what to walk: a boundary (realpath of a root) and a relative path."""

    boundary: str
    rel: str  # no '..', no symlinks at resolve time; '' is the boundary itself
    sandbox: str  # for messages: never the host path
    scratch: str = ""  # host path of cireil's private temp folder for writes; '' = none

    @property
    def parts(self) -> list[str]:
        return [p for p in self.rel.split("/") if p]


def _open_boundary(target: Target) -> int:
    try:
        return os.open(target.boundary, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _changed(target.sandbox) from None
        raise


def _step(dfd: int, name: str, target: Target, *, create: bool) -> int:
    """Open directory `name` below `dfd` without following a symlink; optionally create it."""
    for _ in range(2):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dfd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):  # made by someone else meanwhile: open it then
                os.mkdir(name, 0o777, dir_fd=dfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    raise _changed(target.sandbox) from None
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory", target.sandbox) from None
            raise
    return os.open(name, _DIR_FLAGS, dir_fd=dfd)


def open_dir(target: Target, parts: list[str] | None = None, *, create: bool = False) -> int:
    """A descriptor of the directory `parts` (default: the whole target) below the boundary."""
    fd = _open_boundary(target)
    try:
        for name in target.parts if parts is None else parts:
            nxt = _step(fd, name, target, create=create)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_parent(target: Target, *, create: bool = False) -> tuple[int, str]:
    """(descriptor of the parent directory, final name); the target must not be the boundary."""
    parts = target.parts
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "Is a directory", target.sandbox)
    return open_dir(target, parts[:-1], create=create), parts[-1]


def open_regular(target: Target) -> tuple[int, os.stat_result]:
    """Open the target for reading: (fd, stat). Raises FileNotFoundError, IsADirectoryError, NotRegularFile."""
    if not target.parts:
        raise IsADirectoryError(errno.EISDIR, "Is a directory", target.sandbox)
    dfd, name = open_parent(target)
    try:
        # look before opening, so that a device node is not even opened (opening some has effects);
        # the fstat below still decides, should the name be swapped in between
        seen = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if stat.S_ISDIR(seen.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", target.sandbox)
        if stat.S_ISLNK(seen.st_mode):
            raise _changed(target.sandbox)
        if not stat.S_ISREG(seen.st_mode):
            raise NotRegularFile(errno.EINVAL, "Not a regular file", target.sandbox)
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _changed(target.sandbox) from None
            raise
    finally:
        os.close(dfd)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", target.sandbox)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(errno.EINVAL, "Not a regular file", target.sandbox)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_fd(fd: int, limit: int | None = None) -> bytes:
    """Everything from `fd` (at most limit + 1 bytes, so a caller can tell the file grew past it)."""
    chunks: list[bytes] = []
    total = 0
    while limit is None or total <= limit:
        want = 1 << 20 if limit is None else min(1 << 20, limit + 1 - total)
        chunk = os.read(fd, want)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_bytes(target: Target, limit: int | None = None) -> bytes:
    fd, _ = open_regular(target)
    try:
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def stat_entry(target: Target) -> os.stat_result | None:
    """lstat of the target through its parent descriptor; None when it does not exist."""
    if not target.parts:
        fd = _open_boundary(target)
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)
    try:
        dfd, name = open_parent(target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    finally:
        os.close(dfd)


SCRATCH_DIR = ".cireil/tmp"  # below the agent directory: never bound into the sandbox, never listed
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_scratch(path: str, near: int) -> int | None:
    """A descriptor of the private temp folder when it is on the filesystem of `near`; else None."""
    if not path:
        return None
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        fd = os.open(path, _DIR_FLAGS)
    except OSError:  # unwritable agent directory, a symlink put there: write beside the target instead
        return None
    if os.fstat(fd).st_dev != os.fstat(near).st_dev:
        os.close(fd)
        return None
    return fd


def _write_all(fd: int, data: bytes, keep: int) -> None:
    """All of `data`, on disk (fsync), then the file's permission bits."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)
    os.fchmod(fd, keep)


def _fill(fd: int, data: bytes, keep: int) -> None:
    try:
        _write_all(fd, data, keep)
    finally:
        os.close(fd)


def _place(src_dfd: int, tmp: str, dfd: int, name: str, exclusive: bool) -> None:
    """Rename (or, exclusive, hard-link) the finished `tmp` in `src_dfd` to `name` in `dfd`."""
    if exclusive:
        os.link(tmp, name, src_dir_fd=src_dfd, dst_dir_fd=dfd, follow_symlinks=False)
        os.unlink(tmp, dir_fd=src_dfd)
    else:
        os.replace(tmp, name, src_dir_fd=src_dfd, dst_dir_fd=dfd)


def _write_named(src_dfd: int, dfd: int, name: str, data: bytes, keep: int, exclusive: bool) -> None:
    tmp = temp_name()
    fd = os.open(tmp, _NEW_FILE, 0o600, dir_fd=src_dfd)
    try:
        _fill(fd, data, keep)
        _place(src_dfd, tmp, dfd, name, exclusive)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=src_dfd)
        raise


def _write_unnamed(dfd: int, name: str, data: bytes, keep: int, exclusive: bool) -> bool:
    """Write into an O_TMPFILE file of the directory and link it in; False when that cannot be done here."""
    try:
        fd = os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=dfd)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):  # no O_TMPFILE on this filesystem
            return False
        raise
    proc = f"/proc/self/fd/{fd}"
    try:
        _write_all(fd, data, keep)
        if not os.path.isdir("/proc/self/fd"):  # no /proc to link an unnamed file through
            return False
        if exclusive:  # linkat refuses an existing name: no temporary name at all
            os.link(proc, name, dst_dir_fd=dfd, follow_symlinks=True)
            return True
        tmp = temp_name()  # linkat cannot replace: a name for the instant between link and rename
        os.link(proc, tmp, dst_dir_fd=dfd, follow_symlinks=True)
        try:
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
        return True
    finally:
        os.close(fd)


def write_atomic(target: Target, data: bytes, *, mode: int | None = None, exclusive: bool = False) -> None:
    """Write a whole new file, then rename it over the name (see the module docstring for where it is made).

    An existing file keeps its permission bits; a new one gets `mode`, or 0666 minus the umask.
    `exclusive` refuses to replace anything already there (FileExistsError).
    """
    dfd, name = open_parent(target, create=True)
    try:
        try:
            existing = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None:
            if exclusive:
                raise FileExistsError(errno.EEXIST, "File exists", target.sandbox)
            if stat.S_ISDIR(existing.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", target.sandbox)
            if stat.S_ISLNK(existing.st_mode):
                raise _changed(target.sandbox)  # resolve saw no link here: one was planted since
        keep = stat.S_IMODE(existing.st_mode) if existing is not None else None
        if keep is None:
            keep = mode if mode is not None else 0o666 & ~current_umask()
        scratch = _open_scratch(target.scratch, dfd)
        if scratch is not None:
            try:
                _write_named(scratch, dfd, name, data, keep, exclusive)
                return
            except OSError as exc:
                if exc.errno != errno.EXDEV:  # same device, another mount (a bind): write beside it instead
                    raise
            finally:
                os.close(scratch)
        if not _write_unnamed(dfd, name, data, keep, exclusive):
            _write_named(dfd, dfd, name, data, keep, exclusive)
    finally:
        os.close(dfd)


@dataclass(frozen=True)
class Entry:
    name: str
    type: str  # file | directory | symlink


def list_entries(target: Target) -> list[Entry]:
    """The entries of the target directory, read through its descriptor; temporary files left out."""
    fd = open_dir(target)
    try:
        with os.scandir(fd) as it:
            out = []
            for entry in it:
                if is_temp_name(entry.name):
                    continue
                if entry.is_symlink():
                    kind = "symlink"
                elif entry.is_dir(follow_symlinks=False):
                    kind = "directory"
                else:
                    kind = "file"
                out.append(Entry(entry.name, kind))
            return out
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale(name: str, info: os.stat_result, now: float) -> bool:
    """A leftover: its writer (named in it) is gone, or it is older than any real write takes."""
    rest = name[len(TEMP_PREFIX) :]
    pid_text = rest.split("-", 1)[0]
    if pid_text.isdigit() and int(pid_text) != os.getpid() and not pid_alive(int(pid_text)):
        return True
    return now - info.st_mtime > 3600


def sweep_stale(directories: list[str], *, max_entries: int = 200_000) -> list[str]:
    """Remove temporary files an interrupted write left under `directories` (never following symlinks).

    Returns the removed paths. The walk goes by directory descriptors (os.fwalk) and unlinks relative
    to them: a directory a command swaps for a symlink mid-walk cannot turn the unlink of a name in it
    into the unlink of a file of the same name outside. It visits at most `max_entries` entries, so a
    huge tree cannot hold the caller up for long.
    """
    import time

    now = time.time()
    removed: list[str] = []
    seen = 0
    for top in directories:
        if not os.path.isdir(top) or os.path.islink(top):
            continue
        for root, dirs, files, rootfd in os.fwalk(top, follow_symlinks=False):
            seen += len(dirs) + len(files)
            for name in files:
                if not is_temp_name(name):
                    continue
                try:
                    info = os.stat(name, dir_fd=rootfd, follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode) and _stale(name, info, now):
                        os.unlink(name, dir_fd=rootfd)
                        removed.append(os.path.join(root, name))
                except OSError:
                    continue
            if seen >= max_entries:
                break
        if seen >= max_entries:
            break
    return removed


class Sweep(threading.Thread):
    """sweep_stale in the background, so that loading an agent with a large workspace stays instant."""

    def __init__(self, directories: list[str]) -> None:
        super().__init__(name="cireil-temp-sweep", daemon=True)
        self.directories = directories
        self.removed: list[str] = []

    def run(self) -> None:
        with contextlib.suppress(Exception):  # housekeeping: never a reason for anything else to fail
            self.removed = sweep_stale(self.directories)


CONFIG_LIMIT = 1 << 20  # bytes: far beyond any real configuration or instruction file


class FileTooLarge(OSError):
    """Over the size a file of its kind may have; `size` is its size in bytes when that was known before reading."""

    size: int | None = None


def _too_large(limit: int, name: str, size: int | None = None) -> FileTooLarge:
    exc = FileTooLarge(errno.EFBIG, f"larger than {limit} bytes", name)
    exc.size = size
    return exc


def read_host_file(path: str | os.PathLike, limit: int = CONFIG_LIMIT) -> bytes:
    """A configuration or instruction file of the agent: regular files only, never blocking, size-capped.

    Symlinks are followed (these files are the person's, not the agent's); a directory, FIFO,
    socket or device raises NotRegularFile at once, a file over `limit` bytes FileTooLarge.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        if info.st_size > limit:  # said before reading any of it
            raise _too_large(limit, str(path), info.st_size)
        os.set_blocking(fd, True)
        data = read_fd(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:  # grew while being read
        raise _too_large(limit, str(path))
    return data
