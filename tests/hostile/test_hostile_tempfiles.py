"""A write in progress is never visible under a name the agent lists (list-dir, `ls` in exec).

The data is written into cireil's private folder `<agent>/.cireil/tmp` and renamed into place; on
another filesystem (a mount) it is written into an unnamed O_TMPFILE file of the target directory.
Each test looks at the directory from inside the write (at its fsync, when all the data is there but
not yet renamed), which is what a command listing the directory at that moment would see.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import os
import stat
import tempfile
from pathlib import Path

import pytest

from cireil.runtime.config.sandbox_config import Mount
from cireil.runtime.files import safefs
from cireil.runtime.toolkit.registry import builtin
from cireil.runtime.toolkit.tool import execute
from toolctx import make_ctx


def _all_names(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


class Spy:
    """Replaces os.fsync for the test: at the moment a write's data is complete, notes what is listed."""

    def __init__(self, monkeypatch, watched: Path, ctx=None, scratch: Path | None = None) -> None:
        self.seen: list[list[str]] = []  # everything below `watched`, as `ls -R` in exec would show it
        self.listed: list[list[str]] = []  # what list-dir shows of /workspace
        self.scratch: list[list[str]] = []  # cireil's private folder
        real = os.fsync

        def fsync(fd: int) -> None:
            self.seen.append(_all_names(watched))
            if ctx is not None:
                # from another thread, as a concurrent call would: the write runs inside an event loop
                with concurrent.futures.ThreadPoolExecutor(1) as pool:
                    listing = pool.submit(
                        asyncio.run, execute(builtin("list-dir"), {"path": "/workspace"}, ctx)
                    ).result()
                self.listed.append(sorted(e["name"] for e in listing["entries"]))
            if scratch is not None:
                self.scratch.append(os.listdir(scratch))
            real(fd)

        monkeypatch.setattr(safefs.os, "fsync", fsync)


def test_a_write_in_progress_is_made_outside_the_sandbox(agent_dir, monkeypatch):
    ws = agent_dir / "workspace"
    (ws / "hello.txt").chmod(0o640)
    ctx = make_ctx(agent_dir)
    before = _all_names(ws)
    scratch = agent_dir / safefs.SCRATCH_DIR
    spy = Spy(monkeypatch, ws, ctx, scratch)
    for args in (
        {"path": "/workspace/hello.txt", "content": "replaced\n"},
        {"path": "/workspace/new.txt", "content": "new\n"},
    ):
        result = asyncio.run(execute(builtin("write"), args, ctx))
        assert result["success"] is True, result
    assert spy.seen == [before, before]  # never a temporary name, not even a hidden one
    assert spy.listed == [["docs", "hello.txt"], ["docs", "hello.txt"]]
    assert len(spy.scratch) == 2 and all(len(n) == 1 and safefs.is_temp_name(n[0]) for n in spy.scratch)
    assert (ws / "hello.txt").read_text() == "replaced\n" and stat.S_IMODE((ws / "hello.txt").stat().st_mode) == 0o640
    assert os.listdir(scratch) == [] and stat.S_IMODE(scratch.stat().st_mode) == 0o700


def test_an_exclusive_write_is_made_outside_the_sandbox_too(agent_dir, monkeypatch):
    ws = agent_dir / "workspace"
    before = _all_names(ws)
    spy = Spy(monkeypatch, ws)
    target = make_ctx(agent_dir).paths.resolve_for_write("/workspace/saved.bin").target
    safefs.write_atomic(target, b"\0" * 1000, exclusive=True)
    assert spy.seen == [before]
    with pytest.raises(FileExistsError):
        safefs.write_atomic(target, b"again", exclusive=True)
    assert (ws / "saved.bin").read_bytes() == b"\0" * 1000
    assert os.listdir(agent_dir / safefs.SCRATCH_DIR) == []


@pytest.fixture
def other_fs(agent_dir):
    """A mount source on another filesystem than the agent directory (/dev/shm is a tmpfs)."""
    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(agent_dir).st_dev:
        pytest.skip("needs /dev/shm on another filesystem than the test's temporary directory")
    source = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="cireil-test-"))
    (source / "old.txt").write_text("old\n")
    try:
        yield source
    finally:
        for path in sorted(source.rglob("*"), reverse=True):
            path.unlink() if not path.is_dir() or path.is_symlink() else path.rmdir()
        source.rmdir()


def test_a_write_into_a_mount_on_another_filesystem_has_no_name_while_it_is_written(agent_dir, other_fs, monkeypatch):
    ctx = make_ctx(agent_dir, mounts=[Mount(str(other_fs), "shm", "rw")])
    spy = Spy(monkeypatch, other_fs)
    for args in (
        {"path": "/workspace/shm/old.txt", "content": "new\n"},
        {"path": "/workspace/shm/b.txt", "content": "b"},
    ):
        result = asyncio.run(execute(builtin("write"), args, ctx))
        assert result["success"] is True, result
    target = ctx.paths.resolve_for_write("/workspace/shm/c.bin").target
    safefs.write_atomic(target, b"c", exclusive=True)
    assert spy.seen == [["old.txt"], ["old.txt"], ["b.txt", "old.txt"]]
    assert (other_fs / "old.txt").read_text() == "new\n" and (other_fs / "c.bin").read_bytes() == b"c"
    assert _all_names(other_fs) == ["b.txt", "c.bin", "old.txt"]


def test_without_o_tmpfile_a_named_temporary_file_is_used_and_not_listed(agent_dir, other_fs, monkeypatch):
    ctx = make_ctx(agent_dir, mounts=[Mount(str(other_fs), "shm", "rw")])
    real_open = os.open

    def no_tmpfile(path, flags, *args, **kwargs):
        if flags & os.O_TMPFILE == os.O_TMPFILE:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(safefs.os, "open", no_tmpfile)
    spy = Spy(monkeypatch, other_fs, ctx)
    result = asyncio.run(execute(builtin("write"), {"path": "/workspace/shm/old.txt", "content": "v2"}, ctx))
    assert result["success"] is True, result
    (during,) = spy.seen
    assert len(during) == 2 and safefs.is_temp_name(next(n for n in during if n != "old.txt"))
    listing = asyncio.run(execute(builtin("list-dir"), {"path": "/workspace/shm"}, ctx))
    assert [e["name"] for e in listing["entries"]] == ["old.txt"]
    assert _all_names(other_fs) == ["old.txt"] and (other_fs / "old.txt").read_text() == "v2"


def test_a_rename_refused_across_mounts_of_one_device_falls_back(agent_dir, monkeypatch):
    """Same st_dev but another mount point (a bind mount) makes renameat fail with EXDEV."""
    real_replace = os.replace
    refused = []

    def replace(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
        if src_dir_fd != dst_dir_fd:
            refused.append(src)
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(safefs.os, "replace", replace)
    ctx = make_ctx(agent_dir)
    result = asyncio.run(execute(builtin("write"), {"path": "/workspace/hello.txt", "content": "over\n"}, ctx))
    assert result["success"] is True and len(refused) == 1
    assert (agent_dir / "workspace" / "hello.txt").read_text() == "over\n"
    assert os.listdir(agent_dir / safefs.SCRATCH_DIR) == []
    assert not [n for n in _all_names(agent_dir / "workspace") if safefs.is_temp_name(Path(n).name)]
