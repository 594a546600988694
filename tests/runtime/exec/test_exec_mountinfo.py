"""Inside the exec sandbox, /proc/self/mountinfo names no host path (runtime/exec/anon_mounts.py).

Each folder bound into the sandbox (the agent's roots, sandbox.toml's mounts, the areas conditions.toml binds
back) is an overlayfs of its own, so its line shows `/` as root and layers named relative to detached mounts;
as root, the device nodes sit on a tmpfs of their own. Real bwrap; tests/unprivileged.py runs this file as
`nobody` too.
"""

from __future__ import annotations

import logging
import os
import stat
import time

import pytest

import cireil
from cireil.runtime.exec import anon_mounts
from exec_agent import exec_agent

SECRET = "s3cr3t-beside-the-agent"
# /workspace/d hidden, /workspace/d/pub bound back: a bind nested inside another root's overlay
CONDITIONS = (
    '[workspace."/d/"]\naction = "allow"\nwhen = "tui"\n[workspace."/d/pub/"]\naction = "allow"\nwhen = "!tui"\n'
)


def sh(agent, script: str) -> dict:
    return agent.call("exec", command="sh", args=["-c", script]).data


def _lines(mountinfo: str) -> dict[str, list[str]]:
    """mount point -> the line's fields (4: root inside the source filesystem; after '-': type, source, options)."""
    return {line.split(" ")[4]: line.split(" ") for line in mountinfo.splitlines()}


@pytest.fixture
def world(tmp_path):
    ro_source = tmp_path / "reference"
    ro_source.mkdir()
    (ro_source / "r.txt").write_text("read only\n")
    path = exec_agent(tmp_path, name="mountinfo")
    rw_source = path / "projects"  # a read-write mount inside the agent directory
    rw_source.mkdir()
    mounts = (
        f'[[mounts]]\nsource = "{ro_source}"\ntarget = "reference"\nmode = "ro"\n'
        f'[[mounts]]\nsource = "{rw_source}"\ntarget = "projects"\nmode = "rw"\n'
    )
    with open(path / "config" / "sandbox.toml", "a") as handle:
        handle.write(mounts)
    (path / "config" / "conditions.toml").write_text(CONDITIONS)
    (path / "workspace" / "d" / "pub").mkdir(parents=True)
    (path / "workspace" / "d" / "pub" / "f.txt").write_text("inside pub\n")
    (path / "blocks" / "secret.md").write_text(SECRET)
    (tmp_path / "beside.txt").write_text(SECRET)
    agent = cireil.load(path)
    yield agent, path, tmp_path
    agent.close()


def test_mountinfo_names_no_host_path_and_every_bind_still_works(world, caplog):
    agent, path, tmp_path = world
    real = os.path.realpath(path)
    with caplog.at_level(logging.WARNING, logger="cireil.exec"):
        data = sh(
            agent,
            "cat /proc/self/mountinfo; echo ==; cat /proc/self/mounts; echo ==;"
            " cat /workspace/reference/r.txt /workspace/d/pub/f.txt; echo made > /workspace/projects/new.txt;"
            " echo pub > /workspace/d/pub/new.txt; echo ws > /workspace/w.txt; echo ==;"
            f" for p in {real}/blocks/secret.md {tmp_path}/beside.txt {real}; do test -e $p && echo $p; done; true",
        )
    assert data["exitCode"] == 0, data
    mountinfo, mounts, reads, reachable = data["stdout"].split("==\n")
    assert reads == "read only\ninside pub\n" and reachable == "", data
    for text in (mountinfo, mounts):
        assert str(tmp_path) not in text and real not in text and "cireil-dev" not in text, text
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    lines = _lines(mountinfo)
    for point in ("/workspace", "/memories", "/skills", "/tasks", "/workspace/projects", "/workspace/d/pub"):
        fields = lines[point]
        assert fields[3] == "/" and fields[fields.index("-") + 1] == "overlay", fields
    ro = lines["/workspace/reference"]
    assert ro[3] == "/" and ro[5].startswith("ro,"), ro
    assert "upperdir=/workspace," in " ".join(lines["/workspace"])
    # what the command wrote is on the host, in place
    assert (path / "projects" / "new.txt").read_text() == "made\n"
    assert (path / "workspace" / "d" / "pub" / "new.txt").read_text() == "pub\n"
    assert (path / "workspace" / "w.txt").read_text() == "ws\n"


def test_folder_operations_leave_nothing_behind_on_the_host(world):
    agent, path, _ = world
    script = (
        "set -e; cd /workspace; mkdir -p a/b/c; echo x > a/b/c/f; mv a z; ln z/b/c/f hard; ln -s z/b soft;"
        " mkdir gone; echo y > gone/f; rm -rf gone; mv hard hard2; rm hard2; chmod 700 z; mkdir -p z/b/e;"
        " mv z/b/c z/b/e/; rmdir z/b/e/c 2>/dev/null || rm -r z/b/e/c; ls -R /workspace > /dev/null; echo ok"
    )
    data = sh(agent, script)
    assert data["stdout"] == "ok\n", data
    anon_mounts.settle()  # the opaque marks are taken off with the work folder
    assert sorted(os.listdir(path / "workspace" / "z" / "b")) == ["e"]
    for top, dirs, files in os.walk(path / "workspace"):
        for name in dirs + files:
            full = os.path.join(top, name)
            mode = os.lstat(full).st_mode
            assert not stat.S_ISCHR(mode), f"a whiteout was left on the host: {full}"
            if not stat.S_ISLNK(mode):
                assert os.listxattr(full, follow_symlinks=False) == [], full
    assert os.listxattr(path / "workspace") == []
    anon_mounts.settle()
    assert os.listdir(path / ".cireil" / "exec") == []  # the launch's work folder is gone with it


def test_a_read_write_mount_outside_the_agent_stays_a_bind_and_says_so(tmp_path, caplog):
    outside = tmp_path / "shared-rw"
    outside.mkdir()
    mounts = f'[[mounts]]\nsource = "{outside}"\ntarget = "shared"\nmode = "rw"\n'
    agent = cireil.load(exec_agent(tmp_path, mounts=mounts, name="rwout"))
    try:
        with caplog.at_level(logging.WARNING, logger="cireil.exec"):
            data = sh(agent, "echo w > /workspace/shared/f; grep -c overlay /proc/self/mountinfo")
            sh(agent, "true")
        assert (outside / "f").read_text() == "w\n"
        assert int(data["stdout"]) == 4  # the agent's four roots
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 1 and "/workspace/shared" in said[0] and "outside the agent directory" in said[0], said
    finally:
        agent.close()


@pytest.mark.parametrize("root", ["memories", "workspace"])
def test_a_root_moved_between_the_check_and_the_fork_refuses_the_command(tmp_path, monkeypatch, caplog, root):
    """The child opens each folder again without following symlinks and compares it with what cireil checked.
    A plain bind instead would let a command that races the launch on purpose read the host path."""
    agent = cireil.load(exec_agent(tmp_path, name="moved"))
    path = tmp_path / "moved"
    planned = anon_mounts.plan
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "planted.txt").write_text(SECRET)

    def plan_then_swap(bound, agent_dir, device_nodes=None):
        answer = planned(bound, agent_dir, device_nodes)
        os.rename(path / root, tmp_path / f"{root}.away")  # a command swapping it, say
        os.symlink(outside, path / root)
        return answer

    monkeypatch.setattr("cireil.runtime.exec.sandbox.plan", plan_then_swap)
    try:
        with caplog.at_level(logging.WARNING, logger="cireil.exec"):
            result = agent.call("exec", command="sh", args=["-c", "ls /memories /workspace; echo ran > /tmp/ran"])
        assert not result.success and f"'/{root}' changed while exec was being set up" in str(result.data), result
        assert SECRET not in str(result.data) and str(tmp_path) not in str(result.data)
        assert not caplog.records  # refused, not run with a plain bind
        anon_mounts.settle()
        assert os.listdir(path / ".cireil" / "exec") == []
    finally:
        agent.close()


def test_work_folders_of_dead_launches_are_swept_and_live_ones_kept(tmp_path):
    base = tmp_path / "exec"
    base.mkdir()
    namespace = anon_mounts._pid_namespace()
    dead = base / f"999999999.{namespace}.abc"
    live = base / f"{os.getpid()}.{namespace}.def"
    foreign_new = base / "1.123.ghi"
    foreign_old = base / "1.456.jkl"
    for folder in (dead, live, foreign_new, foreign_old):
        (folder / "w0" / "work").mkdir(parents=True)
        os.chmod(folder / "w0" / "work", 0)  # as overlayfs leaves it
    old = time.time() - 2 * 24 * 3600
    os.utime(foreign_old, (old, old))
    anon_mounts.sweep(str(base))
    assert sorted(os.listdir(base)) == sorted([live.name, foreign_new.name])


def test_copies_of_the_agent_leave_the_working_folders_behind(tmp_path):
    """A replay or an eval variant copies the agent while a command may be running in it."""
    from cireil.runtime.files.agentcopy import copy_agent_tree

    source = exec_agent(tmp_path, name="copied")
    work = source / ".cireil" / "exec" / "1.2.abc" / "w0" / "work"
    work.mkdir(parents=True)
    os.chmod(work, 0)  # as overlayfs leaves it: unreadable for anyone but root
    (source / ".cireil" / "tmp").mkdir()
    (source / ".cireil" / "tmp" / "half-written").write_text("x")
    (source / "workspace" / "exec").mkdir()  # a folder of the same name elsewhere is the agent's own
    target = copy_agent_tree(source, tmp_path / "copy", ("sessions.db*",))
    assert not (target / ".cireil" / "exec").exists() and not (target / ".cireil" / "tmp").exists()
    assert (target / "workspace" / "exec").is_dir() and (target / "config" / "sandbox.toml").is_file()


def test_each_work_folder_is_removed_the_quick_way(tmp_path, monkeypatch):
    """Whoever runs the kernel: overlayfs's leftovers (mode 000 folders) go without walking the tree."""
    agent = cireil.load(exec_agent(tmp_path, name="quick"))
    slow: list[str] = []
    monkeypatch.setattr(anon_mounts, "remove_tree", slow.append)
    try:
        for _ in range(3):
            sh(agent, "mkdir -p /workspace/q && echo x > /workspace/q/f")
        anon_mounts.settle()
        assert slow == [] and os.listdir(tmp_path / "quick" / ".cireil" / "exec") == []
    finally:
        agent.close()


def test_when_the_namespaces_cannot_be_made_commands_run_with_plain_binds_and_it_is_said(tmp_path, monkeypatch, caplog):
    """A kernel or policy refusing the launch's namespaces (AppArmor on some distributions): exec still works."""

    def refused(self):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(anon_mounts.AnonMounts, "preexec", refused)
    monkeypatch.setattr(anon_mounts, "_kernel_refuses", [])
    monkeypatch.setattr(anon_mounts, "_reported", set())
    agent = cireil.load(exec_agent(tmp_path, name="refused"))
    try:
        with caplog.at_level(logging.WARNING, logger="cireil.exec"):
            first = sh(agent, "echo one")
            second = sh(agent, "echo two")
        assert (first["stdout"], second["stdout"]) == ("one\n", "two\n")
        said = [r.getMessage() for r in caplog.records]
        assert any("/workspace" in m and "could not be set up" in m for m in said), said
        assert len(said) == len(set(said))  # once each, not on every call
        assert anon_mounts.plan([], str(tmp_path)) is None  # and no further attempt is made
    finally:
        agent.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a folder inside the workspace needs root")
def test_a_folder_with_a_mount_inside_stays_a_bind_so_the_mount_still_shows(tmp_path, caplog):
    import subprocess

    path = exec_agent(tmp_path, name="nested")
    inner = path / "workspace" / "disk"
    inner.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(inner)], check=True)
    try:
        (inner / "on-the-mount.txt").write_text("here\n")
        agent = cireil.load(path)
        try:
            with caplog.at_level(logging.WARNING, logger="cireil.exec"):
                data = sh(agent, "cat /workspace/disk/on-the-mount.txt; grep -c ' overlay ' /proc/self/mountinfo")
            assert data["stdout"] == "here\n3\n", data  # the other three roots are still overlays
            said = [r.getMessage() for r in caplog.records]
            assert len(said) == 1 and "/workspace," in said[0] and "other mounts lie inside it" in said[0], said
        finally:
            agent.close()
    finally:
        subprocess.run(["umount", "-l", str(inner)], check=False)


def test_mountinfo_escapes_are_read_back():
    assert anon_mounts._unescape(rb"/a\040b\011c\134d") == b"/a b\tc\\d"
    assert anon_mounts._unescape(rb"/plain") == b"/plain"
    assert anon_mounts._unescape(rb"/end\04") == rb"/end\04"  # not a whole escape: left as it is


def test_closing_the_agent_leaves_no_work_folder_so_its_directory_can_be_removed(tmp_path, monkeypatch):
    """Eval runs remove their copy of the agent right after closing it, as whoever the kernel runs as."""
    import shutil

    tidy = anon_mounts.AnonMounts.tidy

    def slow_tidy(self):  # the background removal, made slow enough that close must wait for it
        time.sleep(0.3)
        tidy(self)

    monkeypatch.setattr(anon_mounts.AnonMounts, "tidy", slow_tidy)
    path = exec_agent(tmp_path, name="closed")
    agent = cireil.load(path)
    sh(agent, "mkdir -p /workspace/new && echo x > /workspace/new/f")
    agent.close()
    assert os.listdir(path / ".cireil" / "exec") == []
    shutil.rmtree(path)
    assert not path.exists()
