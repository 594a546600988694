"""How a command is started: the bubblewrap argv (reference §4.12), or the explicit unsandboxed backend.

The sandbox sees the agent's roots at /workspace, /memories, /skills and /tasks (never /blocks), the
configured mounts, read-only system directories, a private /tmp, and an environment built from an
allowlist: nothing of the kernel's own environment leaks in unless hostEnvPassthrough or .env names it.
`--unshare-pid --die-with-parent` ties every process of the command to the bwrap process we start,
so killing our process group (or our own exit) ends them all, background children included.

Privileges: the command always runs in its own user namespace with every capability dropped and no
way to make another user namespace, also when the kernel runs as root. So it cannot remount a
read-only bind, open files by handle (open_by_handle_at needs CAP_DAC_READ_SEARCH), or configure
the network it shares with the host (CAP_NET_ADMIN). As root, the namespace maps the sandbox's uid
to root's, so the command owns whatever root owns that it can see: the device nodes of its /dev are
therefore private copies owned by nobody, not the host's. Process limit: RLIMIT_NPROC inside the
user namespace, which the kernel does not apply to (mapped) root; as root the limit is instead the
pid_max of a pid namespace of its own around the sandbox (Linux >= 6.14).

Binds from places a command can change (the agent's roots, sandbox.toml's mounts, areas conditions.toml
binds back) are made from descriptors cireil opened without following symlinks (bindfds.py), never by
host path; a bubblewrap too old for `--bind-fd` is refused rather than given paths. System directories
and our private device nodes, which no command can change, are still bound by path. Each folder bound
from a descriptor is an overlayfs standing in for it (anon_mounts.py), so that not even
/proc/self/mountinfo shows where the agent lives on the host.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import ToolError
from ..base.scratch import remove_when_gone
from ..config.sandbox_config import SandboxConfig
from ..files.paths import SandboxPaths
from .anon_mounts import AnonMounts, devices, plan
from .bindfds import BindFds

SANDBOX_PATH = "/usr/bin:/bin:/usr/local/bin"
SANDBOX_ROOT_UID = 65534  # as root: who the command is inside its user namespace (nobody)
RESERVED_PIDS = 300  # pid numbers a pid namespace skips when they wrap around (linux/pid.h)
BWRAP = "bwrap"  # looked up on the host PATH; a module attribute so tests can point it elsewhere
ROOT_BINDS = ("workspace", "memories", "skills", "tasks")  # /blocks is deliberately not mounted
TMP_BYTES = 64 * 1024 * 1024
_SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/etc/alternatives")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d")
_HOST_FILES = (
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/resolv.conf",
    "/etc/ssl/certs/ca-bundle.crt",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
)
NO_SANDBOX_WARNING = (
    'backend = "none" in config/sandbox.toml: this command ran WITHOUT a sandbox, with the kernel\'s '
    "permissions on the host (only the environment was restricted). Use it only in trusted tutorial environments."
)
# Without a pid namespace nothing holds a process that leaves the command's process group (setsid,
# a double fork): it outlives the call. Said on every result where that is the case.
NO_SANDBOX_DAEMONS = (
    " A process the command starts in the background and detaches (setsid, a double fork) is not stopped "
    "when the call ends, and there is no process limit."
)


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    warning: str | None = None
    binds: BindFds = field(default_factory=BindFds)  # descriptors the argv names: pass_fds, then close()
    anon: AnonMounts | None = None  # overlays standing in for the binds (anon_mounts.py)

    @property
    def fds(self) -> tuple[int, ...]:
        return tuple(self.binds.fds)

    @property
    def preexec(self) -> Callable[[], None] | None:
        """What the child runs between fork and exec, if anything."""
        return self.anon.preexec if self.anon is not None else None

    def started(self) -> None:
        """Once bwrap has started (or will not be): close the descriptors it has its own copies of."""
        self.binds.close()
        if self.anon is not None:
            self.anon.started()

    def without_overlays(self) -> None:
        """The child could not set up the overlays' namespaces: launch with plain binds instead."""
        if self.anon is not None:
            self.anon.give_up()
            self.anon.close()
            object.__setattr__(self, "anon", None)

    def close(self) -> None:
        """Once the command is over: everything above, and the overlays' work folder; idempotent."""
        self.started()
        if self.anon is not None:
            self.anon.close()


def base_env(passthrough: tuple[str, ...], dotenv: Mapping[str, str], home: str) -> dict[str, str]:
    """The sandbox's whole environment: fixed basics, then passthrough, then .env (later wins)."""
    env = {"PATH": SANDBOX_PATH, "HOME": home, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    for name in passthrough:
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(dotenv)
    return env


def locate(command: str) -> str:
    """The host path of an allowed command, looked up on the sandbox's PATH (not the kernel's)."""
    found = shutil.which(command, path=SANDBOX_PATH)
    if found is None:
        raise ToolError(
            f"Command '{command}' could not be located on this system.",
            hint=f"It must be installed in one of {SANDBOX_PATH.replace(':', ', ')}.",
        )
    return found


@functools.cache
def _probe(bwrap: str | None) -> str | None:
    """Why bubblewrap cannot run here, or None when it can; checked once per bwrap path."""
    if bwrap is None:
        return (
            "bubblewrap (bwrap) is not installed. Install it (Debian/Ubuntu: `apt-get install bubblewrap`, "
            "Fedora: `dnf install bubblewrap`)"
        )
    probe = [bwrap, "--unshare-user", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc"]
    probe.append("true")
    try:
        done = subprocess.run(probe, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap ({bwrap}) could not be started: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.returncode}"
        return (
            f"bubblewrap cannot create a sandbox here ({detail}). Unprivileged user namespaces are probably "
            "disabled (common in containers and hosted notebook services); enable them "
            "(sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0)"
        )
    return None


@functools.cache
def _bwrap_path(name: str, search: str | None) -> str | None:
    return shutil.which(name, path=search)


@functools.cache
def _existing(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The host files and system directories to bind that exist here (they do not change under us)."""
    return tuple(p for p in paths if os.path.exists(p))


@functools.cache
def _bwrap_options(bwrap: str) -> frozenset[str]:
    """The options this bubblewrap knows that we rely on (--disable-userns and --bind-fd came in 0.8,
    --cap-drop in 0.2)."""
    try:
        text = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(o for o in ("--disable-userns", "--cap-drop", "--bind-fd") if o in text)


@functools.cache
def _pidns_limit_works() -> bool:
    """Whether a pid namespace of our own can have its own pid_max (Linux >= 6.14).

    Probed inside a fresh user namespace: a kernel without per-namespace pid_max refuses the write
    there (the sysctl is global), so the probe can never change the host's value.
    """
    unshare = shutil.which("unshare", path=SANDBOX_PATH)
    if unshare is None:
        return False
    script = '[ "$$" = 1 ] && echo 1000 > /proc/sys/kernel/pid_max && [ "$(cat /proc/sys/kernel/pid_max)" = 1000 ]'
    try:
        done = subprocess.run(
            [unshare, "--user", "--map-root-user", "--pid", "--fork", "sh", "-c", script],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


_DEV_NODES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8), "urandom": (1, 9), "tty": (5, 0)}
_private_dev_dir: list[str] = []


def _private_dev() -> str | None:
    """As root: a directory of device nodes of our own, owned by nobody, for the sandbox's /dev.

    bwrap's --dev binds the host's /dev/null and friends; a command whose uid maps to root owns
    them and could chmod them for the whole host. Our copies it does not own, and a change to them
    would touch nothing else. None when they cannot be made here (then --dev's own binds are used).
    """
    if _private_dev_dir and all(os.path.exists(os.path.join(_private_dev_dir[0], n)) for n in _DEV_NODES):
        return _private_dev_dir[0]
    import tempfile

    for parent in dict.fromkeys((tempfile.gettempdir(), "/var/tmp")):  # the first one not mounted nodev
        directory = _make_dev_nodes(parent)
        if directory is not None:
            _private_dev_dir[:] = [directory]
            return directory
    return None


def _make_dev_nodes(parent: str) -> str | None:
    import atexit
    import stat as stat_mod
    import tempfile

    try:
        directory = tempfile.mkdtemp(prefix="cireil-dev-", dir=parent)
    except OSError:
        return None
    try:
        for name, (major, minor) in _DEV_NODES.items():
            node = os.path.join(directory, name)
            os.mknod(node, stat_mod.S_IFCHR | 0o666, os.makedev(major, minor))
            os.chmod(node, 0o666)
            os.chown(node, SANDBOX_ROOT_UID, SANDBOX_ROOT_UID)
        with open(os.path.join(directory, "null"), "wb") as probe:  # a nodev filesystem would refuse this
            probe.write(b"x")
    except OSError:
        shutil.rmtree(directory, ignore_errors=True)
        return None
    os.chmod(directory, 0o755)
    atexit.register(shutil.rmtree, directory, True)
    remove_when_gone(directory)  # a killed kernel runs no atexit: its device nodes would stay in /tmp
    return directory


def _hardening(bwrap: str) -> list[str]:
    """User namespace, no capabilities, no nested user namespaces; as root, an unprivileged uid."""
    known = _bwrap_options(bwrap)
    argv = ["--unshare-user"]
    if os.geteuid() == 0:
        argv += ["--uid", str(SANDBOX_ROOT_UID), "--gid", str(SANDBOX_ROOT_UID)]
    if "--cap-drop" in known:
        argv += ["--cap-drop", "ALL"]
    if "--disable-userns" in known:
        argv.append("--disable-userns")
    return argv


def _dev_binds() -> list[str]:
    if os.geteuid() != 0:
        return []  # the host's nodes belong to root, not to us: nothing to protect
    private = _private_dev()
    if private is None:
        return []
    argv: list[str] = []
    for name in _DEV_NODES:
        argv += ["--dev-bind", os.path.join(private, name), f"/dev/{name}"]
    return argv


def _limit_processes(argv: list[str], binary_at: int, max_processes: int) -> list[str]:
    """Wrap the launch so that the sandbox holds at most about `max_processes` processes at once.

    Not root: RLIMIT_NPROC, set inside the sandbox by prlimit (counted per user namespace, so the
    kernel's own processes do not count against it). Root: the kernel ignores RLIMIT_NPROC for
    root, so the sandbox runs inside a pid namespace of its own whose pid_max bounds it. pid_max
    counts pid numbers: after they wrap, the first RESERVED_PIDS are skipped, so it is set that
    much higher for the limit to hold after a wrap too.
    """
    if os.geteuid() != 0:
        prlimit = shutil.which("prlimit", path=SANDBOX_PATH)
        if prlimit is None:
            return argv
        return [*argv[:binary_at], prlimit, f"--nproc={max_processes}:{max_processes}", "--", *argv[binary_at:]]
    return _own_pid_namespace(argv, max_processes if _pidns_limit_works() else None) or argv


def _own_pid_namespace(argv: list[str], pid_limit: int | None) -> list[str] | None:
    """As root: run `argv` as the first process of a pid namespace of its own, so that it and every
    process it starts (daemons that left its process group included) die when it is killed or
    exits; with `pid_limit`, the namespace also holds at most about that many processes.
    None when unshare(1) is not there."""
    unshare = shutil.which("unshare", path=SANDBOX_PATH)
    if unshare is None or os.geteuid() != 0:
        return None
    head = [unshare, "--pid", "--fork", "--kill-child", "--"]
    if pid_limit is None:
        return [*head, *argv]
    pid_max = pid_limit + RESERVED_PIDS + 1
    # `$$ = 1`: the shell is the first process of the new pid namespace, so the write cannot reach
    # any other namespace's pid_max
    script = f'[ "$$" = 1 ] && echo {pid_max} > /proc/sys/kernel/pid_max && exec "$@"'
    return [*head, "/bin/sh", "-c", script, "sh", *argv]


def bwrap_path() -> str | None:
    return _bwrap_path(BWRAP, os.environ.get("PATH"))


def bwrap_problem() -> str | None:
    bwrap = bwrap_path()
    problem = _probe(bwrap)
    if problem is None and bwrap is not None and "--bind-fd" not in _bwrap_options(bwrap):
        # binding by host path instead would let a command redirect a bind (see bindfds.py): refused
        return (
            f"this bubblewrap ({bwrap}) has no --bind-fd option (it came in 0.8), and binding the agent's folders "
            "by host path would let a command swap one for a symlink to anywhere on this machine just before "
            "the sandbox starts. Install bubblewrap 0.8 or newer"
        )
    return problem


def reset_probe() -> None:
    """Forget the cached checks (after installing bubblewrap, or in tests)."""
    _probe.cache_clear()
    _bwrap_path.cache_clear()
    _existing.cache_clear()
    _bwrap_options.cache_clear()
    _pidns_limit_works.cache_clear()


def _hostname(slug: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9-]", "-", slug).strip("-")[:50] or "agent"
    return f"{clean}-sandbox"


Overlay = Callable[[BindFds], list[str]]


def bwrap_launch(
    *,
    agent_dir: Path,
    slug: str,
    sandbox: SandboxConfig,
    command: str,
    args: list[str],
    env: Mapping[str, str],
    max_processes: int | None = None,
    overlay: Overlay | None = None,
) -> Launch:
    """`overlay`: makes the bwrap arguments applied on top of the roots and mounts (conditions.toml's
    hidden areas), binding through the launch's descriptors. The caller must `close()` the Launch."""
    problem = bwrap_problem()
    if problem:
        raise ToolError(
            f"exec cannot run: {problem}.",
            hint='For a trusted tutorial environment only, backend = "none" in config/sandbox.toml runs commands '
            "without a sandbox.",
        )
    binary = locate(command)
    bwrap = bwrap_path()
    assert bwrap is not None  # bwrap_problem() said it is there
    binds = BindFds()
    try:
        argv = _bwrap_argv(bwrap, agent_dir, slug, sandbox, binds, overlay)
    except BaseException:
        binds.close()
        raise
    root = os.path.realpath(agent_dir)
    argv.append("--clearenv")
    for key, value in env.items():
        argv += ["--setenv", key, value]
    argv += ["--chdir", "/workspace", "--"]
    binary_at = len(argv)
    argv += [binary, *args]
    if max_processes is not None:
        argv = _limit_processes(argv, binary_at, max_processes)
    private = _private_dev() if os.geteuid() == 0 else None
    device_nodes = devices(private, _DEV_NODES, SANDBOX_ROOT_UID) if private else None
    return Launch(argv=argv, env={}, cwd=root, binds=binds, anon=plan(binds.bound, root, device_nodes))


def _bwrap_argv(
    bwrap: str, agent_dir: Path, slug: str, sandbox: SandboxConfig, binds: BindFds, overlay: Overlay | None
) -> list[str]:
    argv = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--new-session"]
    argv += ["--hostname", _hostname(slug)]
    argv += _hardening(bwrap)
    paths = SandboxPaths(Path(os.path.realpath(agent_dir)), sandbox.mounts)
    for name in ROOT_BINDS:
        # where the file tools take the root to be (a person's symlink followed, none a command could have
        # made), then opened without following anything: a root swapped since the check is refused
        real = paths.root_host(name)
        argv += binds.bind(real, f"/{name}") if os.path.isdir(real) else ["--dir", f"/{name}"]
    argv += ["--size", str(TMP_BYTES), "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev", *_dev_binds()]
    if sandbox.usb and os.path.exists("/dev/bus/usb"):
        argv += ["--dev-bind", "/dev/bus/usb", "/dev/bus/usb"]
    if sandbox.all_devices:
        argv += ["--dev-bind", "/dev", "/dev"]
    for mount in sandbox.mounts:
        dest = f"/workspace/{mount.target}"
        argv += binds.bind(paths.mount_host(mount), dest, read_only=mount.read_only)
    if overlay is not None:
        argv += overlay(binds)
    for path in _existing((*_HOST_FILES, *_SYSTEM_DIRS, *_SYSTEM_FILES)):
        argv += ["--ro-bind", path, path]
    return argv


def unsandboxed_launch(
    *, agent_dir: Path, command: str, args: list[str], env: Mapping[str, str], max_processes: int | None = None
) -> Launch:
    """backend = "none": the same environment allowlist, no isolation, and a warning on every result.

    As root the command still gets a pid namespace of its own (unshare), which ends every process
    it started with it and bounds their number; otherwise detached processes can outlive the call.
    """
    binary = locate(command)
    workspace = Path(os.path.realpath(agent_dir)) / "workspace"
    limit = max_processes if max_processes is not None and _pidns_limit_works() else None
    contained = _own_pid_namespace([binary, *args], limit)
    if contained is not None:
        return Launch(argv=contained, env=dict(env), cwd=str(workspace), warning=NO_SANDBOX_WARNING)
    return Launch(
        argv=[binary, *args], env=dict(env), cwd=str(workspace), warning=NO_SANDBOX_WARNING + NO_SANDBOX_DAEMONS
    )
