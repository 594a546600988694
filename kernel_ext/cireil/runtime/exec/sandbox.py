"""How a command is started: the bubblewrap argv (reference §4.12), or the explicit unsandboxed backend.

The sandbox sees the agent's roots at /workspace, /memories, /skills and /tasks (never /blocks), the
configured mounts, read-only system directories, a private /tmp, and an environment built from an
allowlist: nothing of the kernel's own environment leaks in unless hostEnvPassthrough or .env names it.
`--unshare-pid --die-with-parent` ties every process of the command to the bwrap process we start,
so killing our process group (or our own exit) ends them all, background children included.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..config.sandbox_config import SandboxConfig
from ..errors import ToolError

SANDBOX_PATH = "/usr/bin:/bin:/usr/local/bin"
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


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    warning: str | None = None


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
    probe = [bwrap, "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "true"]
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


def bwrap_path() -> str | None:
    return _bwrap_path(BWRAP, os.environ.get("PATH"))


def bwrap_problem() -> str | None:
    return _probe(bwrap_path())


def reset_probe() -> None:
    """Forget the cached checks (after installing bubblewrap, or in tests)."""
    _probe.cache_clear()
    _bwrap_path.cache_clear()
    _existing.cache_clear()


def _hostname(slug: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9-]", "-", slug).strip("-")[:50] or "agent"
    return f"{clean}-sandbox"


def bwrap_launch(
    *,
    agent_dir: Path,
    slug: str,
    sandbox: SandboxConfig,
    command: str,
    args: list[str],
    env: Mapping[str, str],
    overlay: list[str] | tuple[str, ...] = (),
) -> Launch:
    """`overlay`: bwrap arguments applied on top of the roots and mounts (conditions.toml's hidden areas)."""
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
    argv = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--new-session"]
    argv += ["--hostname", _hostname(slug)]
    root = Path(os.path.realpath(agent_dir))
    for name in ROOT_BINDS:
        host = root / name
        argv += ["--bind", str(host), f"/{name}"] if host.is_dir() else ["--dir", f"/{name}"]
    argv += ["--size", str(TMP_BYTES), "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
    if sandbox.usb and os.path.exists("/dev/bus/usb"):
        argv += ["--dev-bind", "/dev/bus/usb", "/dev/bus/usb"]
    if sandbox.all_devices:
        argv += ["--dev-bind", "/dev", "/dev"]
    for mount in sandbox.mounts:
        source = os.path.realpath(mount.source)
        argv += ["--ro-bind" if mount.read_only else "--bind", source, f"/workspace/{mount.target}"]
    argv += overlay
    for path in _existing((*_HOST_FILES, *_SYSTEM_DIRS, *_SYSTEM_FILES)):
        argv += ["--ro-bind", path, path]
    argv.append("--clearenv")
    for key, value in env.items():
        argv += ["--setenv", key, value]
    argv += ["--chdir", "/workspace", "--", binary, *args]
    return Launch(argv=argv, env={}, cwd=str(root))


def unsandboxed_launch(*, agent_dir: Path, command: str, args: list[str], env: Mapping[str, str]) -> Launch:
    """backend = "none": the same environment allowlist, no isolation, and a warning on every result."""
    binary = locate(command)
    workspace = Path(os.path.realpath(agent_dir)) / "workspace"
    return Launch(argv=[binary, *args], env=dict(env), cwd=str(workspace), warning=NO_SANDBOX_WARNING)
