"""exec's binds are made from descriptors, not host paths: nothing swapped in after the check is mounted.

A re-allowed area of conditions.toml (bound back below a hidden one), the agent's roots and the mounts of
sandbox.toml are opened by cireil without following any symlink and handed to bubblewrap as descriptors
(`--bind-fd`). A thread here swaps a directory on the way to such a bind for a symlink to the outside while
commands start, as a command running in exec could do during another call: whatever the interleaving, the
command never sees the outside. Real bwrap throughout; tests/unprivileged.py runs this file as `nobody` too.
"""

from __future__ import annotations

import os
import shutil
import stat
import time

import pytest

import cireil
from cireil.runtime.exec import anon_mounts, sandbox
from exec_agent import BINARIES, exec_agent
from racekit import SECRET, Swapper, snapshot

RUNS = 400
MAX_SECONDS = 60.0
# /workspace/d hidden, /workspace/d/pub bound back from the host: the bind whose source path a command can
# redirect by swapping d for a symlink (the original engineer's known hole)
CONDITIONS = (
    '[workspace."/d/"]\naction = "allow"\nwhen = "tui"\n[workspace."/d/pub/"]\naction = "allow"\nwhen = "!tui"\n'
)


def sh(agent, script: str) -> dict:
    return agent.call("exec", command="sh", args=["-c", script]).data


@pytest.fixture
def world(tmp_path):
    path = exec_agent(tmp_path, name="bindfd")
    (path / "config" / "conditions.toml").write_text(CONDITIONS)
    (path / "workspace" / "d" / "pub").mkdir(parents=True)
    (path / "workspace" / "d" / "pub" / "f.txt").write_text("inside pub\n")
    outside = tmp_path / "outside"
    (outside / "pub").mkdir(parents=True)
    (outside / "pub" / "f.txt").write_text(SECRET + "\n")
    (outside / "f.txt").write_text(SECRET + "\n")
    agent = cireil.load(path)
    yield agent, path, outside
    agent.close()


@pytest.mark.parametrize("swapped", ["d/pub", "d"])
def test_a_symlink_swapped_in_on_the_way_to_a_rebound_area_is_never_mounted(world, swapped):
    agent, path, outside = world
    assert sh(agent, "cat /workspace/d/pub/f.txt")["stdout"] == "inside pub\n"  # the bind works when nothing moves
    before = snapshot(outside)
    swapper = Swapper(path / "workspace" / swapped, outside / swapped.removeprefix("d").lstrip("/"), linger=0.001)
    outcomes = {"inside": 0, "failed": 0}
    swapper.start()
    started = time.monotonic()
    try:
        runs = 0
        while runs < RUNS and time.monotonic() - started < MAX_SECONDS:
            data = sh(agent, "cat /workspace/d/pub/f.txt; echo planted > /workspace/d/pub/planted.txt")
            assert SECRET not in repr(data), data
            outcomes["inside" if "inside pub" in data.get("stdout", "") else "failed"] += 1
            runs += 1
    finally:
        swapper.restore()
    assert swapper.swaps > 50, "the swapper barely ran: the race was not exercised"
    assert runs >= 50 and outcomes["inside"] > 0, outcomes
    assert snapshot(outside) == before, "a command wrote outside the sandbox"


def test_the_bind_descriptors_reach_bwrap_only_and_are_closed_after_the_call(tmp_path):
    agent = cireil.load(exec_agent(tmp_path, name="fds"))
    try:
        data = sh(agent, "ls /proc/self/fd")  # also opens what the first call opens for good (sessions.db)
        # 0, 1, 2 and the directory ls reads itself: no descriptor of a host directory in the command
        assert data["stdout"].split() == ["0", "1", "2", "3"], data
        anon_mounts.settle()  # the work folders are removed in the background
        before = _open_fds()
        for _ in range(5):
            sh(agent, "true")
        anon_mounts.settle()
        assert _open_fds() <= before  # nothing of the launches left open here
    finally:
        agent.close()


def test_the_binds_are_descriptors_of_the_checked_directories(tmp_path):
    from cireil.runtime.config.sandbox_config import Mount, SandboxConfig

    agent_dir = exec_agent(tmp_path, name="argv")
    (tmp_path / "ro-src").mkdir()
    config = SandboxConfig(binaries=("ls",), mounts=[Mount(tmp_path / "ro-src", "ro", "ro")])
    launch = sandbox.bwrap_launch(
        agent_dir=agent_dir, slug="argv", sandbox=config, command="ls", args=[], env=sandbox.base_env((), {}, "/")
    )
    try:
        argv = launch.argv
        assert "--bind" not in argv and "--ro-bind" in argv  # system directories still go by path
        binds = {argv[i + 2]: int(argv[i + 1]) for i, word in enumerate(argv) if word in ("--bind-fd", "--ro-bind-fd")}
        assert sorted(binds.values()) == sorted(launch.fds)
        root = os.path.realpath(agent_dir)
        for name in ("workspace", "memories", "skills", "tasks"):
            assert os.readlink(f"/proc/self/fd/{binds['/' + name]}") == f"{root}/{name}"
        assert os.readlink(f"/proc/self/fd/{binds['/workspace/ro']}") == f"{tmp_path}/ro-src"
        assert argv[argv.index(str(binds["/workspace/ro"])) - 1] == "--ro-bind-fd"
        for fd in launch.fds:
            assert os.get_inheritable(fd) is False  # only pass_fds hands them on, to bwrap alone
    finally:
        launch.close()
    assert all(not _is_open(fd) for fd in binds.values())


def _open_fds() -> set[str]:
    """What this process holds open, by what each descriptor names."""
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the descriptor listdir itself used
            continue
    return out


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_a_root_swapped_for_a_symlink_after_the_check_is_refused(tmp_path, monkeypatch):
    """The window between realpath and opening, forced: every component is opened without following."""
    agent_dir = exec_agent(tmp_path, name="swapped")
    outside = tmp_path / "outside"
    outside.mkdir()
    checked = sandbox.SandboxPaths.root_host

    def check_then_swap(self, root):
        answer = checked(self, root)  # the check sees the real directory...
        if root == "memories":  # ...then a command swaps it for a symlink to the outside
            os.rename(agent_dir / "memories", tmp_path / "memories.away")
            os.symlink(outside, agent_dir / "memories")
        return answer

    monkeypatch.setattr(sandbox.SandboxPaths, "root_host", check_then_swap)
    from cireil.runtime.base.errors import ToolError
    from cireil.runtime.config.sandbox_config import SandboxConfig

    with pytest.raises(ToolError, match="changed while exec was being set up") as caught:
        sandbox.bwrap_launch(
            agent_dir=agent_dir, slug="s", sandbox=SandboxConfig(binaries=("ls",)), command="ls", args=[], env={}
        )
    assert str(tmp_path) not in str(caught.value)  # the message names sandbox paths only


def test_a_bubblewrap_without_bind_fd_refuses_instead_of_binding_by_path(tmp_path, monkeypatch):
    real = shutil.which("bwrap")
    assert real is not None
    fake = tmp_path / "old-bwrap"
    ran = tmp_path / "ran"
    # an older bubblewrap: the same program, but its --help does not offer --bind-fd
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = --help ]; then {real} --help | grep -v -- -bind-fd; exit 0; fi\n'
        f'[ "$#" -gt 12 ] && touch {ran}\nexec {real} "$@"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setattr(sandbox, "BWRAP", str(fake))
    sandbox.reset_probe()
    agent = cireil.load(exec_agent(tmp_path, name="oldbwrap", binaries=BINARIES))
    try:
        assert cireil.sandbox_available() is False and "--bind-fd" in cireil.sandbox_problem()
        data = sh(agent, "echo ran")
        assert data["success"] is False and "no --bind-fd option" in data["error"], data
        assert "ran" not in data.get("stdout", "") and not ran.exists()
    finally:
        agent.close()
        sandbox.reset_probe()


def test_a_missing_mount_source_is_a_clear_error(tmp_path):
    mounts = f'[[mounts]]\nsource = "{tmp_path / "nowhere"}"\ntarget = "data"\nmode = "rw"\n'
    agent = cireil.load(exec_agent(tmp_path, mounts=mounts, name="gone"))
    try:
        data = sh(agent, "echo ran")
        assert data["success"] is False and "/workspace/data" in data["error"], data
        assert str(tmp_path) not in data["error"]
    finally:
        agent.close()


def test_a_mount_source_redirected_by_a_command_is_refused_by_exec_and_the_file_tools(tmp_path):
    """`data` (read-only) lies inside `proj` (read-write): a command swaps it for a symlink to a host folder."""
    (tmp_path / "proj" / "data").mkdir(parents=True)
    (tmp_path / "proj" / "data" / "s.txt").write_text("inside data\n")
    (tmp_path / "hostdir").mkdir()
    (tmp_path / "hostdir" / "s.txt").write_text(SECRET + "\n")
    (tmp_path / "linked").symlink_to(tmp_path / "proj")  # the person's own symlink: followed as before
    mounts = (
        f'[[mounts]]\nsource = "{tmp_path}/linked"\ntarget = "proj"\nmode = "rw"\n'
        f'[[mounts]]\nsource = "{tmp_path}/proj/data"\ntarget = "data"\nmode = "ro"\n'
    )
    path = exec_agent(tmp_path, mounts=mounts, name="nested")
    tools = path / "config" / "tools.toml"
    tools.write_text("read = true\n" + tools.read_text())
    agent = cireil.load(path)
    try:
        assert sh(agent, "cat /workspace/data/s.txt")["stdout"] == "inside data\n"
        assert agent.call("read", path="/workspace/proj/data/s.txt").data["success"]
        swap = f"mv /workspace/proj/data /workspace/proj/old && ln -s {tmp_path}/hostdir /workspace/proj/data"
        assert sh(agent, swap)["exitCode"] == 0
        data = sh(agent, "cat /workspace/data/s.txt")
        assert data["success"] is False and "symlink inside the sandbox" in data["error"], data
        read = agent.call("read", path="/workspace/data/s.txt").data
        assert read["success"] is False and SECRET not in repr(read), read
        assert str(tmp_path) not in data["error"] + read["error"]
    finally:
        agent.close()
