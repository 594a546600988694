"""Hostile commands: what the sandbox must not let a command see or touch."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import cireil
from exec_agent import exec_agent


@pytest.fixture
def agent(tmp_path, monkeypatch):
    monkeypatch.setenv("CIREIL_KERNEL_SECRET", "kernel-secret-value")
    loaded = cireil.load(exec_agent(tmp_path))
    yield loaded
    loaded.close()


def sh(agent, script: str) -> dict:
    return agent.call("exec", command="sh", args=["-c", script]).data


def test_the_kernel_environment_does_not_leak(agent):
    data = sh(agent, "env; cat /proc/1/environ | tr '\\0' '\\n'")
    assert "kernel-secret-value" not in data["stdout"] + data["stderr"]
    names = {line.split("=", 1)[0] for line in data["stdout"].splitlines() if "=" in line}
    assert {"PATH", "HOME", "LANG", "LC_ALL"} <= names
    assert "CIREIL_KERNEL_SECRET" not in names


def test_host_home_and_files_outside_the_binds_are_invisible(agent, tmp_path):
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("top secret")
    home = os.path.expanduser("~")
    data = sh(agent, f"cat {secret}; ls -a {home}; cat /etc/shadow; ls /root /home /work /opt /srv")
    assert "top secret" not in data["stdout"]
    assert data["exitCode"] != 0
    assert data["stdout"].strip() in ("", ".\n..", ". ..") or "No such file" in data["stderr"]


def test_blocks_are_not_mounted_and_the_agent_root_is_not_reachable(agent):
    data = sh(agent, "ls /blocks; cat /blocks/soul.md; ls ..; cat ../blocks/soul.md; cat ../config/tools.toml")
    assert "soul body" not in data["stdout"] and "list-dir" not in data["stdout"]
    assert "No such file" in data["stderr"]


def test_workspace_memories_skills_tasks_are_the_agents_folders(agent):
    data = sh(agent, "pwd; cat hello.txt; ls /skills; echo made > /memories/new.md; echo $HOME")
    assert data["stdout"] == "/workspace\nhello\nnotes\n/workspace\n"
    assert (agent.directory / "memories" / "new.md").read_text() == "made\n"


def test_system_directories_are_read_only_and_tmp_is_private(agent, tmp_path):
    marker = "/tmp/cireil-exec-private-tmp-probe"
    data = sh(agent, f"touch /usr/x 2>&1; echo inside > {marker}; cat {marker}")
    assert "Read-only file system" in data["stdout"] and "inside" in data["stdout"]
    assert not os.path.exists(marker)


def test_host_processes_are_invisible(agent):
    data = sh(agent, "ls /proc | grep -c '^[0-9]'")
    # bwrap's init, the shell, ls and grep at most: the kernel's processes are in another PID namespace
    assert int(data["stdout"]) <= 5


def test_symlinks_made_inside_do_not_open_host_files_to_later_tools(agent):
    before = Path("/etc/passwd").read_text()
    data = sh(agent, "ln -s /etc/passwd /workspace/link && echo made")
    assert data["stdout"] == "made\n"
    result = agent.call("write", path="/workspace/link", content="pwned\n")
    assert result.success is False and result.data["error"].startswith("Access denied")
    assert Path("/etc/passwd").read_text() == before


def test_read_only_mounts_cannot_be_written_from_inside(tmp_path):
    source = tmp_path / "data"
    source.mkdir()
    (source / "f.txt").write_text("keep")
    mounts = f'[[mounts]]\nsource = "{source}"\ntarget = "data"\nmode = "ro"\n'
    agent = cireil.load(exec_agent(tmp_path, mounts=mounts, name="mounted"))
    data = sh(agent, "cat data/f.txt; echo changed > data/f.txt")
    assert data["stdout"] == "keep" and "Read-only file system" in data["stderr"]
    assert (source / "f.txt").read_text() == "keep"


def test_the_bwrap_argv_follows_the_reference(tmp_path):
    from cireil.runtime.config.sandbox_config import Mount, SandboxConfig
    from cireil.runtime.exec.sandbox import base_env, bwrap_launch

    agent_dir = exec_agent(tmp_path, name="argv")
    (tmp_path / "ro-src").mkdir()
    (tmp_path / "rw-src").mkdir()
    config = SandboxConfig(
        binaries=("ls",),
        mounts=[Mount(tmp_path / "ro-src", "ro", "ro"), Mount(tmp_path / "rw-src", "data/rw", "rw")],
    )
    env = base_env((), {"TOKEN": "x"}, "/workspace")
    launch = bwrap_launch(agent_dir=agent_dir, slug="argv", sandbox=config, command="ls", args=["-a", "b c"], env=env)
    launch.close()
    argv = launch.argv
    # the binds go by descriptor (tests/runtime/exec/test_exec_bindfd.py checks what each one names): fd numbers vary
    words = " ".join("FD" if argv[i - 1].endswith("-bind-fd") else w for i, w in enumerate(argv))
    assert argv[1:6] == ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--new-session"]
    for name in ("workspace", "memories", "skills", "tasks"):
        assert f"--bind-fd FD /{name}" in words
    assert "/blocks" not in words and str(tmp_path) not in words
    assert "--size 67108864 --tmpfs /tmp --proc /proc --dev /dev" in words
    assert "--ro-bind-fd FD /workspace/ro" in words and "--bind-fd FD /workspace/data/rw" in words
    assert "--clearenv --setenv PATH /usr/bin:/bin:/usr/local/bin --setenv HOME /workspace" in words
    assert "--setenv LANG C.UTF-8 --setenv LC_ALL C.UTF-8 --setenv TOKEN x" in words
    binary = shutil.which("ls", path="/usr/bin:/bin:/usr/local/bin")
    assert argv[-6:] == ["--chdir", "/workspace", "--", binary, "-a", "b c"]
