"""Binds that name no host path in the sandbox's /proc/self/mountinfo.

The kernel prints a bind mount's root as its path inside the source filesystem, so a plain bind of
the agent's workspace tells a command where the agent lives on the host, whatever namespace it is
in. Instead each folder bound from a descriptor (bindfds.py) is handed to bwrap as an overlayfs of
its own: its superblock root is the folder, so mountinfo shows `/` as its root, and its options
name the layers as the kernel resolved them from descriptors of detached mounts, relative to those:
`upperdir=/workspace,workdir=/.cireil/exec/…` for a folder of the agent, `lowerdir+=/` for a
read-only one.

- read-write folder inside the agent directory: the folder is the upper layer (written in place), an
  empty detached tmpfs the lower one, a fresh folder under `<agent>/.cireil/exec` the work
  directory (it must be on the same mount as the upper layer, which a detached clone of the agent
  directory provides). As the lower layer is empty there is no copy-up and no whiteout; uuid, index,
  xino and metacopy are off, so nothing is recorded in xattrs but the `overlay.opaque` mark
  overlayfs puts on a folder made right below the root, which is taken off after the command
  (`_unmark`). The overlay is `volatile`: otherwise unmounting it syncs the whole filesystem below
  (every dirty page of the host's disk, at the end of every command); the price is that fsync inside
  the sandbox does not force data to disk (it is written back as usual).
- read-only folder anywhere: the folder and the empty tmpfs as two lower layers, mounted read-only.

This is set up between fork and exec (`preexec`), in a mount namespace of the launch's own (and, not
root, a user namespace mapping the user to itself), so the host sees none of it and it is gone with
the command. bwrap then binds the overlay's descriptor in place of the folder's (same number). Each
folder is opened again there by walking without following symlinks and must be the very folder
cireil checked; if a command moved it meanwhile, the launch is refused as bindfds.py refuses a
swapped bind (a plain bind instead would let a racing command learn the host path on purpose).
A folder whose name cannot be hidden for a reason no command controls keeps
the plain bind and is reported once (logging): a read-write one outside the agent's mount (its work
directory would have to be beside it on the host), one with mounts inside it (an overlay would
hide them), a file, or a kernel whose overlayfs does not take its layers as descriptors (a recent
addition to Linux).

Fork cost: a preexec function makes subprocess fork instead of vfork, which copies the kernel's page
tables (bench/exec.py measures it).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import queue
import shutil
import stat
import tempfile
import threading
import time
from dataclasses import dataclass

from ..files.safefs import pid_alive
from .bindfds import Bound, changed, walk, walk_from_root

WORK_DIR = ".cireil/exec"  # below the agent directory: never bound into the sandbox
_STALE_FOREIGN_S = 24 * 3600  # a work folder from another pid namespace: removed only when this old
_OPTIONS = ((b"uuid", b"off"), (b"index", b"off"), (b"xino", b"off"), (b"metacopy", b"off"))
_RW_OPTIONS = ((b"volatile", None),)
_PATH = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_WALK = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHANGED = "!"  # a report line for a folder that changed: the launch is refused, not given a plain bind
_NOT_STARTED = 126
_SYSTEMIC = {errno.ENOSYS, errno.ENODEV}  # no new mount API or no overlayfs: stop trying on this kernel
log = logging.getLogger("cireil.exec")

_kernel_refuses: list[str] = []  # why this kernel cannot (set once)
_refused_filesystems: dict[int, str] = {}  # st_dev of an agent directory -> why overlays failed there
_reported: set[tuple[str, str]] = set()
_swept: set[str] = set()


@dataclass(frozen=True)
class _Layer:
    fd: int  # the bind's descriptor number: the overlay's descriptor takes its place in the child
    dest: str
    source: bytes  # the folder's realpath, as cireil checked it
    ident: tuple[int, int]  # its (st_dev, st_ino)
    stage: bytes  # an empty folder to attach the overlay on, for bwrap to find it by path
    stage_ident: tuple[int, int]
    upper: bytes | None  # read-write: the folder, relative to the agent directory; None: read-only
    work: bytes | None


@dataclass(frozen=True)
class Devices:
    """As root: the folder of device nodes bwrap binds (sandbox.py), whose host path would show."""

    folder: bytes
    ident: tuple[int, int]
    nodes: dict[str, tuple[int, int]]
    owner: int


def devices(folder: str, nodes: dict[str, tuple[int, int]], owner: int) -> Devices | None:
    try:
        return Devices(os.fsencode(folder), _ident(os.lstat(folder)), dict(nodes), owner)
    except OSError:
        return None


def _mount_points() -> list[str]:
    try:
        with open("/proc/self/mountinfo", "rb") as handle:
            text = handle.read(1 << 22)
    except OSError:
        return []
    points = []
    for line in text.splitlines():
        fields = line.split(b" ")
        if len(fields) > 4:
            points.append(os.fsdecode(_unescape(fields[4])))
    return points


def _unescape(field: bytes) -> bytes:
    """mountinfo writes space, tab, newline and backslash in paths as \\ooo."""
    if b"\\" not in field:
        return field
    out, i = bytearray(), 0
    while i < len(field):
        if field[i] == 0x5C and field[i + 1 : i + 4].isdigit() and i + 4 <= len(field):
            out.append(int(field[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(field[i])
            i += 1
    return bytes(out)


def _below(path: str, top: str) -> bool:
    return path.startswith(top.rstrip("/") + "/")


def _why_not(bound: Bound, agent: str, points: list[str]) -> str | None:
    """Why this bind must stay a plain bind, or None when an overlay can stand in for it."""
    try:
        st = os.fstat(bound.fd)
    except OSError:
        return "its descriptor is gone"
    if not stat.S_ISDIR(st.st_mode):
        return "it is a file (an overlay can only stand in for a folder)"
    if any(_below(p, bound.real) for p in points):
        return "other mounts lie inside it (an overlay would hide them)"
    if bound.read_only:
        return None
    if not _below(bound.real, agent):
        return (
            "it is a read-write folder outside the agent directory (the overlay's work folder would have to be "
            'made beside it on the host); mode = "ro", or a folder inside the agent directory, would hide it'
        )
    if any(_below(p, agent) and (p == bound.real or _below(bound.real, p)) for p in points):
        return "it is on another mount than the agent directory"
    if any(p in (os.path.join(agent, ".cireil"), os.path.join(agent, WORK_DIR)) for p in points):
        return "the agent's .cireil folder is a mount of its own"
    return None


def _report(dest: str, reason: str) -> None:
    if (dest, reason) in _reported:
        return
    _reported.add((dest, reason))
    log.warning(
        "exec: /proc/self/mountinfo inside the sandbox shows the host path of the folder bound at %s, because %s.",
        dest,
        reason,
    )


@functools.cache
def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def remove_tree(path: str) -> None:
    """Remove a work folder; overlayfs leaves a `work` folder of mode 000 in it, which rmtree cannot list."""
    for top, dirs, _files in os.walk(path):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(top, name), 0o700, follow_symlinks=False)
    shutil.rmtree(path, ignore_errors=True)


def sweep(base: str) -> None:
    """Remove the work folders of launches whose process is gone (a kernel killed mid-command)."""
    ours = _pid_namespace()
    try:
        names = os.listdir(base)
    except OSError:
        return
    now = time.time()
    for name in names:
        pid, _, rest = name.partition(".")
        namespace = rest.partition(".")[0]
        path = os.path.join(base, name)
        if not pid.isdigit():
            continue
        if namespace == ours:
            if int(pid) == os.getpid() or pid_alive(int(pid)):
                continue
        else:
            with contextlib.suppress(OSError):
                if now - os.lstat(path).st_mtime < _STALE_FOREIGN_S:
                    continue
        remove_tree(path)


class AnonMounts:
    """The overlays of one launch: `preexec` builds them in the child; `started` reads what it said;
    `close` removes the work folder once the command is over (idempotent)."""

    def __init__(
        self,
        agent: str,
        agent_ident: tuple[int, int],
        layers: list[_Layer],
        folder: str,
        report: tuple[int, int],
        devices: Devices | None = None,
    ) -> None:
        self.agent, self.layers, self.folder, self.devices = agent, layers, folder, devices
        self._agent = (os.fsencode(agent), agent_ident)
        self._read, self._write = report
        self._unprivileged = os.geteuid() != 0
        self._uid, self._gid = os.getuid(), os.getgid()
        self._since = time.time() - 1.0  # ctimes are coarser than this clock on some filesystems
        from . import mountcalls

        self._mc = mountcalls  # the child must not import

    # ---- in the child, between fork and exec: no imports, nothing that can take a lock ----

    def preexec(self) -> None:
        mc = self._mc
        if self._unprivileged:
            mc.unshare(mc.CLONE_NEWUSER | mc.CLONE_NEWNS)
            self._write_file("/proc/self/setgroups", b"deny")
            self._write_file("/proc/self/uid_map", b"%d %d 1" % (self._uid, self._uid))
            self._write_file("/proc/self/gid_map", b"%d %d 1" % (self._gid, self._gid))
        else:
            mc.unshare(mc.CLONE_NEWNS)
        mc.make_mounts_private()
        # descriptors opened before unshare name the old namespace's mounts, which the calls below
        # refuse: everything is opened again here, walking without symlinks, and must be what cireil checked
        try:
            empty = self._empty_folder(mc)
            tree = -1
            if any(layer.upper for layer in self.layers):
                tree = mc.clone_tree(self._reopen(*self._agent))
        except OSError as exc:
            self._say("*", exc.errno or 0)
            return
        if self.devices is not None:
            try:
                self._device_nodes(mc, self.devices)
            except OSError as exc:
                self._say("/dev", exc.errno or 0)
        for layer in self.layers:
            try:
                source = self._source(layer, tree)
            except OSError as exc:  # no longer the folder cireil checked: the command must not start
                self._say(_CHANGED + layer.dest, exc.errno or 0)
                os._exit(_NOT_STARTED)
            try:
                mount = self._overlay(mc, layer, source, tree, empty)
                mc.attach(mount, self._reopen(layer.stage, layer.stage_ident))
                os.dup2(mount, layer.fd)
            except OSError as exc:
                self._say(layer.dest, exc.errno or 0)

    @staticmethod
    def _write_file(path: str, data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    @staticmethod
    def _empty_folder(mc) -> int:
        fs = mc.fs_open(b"tmpfs")
        mc.fs_set(fs, b"mode", b"0555")
        mc.fs_set(fs, b"size", b"4k")
        return os.open(".", _WALK, dir_fd=mc.fs_mount(fs, read_only=True))

    def _device_nodes(self, mc, devices: Devices) -> None:
        """The device nodes on a tmpfs of their own, over the folder of host copies bwrap binds them from."""
        fs = mc.fs_open(b"tmpfs")
        mc.fs_set(fs, b"mode", b"0755")
        mc.fs_set(fs, b"size", b"4k")
        mount = mc.fs_mount(fs)
        for name, (major, minor) in devices.nodes.items():
            os.mknod(name, stat.S_IFCHR | 0o666, os.makedev(major, minor), dir_fd=mount)
            os.chmod(name, 0o666, dir_fd=mount)  # mknod applies the umask
            os.chown(name, devices.owner, devices.owner, dir_fd=mount)
        mc.attach(mount, self._reopen(devices.folder, devices.ident))

    def _source(self, layer: _Layer, tree: int) -> int:
        """The folder, opened again in this namespace: read-write ones through the clone of the agent
        directory (the upper layer must be on the work folder's mount), read-only ones from /."""
        if layer.upper is None:
            return self._reopen(layer.source, layer.ident)
        upper = self._walk(tree, layer.upper)
        found = os.fstat(upper)
        if (found.st_dev, found.st_ino) != layer.ident:  # moved since cireil checked it
            raise OSError(errno.ESTALE, "changed")
        return upper

    def _overlay(self, mc, layer: _Layer, source: int, tree: int, empty: int) -> int:
        fs = mc.fs_open(b"overlay")
        if layer.upper is None:
            mc.fs_set_fd(fs, b"lowerdir+", os.open(".", _WALK, dir_fd=mc.clone_tree(source)))
            mc.fs_set_fd(fs, b"lowerdir+", empty)
        else:
            mc.fs_set_fd(fs, b"lowerdir+", empty)
            mc.fs_set_fd(fs, b"upperdir", source)
            mc.fs_set_fd(fs, b"workdir", self._walk(tree, layer.work or b""))
            for key, flag in _RW_OPTIONS:
                mc.fs_set(fs, key, flag)
        for key, value in _OPTIONS:
            mc.fs_set(fs, key, value)
        if self._unprivileged:
            mc.fs_set(fs, b"userxattr")
        return mc.fs_mount(fs, read_only=layer.upper is None)

    @staticmethod
    def _reopen(path: bytes, ident: tuple[int, int]) -> int:
        fd = walk_from_root(path, _PATH)
        found = os.fstat(fd)
        if (found.st_dev, found.st_ino) != ident:
            raise OSError(errno.ESTALE, "changed")
        return fd

    @staticmethod
    def _walk(top: int, relative: bytes) -> int:
        return walk(top, relative, _WALK)

    def _say(self, dest: str, code: int) -> None:
        with contextlib.suppress(OSError):
            os.write(self._write, dest.encode("utf-8", "surrogateescape") + b"\t%d\n" % code)

    # ---- in the parent ----

    def started(self) -> None:
        """After the fork: close what the child needed and report the folders it could not hide."""
        if self._write < 0:
            return
        os.close(self._write)
        self._write = -1
        try:
            said = os.read(self._read, 1 << 16)
        except OSError:
            said = b""
        os.close(self._read)
        self._read = -1
        failed = dict(line.partition("\t")[::2] for line in said.decode("utf-8", "surrogateescape").splitlines())
        moved = [dest[len(_CHANGED) :] for dest in failed if dest.startswith(_CHANGED)]
        if moved:
            raise changed(moved[0])  # the child exited instead of starting bwrap
        if failed:
            self._failed({dest: int(code or 0) for dest, code in failed.items()})

    def _failed(self, failed: dict[str, int]) -> None:
        """Report each folder left as a plain bind; stop trying where it cannot work: on this kernel (no
        new mount API, no overlayfs), or on this filesystem when every folder failed alike (EINVAL: an
        upper layer overlayfs does not take, or a kernel without descriptor-given layers)."""
        codes = set(failed.values())
        if codes & _SYSTEMIC:
            code = min(codes & _SYSTEMIC)
            _kernel_refuses[:] = [f"this kernel cannot mount overlayfs from descriptors ({errno.errorcode.get(code)})"]
        elif "*" in failed or (codes == {errno.EINVAL} and len(failed) == len(self.layers)):
            code = failed.get("*", errno.EINVAL)
            _refused_filesystems[self._agent[1][0]] = _why(code)
        for dest in [layer.dest for layer in self.layers] + (["/dev"] if self.devices is not None else []):
            code = failed.get(dest, failed.get("*"))
            if code is not None:
                _report(dest, _why(code))

    def give_up(self) -> None:
        """The child could not even set up its namespaces (its preexec raised): stop trying here."""
        _kernel_refuses[:] = ["a user and mount namespace for the overlays could not be set up"]
        for dest in [layer.dest for layer in self.layers] + (["/dev"] if self.devices is not None else []):
            _report(dest, _kernel_refuses[0])

    def close(self) -> None:
        """Tidy up once the command is over. The folder's removal (a dozen metadata calls, most of a
        millisecond) goes to a background thread, off the call's path; `settle()` waits for it."""
        self.started()
        if not self.folder:
            return
        _tidier.put(self)

    def tidy(self) -> None:
        if not self.folder:
            return
        self._remove_folder()
        self.folder = ""
        for layer in self.layers:
            if layer.upper is not None:
                self._unmark(layer.source)

    def _remove_folder(self) -> None:
        """What plan() made and overlayfs added: per work folder `work/incompat/volatile/dirty`, folders
        of mode 000 (the mark a volatile overlay leaves against reuse of the work folder)."""
        try:
            for index, layer in enumerate(self.layers):
                if layer.upper is not None:
                    work = os.path.join(self.folder, f"w{index}")
                    inner = os.path.join(work, "work")
                    nested = [inner, os.path.join(inner, "incompat"), os.path.join(inner, "incompat", "volatile")]
                    if os.path.lexists(inner):
                        with contextlib.suppress(FileNotFoundError):
                            for folder in nested:  # each made with mode 000
                                os.chmod(folder, 0o700, follow_symlinks=False)
                            os.unlink(os.path.join(nested[-1], "dirty"))
                        for folder in reversed(nested):
                            with contextlib.suppress(FileNotFoundError):
                                os.rmdir(folder)
                    os.rmdir(work)
                os.rmdir(os.path.join(self.folder, f"m{index}"))
            os.rmdir(self.folder)
        except OSError:  # something else was left: the slow way
            remove_tree(self.folder)

    def _unmark(self, source: bytes) -> None:
        """Remove the `overlay.opaque` mark overlayfs put on folders made (or moved) right below the root.

        The root of an overlay with a lower layer is a merged folder, and overlayfs marks a folder made in a
        merged one as opaque (an optimisation it allows to fail, so nothing depends on it). Only folders
        changed during this launch are looked at, so a mark a person set on an older folder stays.
        """
        name = "user.overlay.opaque" if self._unprivileged else "trusted.overlay.opaque"
        try:
            fd = walk_from_root(source, _WALK)
        except OSError:
            return
        if os.fstat(fd).st_ctime < self._since:  # nothing was made in it or moved into it
            os.close(fd)
            return
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        if (
                            entry.is_dir(follow_symlinks=False)
                            and entry.stat(follow_symlinks=False).st_ctime >= self._since
                        ):
                            os.removexattr(f"/proc/self/fd/{fd}/{entry.name}", name, follow_symlinks=False)
        except OSError:
            pass
        finally:
            os.close(fd)


class _Tidier:
    """One daemon thread removing work folders in order; one left when the process ends is swept later."""

    def __init__(self) -> None:
        self._queue: queue.Queue[AnonMounts] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def put(self, mounts: AnonMounts) -> None:
        self._queue.put(mounts)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cireil-exec-tidy", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            mounts = self._queue.get()
            try:
                mounts.tidy()
            except Exception:
                log.debug("could not tidy %s", mounts.folder, exc_info=True)
            finally:
                self._queue.task_done()

    def settle(self) -> None:
        self._queue.join()


_tidier = _Tidier()
settle = _tidier.settle


def plan(bound: list[Bound], agent_dir: str, device_nodes: Devices | None = None) -> AnonMounts | None:
    """The overlays standing in for `bound` (the launch's binds), or None when none can. `device_nodes`
    (as root): also give the sandbox's device nodes a tmpfs of their own."""
    agent = os.path.realpath(agent_dir)
    if _kernel_refuses:
        for dest in [item.dest for item in bound] + (["/dev"] if device_nodes is not None else []):
            _report(dest, _kernel_refuses[0])
        return None
    try:
        agent_ident = _ident(os.stat(agent))
    except OSError:
        return None
    agent_dev = agent_ident[0]
    points = _mount_points()
    chosen: list[Bound] = []
    for item in bound:
        why = _refused_filesystems.get(agent_dev) if not item.read_only else None
        why = why or _why_not(item, agent, points)
        if why is None:
            chosen.append(item)
        else:
            _report(item.dest, why)
    if not chosen:
        return None
    base = os.path.join(agent, WORK_DIR)
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        if base not in _swept:
            _swept.add(base)
            sweep(base)
        folder = tempfile.mkdtemp(prefix=f"{os.getpid()}.{_pid_namespace()}.", dir=base)
    except OSError as exc:
        for item in chosen:
            _report(item.dest, f"its work folder could not be made in {base} ({exc.strerror})")
        return None
    try:
        layers = [_layer(item, index, agent, folder) for index, item in enumerate(chosen)]
        return AnonMounts(agent, agent_ident, layers, folder, os.pipe(), device_nodes)
    except OSError:
        remove_tree(folder)
        return None


def _why(code: int) -> str:
    return f"overlayfs could not be mounted there ({errno.errorcode.get(code, code)}: {os.strerror(code)})"


def _ident(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def _layer(item: Bound, index: int, agent: str, folder: str) -> _Layer:
    stage = os.path.join(folder, f"m{index}")
    os.mkdir(stage, 0o700)
    upper = work = None
    if not item.read_only:
        work_path = os.path.join(folder, f"w{index}")
        os.mkdir(work_path, 0o700)
        upper = os.fsencode(os.path.relpath(item.real, agent))
        work = os.fsencode(os.path.relpath(work_path, agent))
    source = os.fsencode(item.real)
    return _Layer(
        item.fd, item.dest, source, _ident(os.fstat(item.fd)), os.fsencode(stage), _ident(os.lstat(stage)), upper, work
    )
