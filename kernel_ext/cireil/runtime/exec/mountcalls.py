"""The Linux mount calls Python has no wrapper for (open_tree, fsopen, fsconfig, fsmount, move_mount).

Their numbers are the same on every architecture (they came after the syscall tables were unified,
Linux 5.2). Each function raises OSError with the errno, like the os module. Meant for a child
process between fork and exec (anon_mounts.py): nothing here imports or allocates beyond ctypes
calls prepared at import time.
"""

from __future__ import annotations

import ctypes
import os

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_unshare = _libc.unshare
_mount = _libc.mount
_mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p)

SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_FSOPEN, SYS_FSCONFIG, SYS_FSMOUNT = 428, 429, 430, 431, 432
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
AT_FDCWD, AT_EMPTY_PATH = -100, 0x1000
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC = 1, os.O_CLOEXEC
FSOPEN_CLOEXEC, FSMOUNT_CLOEXEC = 1, 1
FSCONFIG_SET_FLAG, FSCONFIG_SET_STRING, FSCONFIG_SET_FD, FSCONFIG_CMD_CREATE = 0, 1, 5, 6
MOUNT_ATTR_RDONLY = 0x1
MOVE_MOUNT_F_EMPTY_PATH, MOVE_MOUNT_T_EMPTY_PATH = 0x4, 0x40
_long = ctypes.c_long
_int = ctypes.c_int
_uint = ctypes.c_uint


def _check(result: int) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def unshare(flags: int) -> None:
    _check(_unshare(_int(flags)))


def make_mounts_private() -> None:
    """Mounts made from now on in this (new) mount namespace propagate nowhere, the host least of all."""
    _check(_mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None))


def clone_tree(dirfd: int) -> int:
    """A detached copy of the mount at `dirfd`, rooted there: paths seen through it start at that folder."""
    return _check(
        _syscall(_long(SYS_OPEN_TREE), _int(dirfd), b"", _uint(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH))
    )


def fs_open(fstype: bytes) -> int:
    return _check(_syscall(_long(SYS_FSOPEN), fstype, _uint(FSOPEN_CLOEXEC)))


def fs_set(fsfd: int, key: bytes, value: bytes | None = None) -> None:
    """A string option, or a flag when `value` is None."""
    if value is None:
        _check(_syscall(_long(SYS_FSCONFIG), _int(fsfd), _uint(FSCONFIG_SET_FLAG), key, None, _int(0)))
    else:
        _check(_syscall(_long(SYS_FSCONFIG), _int(fsfd), _uint(FSCONFIG_SET_STRING), key, value, _int(0)))


def fs_set_fd(fsfd: int, key: bytes, fd: int) -> None:
    _check(_syscall(_long(SYS_FSCONFIG), _int(fsfd), _uint(FSCONFIG_SET_FD), key, None, _int(fd)))


def fs_mount(fsfd: int, *, read_only: bool = False) -> int:
    """Create the filesystem configured on `fsfd` and return a descriptor of its (detached) mount."""
    _check(_syscall(_long(SYS_FSCONFIG), _int(fsfd), _uint(FSCONFIG_CMD_CREATE), None, None, _int(0)))
    attrs = MOUNT_ATTR_RDONLY if read_only else 0
    return _check(_syscall(_long(SYS_FSMOUNT), _int(fsfd), _uint(FSMOUNT_CLOEXEC), _uint(attrs)))


def attach(mountfd: int, onto: int) -> None:
    """Mount the detached mount `mountfd` on the directory `onto` (a descriptor: no path is looked up)."""
    flags = MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH
    _check(_syscall(_long(SYS_MOVE_MOUNT), _int(mountfd), b"", _int(onto), b"", _uint(flags)))
