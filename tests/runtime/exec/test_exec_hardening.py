"""A hostile command, run by a kernel that may well be root: no privilege inside the sandbox, bounded processes
and output.

Every probe runs for real in bubblewrap. Run as root (CI, containers) the sandbox must still give the command
no capability at all; tests/unprivileged.py runs this file again as an unprivileged user.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import cireil
from exec_agent import exec_agent, processes_with

ROOT = os.geteuid() == 0


def sh(agent, script: str) -> dict:
    return agent.call("exec", command="sh", args=["-c", script]).data


@pytest.fixture
def agent(tmp_path):
    loaded = cireil.load(exec_agent(tmp_path))
    yield loaded
    loaded.close()


def test_the_command_has_no_capabilities_and_an_unprivileged_uid(agent):
    data = sh(agent, "id -u; grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status")
    lines = data["stdout"].splitlines()
    assert lines[0] != "0"  # never root inside, also when the kernel is
    caps = dict(line.split(":\t") for line in lines[1:])
    assert set(caps) == {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}
    assert set(caps.values()) == {"0000000000000000"}, caps


def test_a_read_only_mount_cannot_be_remounted_read_write(tmp_path):
    source = tmp_path / "data"
    source.mkdir()
    (source / "f.txt").write_text("keep")
    mounts = f'[[mounts]]\nsource = "{source}"\ntarget = "data"\nmode = "ro"\n'
    agent = cireil.load(exec_agent(tmp_path, mounts=mounts, name="remount"))
    try:
        script = (
            "for how in remount,rw remount,bind,rw; do /usr/bin/mount -o $how /workspace/data; echo rc=$?; done; "
            "echo changed > /workspace/data/f.txt"
        )
        data = sh(agent, script)
        assert data["stdout"].count("rc=0") == 0 and data["stdout"].count("rc=") == 2, data
        assert (source / "f.txt").read_text() == "keep"
    finally:
        agent.close()


OPEN_BY_HANDLE = textwrap.dedent("""\
    import ctypes, os, struct, sys
    libc = ctypes.CDLL(None, use_errno=True)
    handle = ctypes.create_string_buffer(8 + 128)
    struct.pack_into("I", handle, 0, 128)
    mount_id = ctypes.c_int()
    # /usr: a plain bind of a filesystem that gives handles (the agent's folders are overlays without them)
    if libc.name_to_handle_at(-100, b"/usr", handle, ctypes.byref(mount_id), 0) != 0:
        print("name_to_handle_at", os.strerror(ctypes.get_errno())); sys.exit(0)
    # a handle of a folder outside every bind made by hand from this one would need guessing; asking
    # for any handle at all is the privilege that matters
    fd = os.open("/usr", os.O_RDONLY)
    got = libc.open_by_handle_at(fd, handle, 0)
    print("open_by_handle_at", got, os.strerror(ctypes.get_errno()))
""")


def test_open_by_handle_at_is_refused(agent):
    (agent.directory / "workspace" / "probe.py").write_text(OPEN_BY_HANDLE)
    data = agent.call("exec", command="python3", args=["probe.py"]).data
    assert "open_by_handle_at -1 Operation not permitted" in data["stdout"], data


def test_the_network_works_but_cannot_be_configured(agent):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            accepted.append(conn.recv(100))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    script = (
        f'printf hello-from-sandbox | python3 -c \'import socket,sys; s=socket.create_connection(("127.0.0.1",{port}));'
        f" s.sendall(sys.stdin.buffer.read())'; echo sent=$?; "
        "/usr/sbin/ip link add cireil0 type dummy; echo add=$?; /usr/sbin/ip link set lo mtu 1280; echo set=$?"
    )
    data = sh(agent, script)
    thread.join(10)
    server.close()
    assert accepted == [b"hello-from-sandbox"] and "sent=0" in data["stdout"]
    if Path("/usr/sbin/ip").exists():
        assert "add=0" not in data["stdout"] and "set=0" not in data["stdout"], data
        assert "Operation not permitted" in data["stderr"]


def test_no_nested_user_namespace_to_regain_capabilities(agent):
    data = sh(agent, "/usr/bin/unshare --user --map-root-user true; echo rc=$?")
    assert "rc=0" not in data["stdout"], data


@pytest.mark.skipif(not ROOT, reason="the host's device nodes only belong to the sandbox when the kernel is root")
def test_device_nodes_are_private_copies_the_command_cannot_chmod(agent):
    before = {n: os.stat(f"/dev/{n}").st_mode for n in ("null", "zero", "full", "urandom")}
    try:
        data = sh(agent, "for n in null zero full urandom; do chmod 600 /dev/$n; echo rc=$?; done; echo ok > /dev/null")
        assert "rc=0" not in data["stdout"] and data["exitCode"] == 0, data
        assert {n: os.stat(f"/dev/{n}").st_mode for n in before} == before
    finally:  # should the sandbox ever regress, put the host's nodes back for everyone else
        for name, mode in before.items():
            os.chmod(f"/dev/{name}", mode & 0o7777)


def test_a_fork_bomb_is_bounded_and_leaves_nothing_behind(tmp_path):
    agent = cireil.load(exec_agent(tmp_path, exec_table="maxProcesses = 64\ntimeout = 20000\n"))
    marker = "876.125"
    try:
        script = (
            f"i=0; while [ $i -lt 2000 ]; do sleep {marker} & i=$((i+1)); done; echo started $i; "
            "ls /proc | grep -c '^[0-9]'"
        )
        data = sh(agent, script)
        # the shell stops at the first fork the limit refuses, long before 2000
        assert "started 2000" not in data["stdout"], data
        assert "fork" in data["stderr"].lower() or "resource" in data["stderr"].lower(), data
        # a larger bound than 64 for root: pid numbers wrap only after the 300 reserved ones
        assert len(processes_with(marker)) == 0
    finally:
        agent.close()


def test_the_process_limit_counts_only_the_sandbox(tmp_path):
    """Plenty of the kernel user's own processes elsewhere do not eat into the sandbox's allowance."""
    agent = cireil.load(exec_agent(tmp_path, exec_table="maxProcesses = 16\n"))
    others = [subprocess.Popen(["sleep", "30"]) for _ in range(20)]
    try:
        data = sh(agent, "for i in 1 2 3 4; do sleep 0.1 & done; wait; echo done")
        assert data["stdout"] == "done\n", data
    finally:
        for proc in others:
            proc.kill()
            proc.wait()
        agent.close()


def test_200_mb_of_output_is_capped_on_disk_with_a_note(tmp_path):
    agent = exec_agent(tmp_path)
    measure = textwrap.dedent("""\
        import json, sys
        import cireil
        agent = cireil.load(sys.argv[1])
        data = agent.call("exec", command="sh", args=["-c", "head -c 200000000 /dev/zero; echo; echo the-end"]).data
        print(json.dumps(data))
    """)
    done = subprocess.run(
        [sys.executable, "-c", measure, str(agent)], capture_output=True, text=True, timeout=120, check=True
    )
    import json

    data = json.loads(done.stdout.strip().splitlines()[-1])
    cap = 64 * 1024 * 1024
    assert data["stdoutLength"] == 200_000_000 + len("\nthe-end\n")
    assert data["outputCapped"] is True and "maxOutputBytes" in data["note"]
    assert (agent / data["stdoutPath"].removeprefix("/")).stat().st_size == cap
    assert data["stdoutPreview"].rstrip().endswith("the-end")  # the real end is still shown
    total = sum(p.stat().st_size for p in (agent / "workspace").rglob("*") if p.is_file())
    assert total < cap + 1024 * 1024


def test_the_output_cap_is_configurable(tmp_path):
    agent = cireil.load(exec_agent(tmp_path, exec_table="maxOutputBytes = 100000\ninlineThresholdBytes = 10\n"))
    try:
        data = sh(agent, "head -c 150000 /dev/zero; echo err >&2")
        assert data["outputCapped"] is True
        paths = [data[k] for k in ("stdoutPath", "stderrPath") if k in data]
        assert "stderrPath" not in data  # the cap was reached before stderr wrote: no empty file is named
        saved = sum((agent.directory / p.removeprefix("/")).stat().st_size for p in paths)
        assert saved <= 100000
        small = sh(agent, "head -c 5000 /dev/zero")
        assert "outputCapped" not in small
    finally:
        agent.close()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("maxProcesses = 2", "config/tools.toml:6: 'exec.maxProcesses' must be a whole number >= 8, not 2"),
        ('maxProcesses = "many"', "config/tools.toml:6: 'exec.maxProcesses' must be a whole number >= 8, not \"many\""),
        ("maxOutputBytes = 10", "config/tools.toml:6: 'exec.maxOutputBytes' must be a whole number >= 4096, not 10"),
        (
            "maxOutputByte = 10",
            "config/tools.toml:6: unknown key 'maxOutputByte' in [exec] (did you mean 'maxOutputBytes'?)",
        ),
    ],
)
def test_the_new_limits_are_validated_with_file_and_line(tmp_path, line, message):
    report = cireil.dry_run(exec_agent(tmp_path, exec_table=line + "\n"))
    assert message in [str(i) for i in report.errors]


@pytest.mark.skipif(
    not ROOT or os.environ.get("CIREIL_UNPRIVILEGED_RUN") == "1", reason="only a root run re-runs itself as nobody"
)
def test_the_sandbox_and_path_tests_also_hold_as_an_unprivileged_user():
    import unprivileged

    files = [
        "runtime/exec/test_exec_hardening.py",
        "runtime/files/test_path_races.py",
        "runtime/config/test_config_files.py",
        "runtime/exec/test_exec_sandbox.py",
        "runtime/exec/test_exec_bindfd.py",
        "runtime/exec/test_exec_mountinfo.py",
        # as root, backend "none" gets a pid namespace that ends every child; only here does the test see the
        # runner's own group kill and bounded drain at work
        "runtime/exec/test_exec_tool.py::test_a_background_child_holding_the_pipes_does_not_stall_the_call",
    ]
    done = unprivileged.run([f"tests/{f}" for f in files] + ["-q", "-x"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout


def test_backend_none_contains_detached_processes_as_root_or_says_it_cannot(tmp_path):
    agent = cireil.load(exec_agent(tmp_path, backend="none", binaries=["sh", "sleep", "setsid"]))
    marker = "876.375"
    try:
        data = sh(agent, f"setsid sleep {marker} > /dev/null 2>&1 < /dev/null & echo started")
        assert data["stdout"] == "started\n" and "WITHOUT a sandbox" in data["warning"]
        if ROOT:  # a pid namespace of its own: the detached sleep ended with the call
            deadline = time.monotonic() + 5
            while processes_with(marker) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert processes_with(marker) == []
            assert "detaches" not in data["warning"]
        else:  # nothing can hold it: every result says so
            assert "detaches (setsid, a double fork) is not stopped" in data["warning"]
    finally:
        for pid in processes_with(marker):
            os.kill(pid, 9)
        agent.close()
