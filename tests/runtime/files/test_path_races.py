"""Real races on paths: a thread swaps a directory for a symlink to the outside while file tools run.

The swapper does what a command in exec could do while another call runs. Whatever the interleaving,
no tool may read, list, write or edit anything outside the sandbox: every call either works on the
real directory or fails. Each test runs a bounded number of calls (and stops after a bounded time).
Also: opening a FIFO never blocks, and the temporary file of a write is neither listed nor readable.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from cireil.runtime.files import safefs
from cireil.runtime.toolkit.registry import builtin
from cireil.runtime.toolkit.tool import execute
from racekit import SECRET, Swapper, snapshot
from toolctx import make_ctx

CALLS = 1500
MAX_SECONDS = 30.0


@pytest.fixture
def world(agent_dir, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text(SECRET + "\n")
    (outside / "only-outside.txt").write_text(SECRET + "\n")
    d = agent_dir / "workspace" / "d"
    d.mkdir()
    (d / "f.txt").write_text("inside x = 1\n")
    return agent_dir, outside


def race(world, calls: list[tuple[str, dict]], check) -> int:
    agent_dir, outside = world
    before = snapshot(outside)
    ctx = make_ctx(agent_dir, session=None)
    swapper = Swapper(agent_dir / "workspace" / "d", outside)
    swapper.start()
    done = 0

    async def loop() -> None:
        nonlocal done
        started = time.monotonic()
        while done < CALLS and time.monotonic() - started < MAX_SECONDS:
            name, args = calls[done % len(calls)]
            result = await execute(builtin(name), dict(args), ctx)
            check(name, result)
            done += 1

    try:
        asyncio.run(loop())
    finally:
        swapper.restore()
    assert swapper.swaps > 50, "the swapper barely ran: the race was not exercised"
    assert snapshot(outside) == before, "something outside the sandbox was written"
    return done


def test_reads_and_list_dir_never_see_the_outside(world):
    seen = {"ok": 0}

    def check(name, result):
        text = repr(result)
        assert SECRET not in text and "only-outside" not in text, result
        seen["ok"] += bool(result.get("success"))

    calls = [
        ("read", {"path": "/workspace/d/f.txt", "raw": True}),
        ("list-dir", {"path": "/workspace/d"}),
    ]
    assert race(world, calls, check) >= 100
    assert seen["ok"] > 0  # the calls that won the race worked on the real directory


def test_writes_and_edits_never_touch_the_outside(world):
    agent_dir, _ = world

    def check(name, result):
        assert SECRET not in repr(result), result

    calls = [
        ("write", {"path": "/workspace/d/new.txt", "content": "written\n"}),
        ("write", {"path": "/workspace/d/f.txt", "content": "inside x = 1\n"}),
        ("edit", {"path": "/workspace/d/f.txt", "edits": [{"oldText": "x = 1", "newText": "x = 1"}]}),
        ("write", {"path": "/workspace/d/sub/deep.txt", "content": "deep\n"}),
    ]
    assert race(world, calls, check) >= 100
    leftovers = [p for p in (agent_dir / "workspace").rglob("*") if safefs.is_temp_name(p.name)]
    assert leftovers == []


def test_a_fifo_is_refused_at_once_by_every_reading_tool(agent_dir):
    os.mkfifo(agent_dir / "workspace" / "pipe")
    ctx = make_ctx(agent_dir)
    started = time.monotonic()
    for name, args in [
        ("read", {"path": "/workspace/pipe"}),
        ("read", {"path": "/workspace/pipe", "raw": True}),
        ("edit", {"path": "/workspace/pipe", "edits": [{"oldText": "a", "newText": "b"}]}),
        ("open-file", {"path": "/workspace/pipe"}),
    ]:
        result = asyncio.run(asyncio.wait_for(execute(builtin(name), args, ctx), 10))
        assert result["success"] is False, (name, result)
        assert "not a regular file" in result["error"] or "not a standard file" in result["error"], result
    # write never opens the old name: it renames a new file over it, so it cannot block either
    result = asyncio.run(
        asyncio.wait_for(execute(builtin("write"), {"path": "/workspace/pipe", "content": "x"}, ctx), 10)
    )
    assert result["success"] is True and (agent_dir / "workspace" / "pipe").read_text() == "x"
    assert time.monotonic() - started < 10


def test_a_fifo_swapped_in_after_the_check_does_not_block(agent_dir):
    """The file is checked as regular, then replaced by a FIFO: the open itself must not block."""
    target = agent_dir / "workspace" / "swap.txt"
    target.write_text("regular\n")
    ctx = make_ctx(agent_dir)
    from cireil.runtime.files.textfile import read_bytes

    resolved = ctx.paths.resolve("/workspace/swap.txt")
    target.unlink()
    os.mkfifo(target)
    with pytest.raises(Exception, match="not a regular file"):
        read_bytes(resolved)


def test_temporary_files_are_hidden_refused_and_swept(agent_dir):
    ws = agent_dir / "workspace"
    dead = ws / f"{safefs.TEMP_PREFIX}999999999-abcdef"  # a pid that cannot exist: its writer is gone
    dead.write_bytes(b"x" * 1000)
    live = ws / "docs" / safefs.temp_name()  # this process is alive: a write may still be in progress
    live.write_bytes(b"y")
    ctx = make_ctx(agent_dir)
    listing = asyncio.run(execute(builtin("list-dir"), {"path": "/workspace"}, ctx))
    assert [e["name"] for e in listing["entries"]] == ["docs", "hello.txt"]
    for name in ("read", "write"):
        args = (
            {"path": f"/workspace/{dead.name}", "content": "x"}
            if name == "write"
            else {"path": f"/workspace/{dead.name}"}
        )
        result = asyncio.run(execute(builtin(name), args, ctx))
        assert result["success"] is False and "temporary file" in result["error"]
    os.symlink(dead.name, ws / "alias")
    result = asyncio.run(execute(builtin("read"), {"path": "/workspace/alias"}, ctx))
    assert result["success"] is False and "temporary file" in result["error"]
    removed = safefs.sweep_stale([str(agent_dir)])
    assert removed == [str(dead)]
    assert live.exists()


KILLED_WRITER = """\
import os, sys, time
import cireil
agent = cireil.load(sys.argv[1])
real_fsync = os.fsync
def stall(fd):
    print("writing", flush=True)
    time.sleep(60)  # killed here: the temporary file is complete on disk but never renamed
os.fsync = stall
agent.call("write", path="/workspace/big.bin", content="z" * 40_000_000)
"""


def test_a_write_killed_midway_leaves_nothing_visible_and_the_next_load_removes_it(agent_dir):
    import subprocess
    import sys

    import cireil

    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(agent_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
    finally:
        proc.kill()
        proc.wait(10)
    ws = agent_dir / "workspace"
    assert sorted(p.name for p in ws.rglob("*")) == ["docs", "guide.md", "hello.txt"]  # as `ls -aR` in exec
    leftovers = list((agent_dir / safefs.SCRATCH_DIR).iterdir())  # in cireil's own folder, outside the sandbox
    assert len(leftovers) == 1 and leftovers[0].stat().st_size == 40_000_000
    agent = cireil.load(agent_dir)
    try:
        listing = agent.call("list-dir", path="/workspace").data
        assert [e["name"] for e in listing["entries"]] == ["docs", "hello.txt"]
        assert agent.sweep is not None
        agent.sweep.join(30)
        assert agent.sweep.removed == [str(leftovers[0])]
        assert not leftovers[0].exists() and not (ws / "big.bin").exists()
    finally:
        agent.close()


def test_the_exec_output_dir_is_created_without_following_a_swapped_in_symlink(agent_dir, tmp_path, monkeypatch):
    """Resolve sees /workspace/out missing; before the spill directory is made, `out` becomes a link out."""
    from cireil.runtime.base.errors import ToolError
    from cireil.runtime.exec.spill import SpillDir
    from cireil.runtime.files.paths import SandboxPaths

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    paths = SandboxPaths(agent_dir)
    checked = paths.resolve_for_write("/workspace/out/spill")
    (agent_dir / "workspace" / "out").symlink_to(outside)
    monkeypatch.setattr(paths, "resolve_for_write", lambda _path: checked)
    with pytest.raises(ToolError, match="changed while it was being opened"):
        SpillDir(paths, "/workspace/out/spill", "ls")
    assert list(outside.iterdir()) == []


def test_the_temp_sweep_never_unlinks_outside_through_a_swapped_directory(agent_dir, tmp_path):
    """While the sweep walks, a command flips workspace/d to a symlink to a folder holding leftovers of the
    same names: only the ones really inside may go."""
    outside = tmp_path / "outside-temps"
    outside.mkdir()
    names = [f"{safefs.TEMP_PREFIX}999999999-{i:06x}" for i in range(300)]  # a writer pid that cannot exist
    for name in names:
        (outside / name).write_bytes(b"not yours")
    ws = agent_dir / "workspace"
    (ws / "d").mkdir()
    swapper = Swapper(ws / "d", outside)
    rounds = 0
    started = time.monotonic()
    try:
        swapper.start()
        while rounds < 40 and time.monotonic() - started < MAX_SECONDS:
            real = ws / "d.real" if (ws / "d.real").is_dir() else ws / "d"
            for name in names:
                try:
                    (real / name).write_bytes(b"stale")
                except OSError:
                    continue  # swapped meanwhile: fewer leftovers this round
            safefs.sweep_stale([str(ws)])
            rounds += 1
    finally:
        swapper.restore()
    assert swapper.swaps > 50, "the swapper barely ran: the race was not exercised"
    assert sorted(p.name for p in outside.iterdir()) == names
