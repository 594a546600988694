"""New agent directories from the demo agent that ships inside the package.

`cireil init DIR` and `%cireil load --demo` both start from the same files, read through
importlib.resources so that they work from a wheel, an editable install or a zip alike.
Agent directories hold private notes, so everything created here is owner-only (reference §1.1).

The files are those the original CireilClaw's own `init` writes (upstream-formats.md §1.2: the five
blocks with `+++` frontmatter, core.md, a create-skill skill, engine.toml with one default provider,
tools.toml, sandbox.toml), plus the demo's workspace, memories, task and second skill, which the
original reads as any agent's files. When DIR is `<root>/agents/<slug>`, the root gets the original's
`config/` and `agents/` folders and a `config/migrations.json` marking every migration applied, unless
it has one already (§3.8): without it the original would offer to rerun migrations that overwrite
a modern engine.toml.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from .base.errors import CireilError
from .base.scratch import remove_when_gone

DIR_MODE = 0o700
FILE_MODE = 0o600
# pip byte-compiles every .py file it installs, the demo's sample script included; the caches are
# an artefact of installation, not part of the agent.
_SKIPPED = {"__pycache__"}


class DirectoryNotEmptyError(CireilError):
    """`init` was pointed at a directory that already holds files; nothing was written."""


def demo_source() -> Traversable:
    """The packaged demo agent."""
    return files("cireil") / "demo"


def init(directory: str | os.PathLike[str], *, notes: list[str] | None = None) -> Path:
    """Create a working agent in `directory` (created if missing) from the demo; returns its path.

    Refuses a directory that exists and is not empty, so an agent is never half-overwritten. What was
    written outside the agent directory (a runtime root's migrations.json) is appended to `notes`.
    """
    target = Path(directory).expanduser().absolute()
    if target.exists():
        if not target.is_dir():
            raise DirectoryNotEmptyError(f"{directory} exists and is not a directory")
        if any(target.iterdir()):
            raise DirectoryNotEmptyError(f"{directory} is not empty; choose a new or empty directory")
        created = False
    else:
        created = True
    root = target.parent.parent if target.parent.name == "agents" else None
    made: list[Path] = []  # folders of the runtime root this call created, undone on failure
    written: Path | None = None
    try:
        if root is not None:
            for folder in (root, root / "config", root / "agents"):
                if not folder.exists():
                    folder.mkdir(mode=DIR_MODE, parents=True)
                    os.chmod(folder, DIR_MODE)
                    made.append(folder)
        if created:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.mkdir(mode=DIR_MODE)
        os.chmod(target, DIR_MODE)
        _copy_tree(demo_source(), target)
        if root is not None:
            from .original.runtime_root import write_migrations_json  # a runtime root only: not for --demo copies

            written = write_migrations_json(root)
    except BaseException:
        # A half-written agent would fail dry-run in confusing ways; leave things as they were.
        if written is not None:
            written.unlink(missing_ok=True)
        if created:
            shutil.rmtree(target, ignore_errors=True)
        elif target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    if notes is not None and written is not None:
        notes.append(f"wrote {written}: every config migration of the original CireilClaw marked as applied")
    return target


def _copy_tree(source: Traversable, target: Path) -> None:
    for entry in source.iterdir():
        if entry.name in _SKIPPED:
            continue
        dest = target / entry.name
        if entry.is_dir():
            dest.mkdir(mode=DIR_MODE)
            os.chmod(dest, DIR_MODE)  # mkdir's mode is filtered by the umask; the agent's is not
            _copy_tree(entry, dest)
        else:
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
            with os.fdopen(fd, "wb") as fh:
                fh.write(entry.read_bytes())
            os.chmod(dest, FILE_MODE)


_SHM = "/dev/shm"
_SHM_FREE = 256 * 1024 * 1024


def _scratch_root() -> str | None:
    """Where a throwaway copy goes: memory (/dev/shm) when the machine has a roomy, writable,
    executable one and TMPDIR does not ask for another place; else the usual temporary folder.

    A scratch agent's files need no disk: on a busy disk, creating them and its sessions.db (whose
    journal setup waits for the disk) took most of `%cireil load --demo` (bench/load_ext.py)."""
    if os.environ.get("TMPDIR"):
        return None
    try:
        fs = os.statvfs(_SHM)
    except OSError:
        return None
    noexec = fs.f_flag & getattr(os, "ST_NOEXEC", 0)
    roomy = fs.f_bavail * fs.f_frsize >= _SHM_FREE
    return _SHM if roomy and not noexec and os.access(_SHM, os.W_OK | os.X_OK) else None


def copy_demo() -> Path:
    """A fresh, writable copy of the demo at `<tmp>/demo` (so its slug is "demo"); returns its path.

    The copy is a scratch space: it is removed when the process that made it exits, however it ends.
    """
    scratch = Path(tempfile.mkdtemp(prefix="cireil-demo-", dir=_scratch_root()))
    atexit.register(_remove_scratch, scratch, os.getpid())
    remove_when_gone(scratch)
    agent = init(scratch / "demo")
    _key_from_environment(agent / "config" / "engine.toml")
    return agent


DEMO_KEY_LINE = 'apiKey = "not-needed"\n'
ENV_KEY_LINE = (
    "# This throwaway copy reads the key from the kernel's environment (cireil's form; the original reads\n"
    "# only keys written here): import os; os.environ['OPENAI_API_KEY'] = '...'\n"
    'apiKey = { env = "OPENAI_API_KEY" }\n'
)


def _key_from_environment(engine_toml: Path) -> None:
    """A demo copy takes its key from OPENAI_API_KEY: in a notebook, a key set in a cell is the safe way, and
    no one shares a throwaway copy with the original runtime. `cireil init` keeps the original's literal key."""
    text = engine_toml.read_text()
    if text.count(DEMO_KEY_LINE) == 1:
        engine_toml.write_text(text.replace(DEMO_KEY_LINE, ENV_KEY_LINE))


def is_demo_copy(directory: Path) -> bool:
    """Whether `directory` is a throwaway copy copy_demo made (<scratch root>/cireil-demo-*/demo)."""
    scratch = directory.parent
    roots = {Path(tempfile.gettempdir()), Path(_SHM)}
    return directory.name == "demo" and scratch.name.startswith("cireil-demo-") and scratch.parent in roots


def _remove_scratch(scratch: Path, owner_pid: int) -> None:
    # A forked child inherits atexit handlers; only the process that made the copy may remove it.
    if os.getpid() == owner_pid:
        with contextlib.suppress(OSError):
            shutil.rmtree(scratch)
