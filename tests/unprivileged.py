"""Run pytest as an unprivileged user: `python tests/unprivileged.py [PYTEST ARGS]`.

CI and most containers run the suite as root, where the sandbox takes other paths (a mapped uid,
private device nodes, a pid namespace for the process limit). The security tests must hold for an
ordinary user too, so as root this re-runs pytest as `nobody` through setpriv (util-linux), with a
private HOME and base temp directory that user owns. Not root: pytest runs as is.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

USER = 65534  # nobody / nogroup
HERE = Path(__file__).resolve().parent


def _blocked(paths: list[str]) -> list[tuple[str, str]]:
    """(directory `nobody` cannot pass, its child on the way to a path we need), outermost first.

    A Python built under /root (pyenv) or a venv in a `mktemp -d` directory sits behind a 0700
    directory; it is made reachable in a private mount namespace rather than by changing the host.
    """
    out: list[tuple[str, str]] = []
    for path in paths:
        parts = Path(os.path.realpath(path)).parts
        for depth in range(1, len(parts) - 1):
            directory = os.path.join(*parts[: depth + 1])
            child = os.path.join(directory, parts[depth + 1])
            try:
                mode = os.stat(directory).st_mode
            except OSError:
                break
            if not mode & 0o001 and (directory, child) not in out and not any(d == directory for d, _ in out):
                out.append((directory, child))
    return out


def _reachable(blocked: list[tuple[str, str]], scratch: str) -> list[str]:
    """A shell prelude, run as root in a private mount namespace: each blocked directory becomes a
    tmpfs holding only the one child we need (the rest of it stays hidden, as it was)."""
    lines = ["set -e"]
    for number, (directory, child) in enumerate(blocked):
        stage, directory, child = (shlex.quote(p) for p in (f"{scratch}/stage-{number}", directory, child))
        lines += [
            f"mkdir -p {stage}",
            f"mount --bind {child} {stage}",
            f"mount -t tmpfs -o mode=755 tmpfs {directory}",
            f"mkdir -p {child}",
            f"mount --move {stage} {child}",
            f"rmdir {stage}",
        ]
    return lines


def command(pytest_args: list[str]) -> tuple[list[str], dict[str, str], str | None]:
    """(argv, env, scratch dir to remove) for running pytest unprivileged."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *pytest_args]
    env = dict(os.environ)
    if os.geteuid() != 0:
        return argv, env, None
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise SystemExit("setpriv (util-linux) is needed to drop root for the unprivileged test run")
    scratch = tempfile.mkdtemp(prefix="cireil-unprivileged-")
    os.chmod(scratch, 0o755)
    for sub in ("home", "tmp"):
        os.mkdir(os.path.join(scratch, sub))
        os.chown(os.path.join(scratch, sub), USER, USER)
    env.update(
        HOME=os.path.join(scratch, "home"),
        TMPDIR=os.path.join(scratch, "tmp"),
        CIREIL_UNPRIVILEGED_RUN="1",
        PYTHONDONTWRITEBYTECODE="1",  # the checkout belongs to root
    )
    env.pop("XDG_RUNTIME_DIR", None)
    drop = [setpriv, f"--reuid={USER}", f"--regid={USER}", "--clear-groups", "--reset-env"]
    # --reset-env would drop PATH and the rest: set them again through env(1)
    wrapped = [*drop, "env", *(f"{k}={v}" for k, v in env.items()), *argv, f"--basetemp={scratch}/tmp/pytest"]
    needed = [sys.executable, sys.prefix, sys.base_prefix, str(HERE.parent), *env.get("PYTHONPATH", "").split(":")]
    blocked = _blocked([p for p in needed if p])
    if blocked:
        prelude = "\n".join([*_reachable(blocked, scratch), 'exec "$@"'])
        wrapped = ["unshare", "--mount", "--propagation", "private", "sh", "-c", prelude, "sh", *wrapped]
    return wrapped, env, scratch


def run(pytest_args: list[str], **kwargs) -> subprocess.CompletedProcess:
    argv, env, scratch = command(pytest_args)
    try:
        return subprocess.run(argv, env=env, cwd=HERE.parent, check=False, **kwargs)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]).returncode)
