"""The sandbox path model: which host file a sandbox path names, and whether a tool may touch it.

Every file tool goes through `SandboxPaths.resolve`. Paths are normalized before anything else
(so `/workspace/./x` and `/workspace/x` are the same path, also for mount lookup), the host path
returned is fully resolved (`realpath`), and it must lie inside the realpath of the root directory
or mount source it belongs to. Escapes by `..`, by symlinks anywhere in the path (dangling ones
included) and by absolute paths outside the roots are all refused with `Access denied: ...`
messages that show only sandbox paths.
"""

from __future__ import annotations

import errno
import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ToolError
from ..base.names import escape, unescape_path
from . import safefs
from .hostpaths import PlantedLink, trusted_realpath
from .mounts import Mount
from .safefs import SCRATCH_DIR, Target, is_temp_name

ROOTS = ("workspace", "memories", "blocks", "skills", "tasks")
SYSTEM_ROOTS = ("/usr", "/lib", "/lib64", "/nix")


@dataclass(frozen=True)
class ResolvedPath:
    sandbox: str  # normalized sandbox path, e.g. /workspace/notes.md
    host: Path  # fully resolved host path (may not exist yet)
    root: str  # "workspace", "memories", ...
    mount: Mount | None = None
    boundary: str = ""  # realpath of the root or mount source the host path lies in
    scratch: str = ""  # cireil's private temp folder of the agent (writes are made there, then renamed in)

    def __post_init__(self) -> None:
        # the sandbox path is shown and stored (opened files, results): non-UTF-8 bytes in it escaped
        object.__setattr__(self, "sandbox", escape(self.sandbox))

    @property
    def read_only(self) -> bool:
        return self.mount is not None and self.mount.read_only

    @property
    def target(self) -> Target:
        """What safefs walks to reach this path without following anything planted since resolve."""
        host = str(self.host)
        rel = "" if host == self.boundary else host[len(self.boundary) :].lstrip("/")
        return Target(self.boundary, rel, self.sandbox, self.scratch)


def _denied(path: str, why: str) -> ToolError:
    return ToolError(f"Access denied: path '{path}' {why}.")


def _inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def _realpath(path: str) -> str | None:
    """os.path.realpath, or None when its answer cannot be trusted.

    On a symlink loop realpath gives up: it appends the rest of the path unresolved and then
    collapses `..` lexically, so `x -> loop/../esc/f` with `esc -> /elsewhere` comes back as
    `<dir>/esc/f`, a path that still goes through a symlink. A trustworthy answer is one whose
    existing part is its own strict realpath (no symlink left in it, no loop).
    """
    host = os.path.realpath(path)
    probe = host
    while not os.path.lexists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    try:
        if os.path.realpath(probe, strict=True) != probe:
            return None
    except OSError:  # ELOOP, or a link that vanished
        return None
    return host


def _check_not_temp(path: str, host: str, boundary: str) -> None:
    """Also through a symlink: the temporary file of a write in progress is nobody's to read or write."""
    if any(is_temp_name(seg) for seg in host[len(boundary) :].split("/")):
        raise _denied(path, "names a temporary file of an unfinished write")


def normalize(path: str) -> str:
    """Collapse `//`, `.` and `..` lexically; the result always starts with one '/'."""
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


# conditions.toml's access rules for one session: (path as asked, normalized sandbox path) -> None, or
# raises ToolError. Kept as a plain callable so this module knows nothing of the rule language.
AccessCheck = Callable[[str, str], None]


class SandboxPaths:
    """Maps sandbox paths to host paths for one agent directory and its mounts.

    With `access` (sessions.conditions.PathAccess for the session a call runs in), every resolved path
    is also authorised: a separate step after resolution, on the path's name and on where it really
    leads (a symlink inside the sandbox must not open a way around a rule).
    """

    def __init__(
        self, agent_dir: Path, mounts: list[Mount] | tuple[Mount, ...] = (), *, access: AccessCheck | None = None
    ) -> None:
        self.agent_dir = Path(agent_dir)
        self.mounts = list(mounts)
        self.access = access
        self.scratch = os.path.join(os.path.abspath(self.agent_dir), SCRATCH_DIR)

    def writable_areas(self) -> list[str]:
        """Realpaths of the folders a command in exec can write (so can plant a symlink in)."""
        areas = [os.path.realpath(self.agent_dir / root) for root in EXEC_WRITABLE]
        return areas + [os.path.realpath(m.source) for m in self.mounts if not m.read_only]

    def root_host(self, root: str) -> str:
        """Where the root really is (a person's symlink followed, one a command could have made not)."""
        try:
            return trusted_realpath(self.agent_dir / root, self.writable_areas)
        except PlantedLink:
            raise _denied(f"/{root}", "leads through a symlink inside the sandbox (it is not followed)") from None

    def mount_host(self, mount: Mount) -> str:
        """Where the mount's source really is; ToolError when that goes through a symlink a command could
        have made (see hostpaths.py: the person should name the real folder in sandbox.toml)."""
        try:
            return trusted_realpath(mount.source, self.writable_areas)
        except PlantedLink:
            raise _denied(
                f"/workspace/{mount.target}",
                "is a mount whose source leads through a symlink inside the sandbox (it is not followed; "
                "name the real folder as its source in config/sandbox.toml)",
            ) from None

    def resolve(self, path: str) -> ResolvedPath:
        """Resolve a sandbox path to a host path, or raise ToolError('Access denied: ...')."""
        resolved = self._locate(path)
        self.authorize(path, resolved)
        return resolved

    # -- authorisation (conditions.toml), separate from locating --------------------------------------
    def authorize(self, path: str, resolved: ResolvedPath) -> None:
        """Raise ToolError when the session's access rules deny the path or the place it leads to."""
        if self.access is None:
            return
        self.access(path, resolved.sandbox)
        real = self.sandbox_path_of(resolved)
        if real != resolved.sandbox:
            self.access(path, real)

    def visible(self, sandbox_path: str) -> bool:
        """Whether the session's access rules let the agent see this (normalized) path at all."""
        if self.access is None:
            return True
        try:
            self.access(sandbox_path, sandbox_path)
        except ToolError:
            return False
        return True

    def sandbox_path_of(self, resolved: ResolvedPath) -> str:
        """The sandbox path of where `resolved.host` really is (differs from the name through symlinks)."""
        if resolved.mount is not None:
            base, boundary = f"/workspace/{resolved.mount.target}", resolved.boundary or self.mount_host(resolved.mount)
        else:
            base, boundary = f"/{resolved.root}", resolved.boundary or self.root_host(resolved.root)
        rel = os.path.relpath(resolved.host, boundary)
        return base if rel == "." else f"{base}/{rel}"

    def _locate(self, path: str) -> ResolvedPath:
        if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
            raise _denied(str(path), "is outside the sandbox")
        path = unescape_path(path)  # `\xNN`, as tools show a non-UTF-8 name, names that byte
        raw_root = next((seg for seg in path.split("/") if seg not in ("", ".")), "")
        norm = normalize(path)
        parts = norm.lstrip("/").split("/", 1)
        root, rest = parts[0], (parts[1] if len(parts) > 1 else "")
        if root not in ROOTS:
            if raw_root in ROOTS:
                raise _denied(path, "attempts to escape the sandbox")
            raise _denied(path, "is outside the sandbox")
        if any(is_temp_name(seg) for seg in norm.split("/")):
            raise _denied(path, "names a temporary file of an unfinished write")
        if raw_root != root:
            if raw_root in ROOTS:
                raise _denied(path, f"escaped the /{raw_root} sandbox area")
            raise _denied(path, "is outside the sandbox")
        if root == "workspace" and rest:
            for mount in self.mounts:
                if rest == mount.target or rest.startswith(mount.target + "/"):
                    return self._resolve_in_mount(path, norm, rest, mount)
        boundary = self.root_host(root)
        host = _realpath(os.path.join(boundary, rest)) if rest else boundary
        if host is None:
            raise _denied(path, "cannot be resolved (symlink loop)")
        if not _inside(host, boundary):
            raise _denied(path, "resolves outside the sandbox via symlink")
        _check_not_temp(path, host, boundary)
        return ResolvedPath(norm, Path(host), root, boundary=boundary, scratch=self.scratch)

    def _resolve_in_mount(self, path: str, norm: str, rest: str, mount: Mount) -> ResolvedPath:
        boundary = self.mount_host(mount)
        remainder = rest[len(mount.target) :].lstrip("/")
        host = _realpath(os.path.join(boundary, remainder)) if remainder else boundary
        if host is None:
            raise _denied(path, "cannot be resolved (symlink loop)")
        if not _inside(host, boundary):
            raise _denied(path, "resolves outside the mount via symlink")
        _check_not_temp(path, host, boundary)
        return ResolvedPath(norm, Path(host), "workspace", mount, boundary=boundary, scratch=self.scratch)

    def resolve_for_write(self, path: str) -> ResolvedPath:
        """resolve() plus the read-only mount check every writing tool must pass."""
        resolved = self.resolve(path)
        if resolved.read_only:
            assert resolved.mount is not None
            raise _denied(path, f"is on a read-only mount ({resolved.mount.target})")
        return resolved

    def resolve_system(self, path: str) -> Path:
        """The read-only system paths list-dir may show: /usr, /lib, /lib64, /nix and below."""
        if not isinstance(path, str) or "\0" in path:
            raise _denied(str(path), "is outside the sandbox")
        path = unescape_path(path)
        if ".." in path.split("/"):
            raise _denied(path, "contains path traversal")
        norm = normalize(path)
        if not any(_inside(norm, r) for r in SYSTEM_ROOTS):
            raise _denied(path, "is outside the sandbox")
        real = os.path.realpath(norm)  # also when missing: a symlinked ancestor may still lead out
        if not any(_inside(real, os.path.realpath(r)) or _inside(real, r) for r in SYSTEM_ROOTS):
            raise _denied(path, "resolves outside the sandbox via symlink")
        return Path(norm)

    def mount_children(self, sandbox_dir: str) -> list[str]:
        """Names of synthetic directory entries that mounts add below `sandbox_dir`."""
        if sandbox_dir != "/workspace" and not sandbox_dir.startswith("/workspace/"):
            return []
        below = sandbox_dir[len("/workspace") :].lstrip("/")
        names: list[str] = []
        for mount in self.mounts:
            if below and not mount.target.startswith(below + "/"):
                continue
            remainder = mount.target[len(below) :].lstrip("/") if below else mount.target
            first = remainder.split("/", 1)[0]
            if first and first not in names:
                names.append(first)
        return names

    def host_replacements(self) -> list[tuple[str, str]]:
        """(host prefix, what to show instead), longest first, for scrubbing host paths from messages."""
        pairs: list[tuple[str, str]] = []
        for mount in self.mounts:
            for src in {str(mount.source), os.path.realpath(mount.source)}:
                pairs.append((src, f"/workspace/{mount.target}"))
        for root in {str(self.agent_dir), os.path.realpath(self.agent_dir), str(self.agent_dir.absolute())}:
            pairs.append((root, "<sandbox>"))
        return sorted(pairs, key=lambda p: len(p[0]), reverse=True)

    def scrub(self, message: str) -> str:
        for host, shown in self.host_replacements():
            if host and host != "/":
                message = message.replace(host, shown)
        return message


# the roots exec binds read-write (exec/sandbox.py ROOT_BINDS; /blocks is not mounted there): a command
# can plant any symlink in them
EXEC_WRITABLE = ("workspace", "memories", "skills", "tasks")


def read_agent_file(agent_dir: Path, rel: str, limit: int = safefs.CONFIG_LIMIT) -> bytes:
    """A file the runtime reads by itself: core.md, a block, a skill, tasks/HEARTBEAT.md.

    Files in a root exec can write (skills/, tasks/) may be symlinks a command planted, so they are
    read as a file tool reads: no symlink out of the root (`ln -s ~/.ssh/id_rsa /skills/x/SKILL.md`
    would put a host file into the prompt), opened through the root's descriptor. The others (core.md,
    blocks/, which the file tools write without ever making a symlink) are the person's: read with
    safefs.read_host_file, following the person's symlinks. Either way regular files only, at most
    `limit` bytes. Raises FileNotFoundError, PermissionError (leads out), safefs.NotRegularFile,
    IsADirectoryError or safefs.FileTooLarge.
    """
    if rel.split("/", 1)[0] not in EXEC_WRITABLE:
        return safefs.read_host_file(Path(agent_dir) / rel, limit)
    try:
        resolved = SandboxPaths(agent_dir).resolve("/" + rel)
    except ToolError:
        raise PermissionError(errno.EACCES, "leads out of the sandbox (a symlink)", rel) from None
    try:
        fd, info = safefs.open_regular(resolved.target)
    except ToolError:
        raise PermissionError(errno.EACCES, "a symlink appeared in its path", rel) from None
    except safefs.NotRegularFile:  # worded as read_host_file words it, and naming the file as the person knows it
        raise safefs.NotRegularFile(errno.EINVAL, "not a regular file", rel) from None
    try:
        if info.st_size > limit:
            raise safefs.FileTooLarge(errno.EFBIG, f"larger than {limit} bytes", rel)
        data = safefs.read_fd(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise safefs.FileTooLarge(errno.EFBIG, f"larger than {limit} bytes", rel)
    return data
